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
	var b bytes.Buffer
	Graph(&b, key, d, nil)
	setImageHeaders(w.Header())
	if etagMatches(w, r, b.Bytes()) {
		return http.StatusNotModified
	}
	w.Write(b.Bytes())
	return http.StatusOK
}

// Graph writes d, key's visits per UTC day, as the SVG bar chart of
// /counter/{key}/graph.svg to b. With unique (the unique visitors of
// the same days, as long as d.Counts) it draws them as a second series,
// a line, with a legend and the axes named: the owner's dashboard's
// graph.
func Graph(b *bytes.Buffer, key string, d store.Daily, unique []uint64) {
	if len(unique) != len(d.Counts) {
		unique = nil
	}
	var peak, total uint64
	for _, n := range d.Counts {
		peak = max(peak, n)
		total += n
	}
	for _, n := range unique {
		peak = max(peak, n)
	}
	plotW := float64(graphW - graphLeft - graphRight)
	plotH := float64(graphH - graphTop - graphBot)
	slot := plotW / float64(len(d.Counts))
	first := d.Last.AddDate(0, 0, -(len(d.Counts) - 1))
	title := fmt.Sprintf("%s: %d visits in the last %d days (UTC)", key, total, len(d.Counts))

	fmt.Fprintf(b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" role="img" aria-label="%s">`,
		graphW, graphH, graphW, graphH, html.EscapeString(title))
	fmt.Fprintf(b, `<title>%s</title>`, html.EscapeString(title))
	b.WriteString(graphStyle)
	b.WriteString(`<rect class="bg" width="100%" height="100%" rx="4" fill="#fff" stroke="#d0d7de"/>`)
	b.WriteString(`<g class="text" font-family="Verdana,Geneva,DejaVu Sans,sans-serif" font-size="11" fill="#24292f">`)
	if unique == nil { // with unique, the legend takes the title's place: the page names the key
		fmt.Fprintf(b, `<text x="%d" y="19" font-weight="bold">%s</text>`, graphLeft, html.EscapeString(title))
	}
	// Axis: zero and the peak.
	base := float64(graphTop) + plotH
	fmt.Fprintf(b, `<line class="axis" x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#d0d7de"/>`, graphLeft, base, graphW-graphRight, base)
	fmt.Fprintf(b, `<text x="%d" y="%.1f" text-anchor="end" class="muted" fill="#57606a">0</text>`, graphLeft-6, base+4)
	if peak > 0 {
		fmt.Fprintf(b, `<line class="grid" x1="%d" y1="%d" x2="%d" y2="%d" stroke="#eaeef2"/>`, graphLeft, graphTop, graphW-graphRight, graphTop)
		fmt.Fprintf(b, `<text x="%d" y="%d" text-anchor="end" class="muted" fill="#57606a">%d</text>`, graphLeft-6, graphTop+4, peak)
	}
	for i, n := range d.Counts {
		if n == 0 || peak == 0 {
			continue
		}
		h := plotH * float64(n) / float64(peak)
		day := first.AddDate(0, 0, i).Format("2006-01-02")
		fmt.Fprintf(b, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="#2da44e"><title>%s: %d</title></rect>`,
			float64(graphLeft)+float64(i)*slot+slot*0.15, base-h, slot*0.7, h, day, n)
	}
	fmt.Fprintf(b, `<text x="%d" y="%d" class="muted" fill="#57606a">%s</text>`, graphLeft, graphH-8, first.Format("Jan 2"))
	fmt.Fprintf(b, `<text x="%d" y="%d" text-anchor="end" class="muted" fill="#57606a">%s</text>`, graphW-graphRight, graphH-8, d.Last.Format("Jan 2"))
	if unique != nil {
		graphUnique(b, unique, peak, base, plotH, slot)
	}
	b.WriteString("</g></svg>\n")
}

// graphUnique draws the unique visitors as a line over the bars, a
// legend, and the names of the axes.
func graphUnique(b *bytes.Buffer, unique []uint64, peak uint64, base, plotH, slot float64) {
	if peak > 0 {
		b.WriteString(`<polyline fill="none" stroke="#0969da" stroke-width="1.5" points="`)
		for i, n := range unique {
			if i > 0 {
				b.WriteByte(' ')
			}
			fmt.Fprintf(b, "%.1f,%.1f", float64(graphLeft)+float64(i)*slot+slot/2, base-plotH*float64(n)/float64(peak))
		}
		b.WriteString(`"/>`)
	}
	fmt.Fprintf(b, `<text x="10" y="%.1f" transform="rotate(-90 10 %.1f)" text-anchor="middle" class="muted" fill="#57606a">visits</text>`, base-plotH/2, base-plotH/2)
	fmt.Fprintf(b, `<text x="%d" y="%d" text-anchor="middle" class="muted" fill="#57606a">UTC day</text>`, graphLeft+(graphW-graphLeft-graphRight)/2, graphH-8)
	fmt.Fprintf(b, `<rect x="%d" y="10" width="10" height="10" fill="#2da44e"/><text x="%d" y="19">visits</text>`, graphLeft, graphLeft+14)
	fmt.Fprintf(b, `<line x1="%d" y1="15" x2="%d" y2="15" stroke="#0969da" stroke-width="2"/><text x="%d" y="19">unique visitors</text>`, graphLeft+60, graphLeft+72, graphLeft+76)

}
