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
	chartWidth = 1200
	labelWidth = 90  // step names, left of the bars
	barsWidth  = 470 // the bar area; labels go right of each bar
	rowHeight  = 34
	topMargin  = 64
	bottomPad  = 34
)

// WriteSVG writes t as a horizontal bar chart of median ns/op per step,
// on a linear axis from zero, each bar with an error bar over its 95%
// confidence interval and labelled with its step, its figures, its
// change from the previous step ("~" where benchstat finds none) and,
// where the case study published one, the published figure; a published
// time is also drawn, as an outlined bar under the measured one, on the
// same axis. caption goes under the title.
func (t Table) WriteSVG(w io.Writer, caption string) error {
	hi := 0.0
	for _, r := range t.Rows {
		hi = math.Max(hi, math.Max(r.NsOp.Center, r.NsOp.Hi))
		if p, ok := PublishedNs(r.Published); ok {
			hi = math.Max(hi, p)
		}
	}
	if hi == 0 {
		return fmt.Errorf("table %s has no ns/op to chart", t.Bench)
	}
	step := tickStep(hi)
	top := step * math.Ceil(hi/step)
	x := func(ns float64) float64 { return labelWidth + barsWidth*ns/top }
	height := topMargin + rowHeight*len(t.Rows) + bottomPad

	var b strings.Builder
	title := t.Bench + ": median ns/op per step, 95% interval (linear, from zero; shorter is faster)"
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" role="img" aria-label="%s">`+"\n",
		chartWidth, height, chartWidth, height, esc(title))
	fmt.Fprintf(&b, "<title>%s</title>\n", esc(title))
	b.WriteString(`<rect width="100%" height="100%" fill="#ffffff"/>` + "\n")
	b.WriteString(`<g font-family="Verdana,DejaVu Sans,sans-serif" font-size="12" fill="#222">` + "\n")
	fmt.Fprintf(&b, `<text x="10" y="22" font-size="15" font-weight="bold">%s</text>`+"\n", esc(title))
	fmt.Fprintf(&b, `<text x="10" y="40" font-size="11" fill="#555">%s</text>`+"\n", esc(caption))
	fmt.Fprintf(&b, `<text x="10" y="55" font-size="11" fill="#555">%s</text>`+"\n",
		esc("filled: measured here, whisker: its 95% interval · vs prev.: benchstat, ~ = no significant change · outlined: published"))

	axisY := topMargin + rowHeight*len(t.Rows)
	for v := 0.0; v <= top+step/2; v += step {
		gx := x(v)
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="#ddd"/>`+"\n", gx, topMargin-4, gx, axisY)
		fmt.Fprintf(&b, `<text x="%.1f" y="%d" text-anchor="middle" font-size="11" fill="#555">%s</text>`+"\n", gx, axisY+16, esc(Num(v)))
	}
	fmt.Fprintf(&b, `<text x="%d" y="%d" text-anchor="end" font-size="11" fill="#555">ns/op</text>`+"\n", labelWidth+barsWidth, axisY+30)

	for i, r := range t.Rows {
		y := topMargin + rowHeight*i
		fmt.Fprintf(&b, `<text x="%d" y="%d" text-anchor="end">%s</text>`+"\n", labelWidth-8, y+15, esc("step "+r.Step))
		fill := "#4c78a8"
		if i == len(t.Rows)-1 {
			fill = "#2e8b57" // the last step: the service's own code in the handler cases
		}
		label := fmt.Sprintf("%s ns %s · %s B · %s allocs", Num(r.NsOp.Center), Pct(r.NsOp), Num(r.BytesOp.Center), NumAllocs(r.Allocs()))
		if d := t.Delta(i); d != "" {
			label += " · vs prev.: " + d
		}
		fmt.Fprintf(&b, `<rect x="%d" y="%d" width="%.1f" height="14" fill="%s"><title>%s</title></rect>`+"\n",
			labelWidth, y+4, math.Max(x(r.NsOp.Center)-labelWidth, 1), fill,
			esc(fmt.Sprintf("step %s: %s ns/op %s", r.Step, Num(r.NsOp.Center), Pct(r.NsOp))))
		if r.NsOp.Hi > r.NsOp.Lo {
			lo, hi := x(r.NsOp.Lo), x(r.NsOp.Hi)
			fmt.Fprintf(&b, `<path d="M%.1f %dH%.1fM%.1f %dV%dM%.1f %dV%d" stroke="#222" fill="none"/>`+"\n",
				lo, y+11, hi, lo, y+6, y+16, hi, y+6, y+16)
		}
		fmt.Fprintf(&b, `<text x="%.1f" y="%d">%s</text>`+"\n", math.Max(x(r.NsOp.Center), x(r.NsOp.Hi))+6, y+15, esc(label))
		if r.Published == "" {
			continue
		}
		end := float64(labelWidth)
		if p, ok := PublishedNs(r.Published); ok {
			end = x(p)
			fmt.Fprintf(&b, `<rect x="%d" y="%d" width="%.1f" height="9" fill="none" stroke="#c0504d" stroke-dasharray="3,2"/>`+"\n",
				labelWidth, y+20, math.Max(end-labelWidth, 1))
		}
		fmt.Fprintf(&b, `<text x="%.1f" y="%d" font-size="11" fill="#c0504d">%s</text>`+"\n", end+6, y+29, esc("published: "+r.Published))
	}
	b.WriteString("</g>\n</svg>\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// tickStep returns a round grid step, 1, 2 or 5 times a power of ten,
// that divides 0..hi into four to ten parts.
func tickStep(hi float64) float64 {
	p := math.Pow(10, math.Floor(math.Log10(hi)))
	for _, m := range []float64{0.1, 0.2, 0.5, 1, 2, 5} {
		if hi/(m*p) <= 10 {
			return m * p
		}
	}
	return 10 * p
}

// esc escapes s for XML text and attribute values.
func esc(s string) string { return html.EscapeString(s) }
