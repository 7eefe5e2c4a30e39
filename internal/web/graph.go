package web

import (
	"bytes"
	"fmt"
	"html"
	"net/http"

	"visitors/internal/store"
)

// Graph geometry: readable at README size.
const (
	graphW, graphH       = 480, 160
	graphLeft, graphTop  = 44, 30
	graphRight, graphBot = 12, 26
)

// graphStyle switches the chart to dark colors when the reader's browser
// prefers a dark theme. The attributes hold the light colors, so that a
// renderer without CSS still draws the chart; the rules, when they apply,
// win over them. The bars keep their green.
const graphStyle = `<style>@media (prefers-color-scheme: dark){` +
	`.bg{fill:#0d1117;stroke:#30363d}.text{fill:#e6edf3}.muted{fill:#8b949e}` +
	`.axis{stroke:#30363d}.grid{stroke:#21262d}}</style>`

// writeGraph writes d as an SVG bar chart of visits per UTC day.
func (s *Server) writeGraph(w http.ResponseWriter, r *http.Request, key string, d store.Daily) int {
	var peak, total uint64
	for _, n := range d.Counts {
		peak = max(peak, n)
		total += n
	}
	plotW := float64(graphW - graphLeft - graphRight)
	plotH := float64(graphH - graphTop - graphBot)
	slot := plotW / float64(len(d.Counts))
	first := d.Last.AddDate(0, 0, -(len(d.Counts) - 1))
	title := fmt.Sprintf("%s: %d visits in the last %d days (UTC)", key, total, len(d.Counts))

	var b bytes.Buffer
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" role="img" aria-label="%s">`,
		graphW, graphH, graphW, graphH, html.EscapeString(title))
	fmt.Fprintf(&b, `<title>%s</title>`, html.EscapeString(title))
	b.WriteString(graphStyle)
	b.WriteString(`<rect class="bg" width="100%" height="100%" rx="4" fill="#fff" stroke="#d0d7de"/>`)
	b.WriteString(`<g class="text" font-family="Verdana,Geneva,DejaVu Sans,sans-serif" font-size="11" fill="#24292f">`)
	fmt.Fprintf(&b, `<text x="%d" y="19" font-weight="bold">%s</text>`, graphLeft, html.EscapeString(title))
	// Axis: zero and the peak.
	base := float64(graphTop) + plotH
	fmt.Fprintf(&b, `<line class="axis" x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#d0d7de"/>`, graphLeft, base, graphW-graphRight, base)
	fmt.Fprintf(&b, `<text x="%d" y="%.1f" text-anchor="end" class="muted" fill="#57606a">0</text>`, graphLeft-6, base+4)
	if peak > 0 {
		fmt.Fprintf(&b, `<line class="grid" x1="%d" y1="%d" x2="%d" y2="%d" stroke="#eaeef2"/>`, graphLeft, graphTop, graphW-graphRight, graphTop)
		fmt.Fprintf(&b, `<text x="%d" y="%d" text-anchor="end" class="muted" fill="#57606a">%d</text>`, graphLeft-6, graphTop+4, peak)
	}
	for i, n := range d.Counts {
		if n == 0 || peak == 0 {
			continue
		}
		h := plotH * float64(n) / float64(peak)
		day := first.AddDate(0, 0, i).Format("2006-01-02")
		fmt.Fprintf(&b, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="#2da44e"><title>%s: %d</title></rect>`,
			float64(graphLeft)+float64(i)*slot+slot*0.15, base-h, slot*0.7, h, day, n)
	}
	fmt.Fprintf(&b, `<text x="%d" y="%d" class="muted" fill="#57606a">%s</text>`, graphLeft, graphH-8, first.Format("Jan 2"))
	fmt.Fprintf(&b, `<text x="%d" y="%d" text-anchor="end" class="muted" fill="#57606a">%s</text>`, graphW-graphRight, graphH-8, d.Last.Format("Jan 2"))
	b.WriteString("</g></svg>\n")

	setImageHeaders(w.Header())
	if etagMatches(w, r, b.Bytes()) {
		return http.StatusNotModified
	}
	w.Write(b.Bytes())
	return http.StatusOK
}
