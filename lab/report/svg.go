package report

import (
	"fmt"
	"html"
	"io"
	"math"
	"strings"
)

// Chart geometry, in pixels.
const (
	chartWidth = 820
	labelWidth = 150 // step names, left of the bars
	barsWidth  = 430 // the log-scaled bar area
	rowHeight  = 28
	topMargin  = 56
	bottomPad  = 34
)

// WriteSVG writes t as a horizontal bar chart of median ns/op per step on
// a log scale, each bar labelled with its figures, for a reader to look
// at. goVersion and date go in the caption.
func (t Table) WriteSVG(w io.Writer, caption string) error {
	lo, hi := math.Inf(1), 0.0
	for _, r := range t.Rows {
		if r.NsOp.Center > 0 {
			lo, hi = math.Min(lo, r.NsOp.Center), math.Max(hi, r.NsOp.Center)
		}
	}
	if hi == 0 {
		return fmt.Errorf("table %s has no ns/op to chart", t.Bench)
	}
	minExp, maxExp := math.Floor(math.Log10(lo)), math.Ceil(math.Log10(hi))
	if maxExp == minExp {
		maxExp++
	}
	x := func(ns float64) float64 { // log scale; bars start at 10^minExp
		return labelWidth + barsWidth*(math.Log10(ns)-minExp)/(maxExp-minExp)
	}
	height := topMargin + rowHeight*len(t.Rows) + bottomPad

	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" role="img" aria-label="%s">`+"\n",
		chartWidth, height, chartWidth, height, esc(t.Bench+": ns/op per step"))
	fmt.Fprintf(&b, "<title>%s</title>\n", esc(t.Bench+": median ns/op per step, log scale"))
	b.WriteString(`<rect width="100%" height="100%" fill="#ffffff"/>` + "\n")
	b.WriteString(`<g font-family="Verdana,DejaVu Sans,sans-serif" font-size="12" fill="#222">` + "\n")
	fmt.Fprintf(&b, `<text x="10" y="22" font-size="15" font-weight="bold">%s</text>`+"\n", esc(t.Bench+": median ns/op per step (log scale; shorter is faster)"))
	fmt.Fprintf(&b, `<text x="10" y="40" font-size="11" fill="#555">%s</text>`+"\n", esc(caption))

	// Grid lines and labels at each power of ten.
	axisY := topMargin + rowHeight*len(t.Rows)
	for e := minExp; e <= maxExp; e++ {
		gx := x(math.Pow(10, e))
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="#ddd"/>`+"\n", gx, topMargin-6, gx, axisY)
		fmt.Fprintf(&b, `<text x="%.1f" y="%d" text-anchor="middle" font-size="11" fill="#555">%s</text>`+"\n", gx, axisY+16, esc(num(math.Pow(10, e))+" ns"))
	}

	for i, r := range t.Rows {
		y := topMargin + rowHeight*i
		fmt.Fprintf(&b, `<text x="%d" y="%d" text-anchor="end">%s</text>`+"\n", labelWidth-8, y+rowHeight/2+4, esc("step "+r.Step))
		if r.NsOp.Center <= 0 {
			continue
		}
		bx := x(r.NsOp.Center)
		fill := "#4c78a8"
		if i == len(t.Rows)-1 {
			fill = "#2e8b57" // the last step: the service's own code in the handler cases
		}
		fmt.Fprintf(&b, `<rect x="%d" y="%d" width="%.1f" height="%d" fill="%s"><title>%s</title></rect>`+"\n",
			labelWidth, y+4, math.Max(bx-labelWidth, 1), rowHeight-8, fill,
			esc(fmt.Sprintf("step %s: %s ns/op %s", r.Step, num(r.NsOp.Center), pct(r.NsOp))))
		fmt.Fprintf(&b, `<text x="%.1f" y="%d">%s</text>`+"\n", bx+6, y+rowHeight/2+4,
			esc(fmt.Sprintf("%s ns · %s allocs · %.1f×", num(r.NsOp.Center), num(r.AllocsOp.Center), t.SpeedUp(r))))
	}
	b.WriteString("</g>\n</svg>\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// esc escapes s for XML text and attribute values.
func esc(s string) string { return html.EscapeString(s) }
