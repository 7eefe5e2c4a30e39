package loadtest

import (
	"fmt"
	"html"
	"io"
	"strings"
	"time"

	"visitors/lab/report"
)

// WriteTable writes the results as a Markdown table, with the ratios of
// visitors to the classic and the bare servers when they were measured.
func WriteTable(w io.Writer, c Config, results []Result) error {
	var b strings.Builder
	clients := ""
	if c.Clients {
		clients = " (each request from a distinct client, in X-Forwarded-For)"
	}
	fmt.Fprintf(&b, "%d rounds of %v per server, %d connections, GET %s%s (visitors-hi: /hi); servers on CPU %s, load on CPU %s\n\n",
		c.Rounds, c.Duration, c.Conns, c.Path, clients, c.ServerCPU, c.LoadCPU)
	b.WriteString("| server | req/s median | min | max | CPU µs/req | wrk p50 | wrk p99 | constant rate | p50 | p99 | p99.9 | errors |\n")
	b.WriteString("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n")
	med := map[string]float64{}
	cpu := map[string]time.Duration{}
	for _, r := range results {
		m, lo, hi := r.Median()
		med[r.Server] = m
		cpu[r.Server] = r.MedianCPU()
		p50, p99 := medianLatency(r.Runs)
		fmt.Fprintf(&b, "| %s | %.0f | %.0f | %.0f | %.2f | %s | %s |", r.Server, m, lo, hi, us(cpu[r.Server]), ms(p50), ms(p99))
		if r.Rate != nil {
			fmt.Fprintf(&b, " %.0f/s | %s | %s | %s | %d |\n", r.Rate.Rate, ms(r.Rate.P50), ms(r.Rate.P99), ms(r.Rate.P999), r.Rate.Errors)
		} else {
			b.WriteString(" | | | | |\n")
		}
	}
	b.WriteString("\n")
	for _, pair := range [][2]string{{"visitors", "classic"}, {"visitors", "bare"}, {"visitors", "visitors-nopgo"}, {"visitors-memory", "visitors"}, {"visitors-sync", "visitors-memory"}, {"visitors-sync-noaio", "visitors-memory"}, {"visitors-sync", "visitors-sync-noaio"}, {"visitors", "visitors-memory"}, {"visitors", "visitors-noobs"}, {"visitors", "visitors-nofr"}, {"visitors-fr", "visitors"}, {"visitors-nofr", "visitors-noobs"}, {"visitors", "visitors-rules0"}, {"visitors", "visitors-hi"}, {"bare-badge", "bare"}, {"visitors", "bare-badge"}, {"visitors", "bare-json"}, {"visitors", "visitors-baseline"}, {"visitors-baseline", "classic"}, {"visitors-baseline", "bare"}, {"visitors-baseline", "bare-badge"}, {"visitors-baseline", "bare-json"}} {
		if med[pair[0]] > 0 && med[pair[1]] > 0 {
			fmt.Fprintf(&b, "- %s / %s = %.2f", pair[0], pair[1], med[pair[0]]/med[pair[1]])
			// The same ratio from CPU per request: the requests/s each
			// would serve with a core of its own.
			if cpu[pair[0]] > 0 && cpu[pair[1]] > 0 {
				fmt.Fprintf(&b, " (from CPU per request: %.2f)", float64(cpu[pair[1]])/float64(cpu[pair[0]]))
			}
			b.WriteString("\n")
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func medianLatency(runs []WrkResult) (p50, p99 time.Duration) {
	if len(runs) == 0 {
		return 0, 0
	}
	a, b := make([]time.Duration, len(runs)), make([]time.Duration, len(runs))
	for i, r := range runs {
		a[i], b[i] = r.P50, r.P99
	}
	return medianDur(a), medianDur(b)
}

// medianDur returns the median of v (report.Median's).
func medianDur(v []time.Duration) time.Duration {
	f := make([]float64, len(v))
	for i, d := range v {
		f[i] = float64(d)
	}
	return time.Duration(report.Median(f))
}

func ms(d time.Duration) string { return fmt.Sprintf("%.2f ms", float64(d)/float64(time.Millisecond)) }

// us returns d in microseconds.
func us(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }

// WriteSVG writes a bar chart of median req/s per server, with the
// min–max range as a whisker.
func WriteSVG(w io.Writer, c Config, results []Result) error {
	const width, left, barArea, rowH, top = 760, 150, 440, 34, 60
	hi := 0.0
	for _, r := range results {
		_, _, h := r.Median()
		hi = max(hi, h)
	}
	if hi == 0 {
		return fmt.Errorf("no results to chart")
	}
	scale := barArea / (hi * 1.05)
	height := top + rowH*len(results) + 30
	var b strings.Builder
	title := fmt.Sprintf("requests/s per server, GET %s (median of %d; whisker: min–max)", c.Path, c.Rounds)
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" role="img" aria-label="%s">`+"\n", width, height, width, height, html.EscapeString(title))
	fmt.Fprintf(&b, "<title>%s</title>\n", html.EscapeString(title))
	b.WriteString(`<rect width="100%" height="100%" fill="#fff"/>` + "\n")
	b.WriteString(`<g font-family="Verdana,DejaVu Sans,sans-serif" font-size="12" fill="#222">` + "\n")
	fmt.Fprintf(&b, `<text x="10" y="22" font-size="15" font-weight="bold">%s</text>`+"\n", html.EscapeString(title))
	fmt.Fprintf(&b, `<text x="10" y="40" font-size="11" fill="#555">%s</text>`+"\n",
		html.EscapeString(fmt.Sprintf("wrk -t1 -c%d, %v runs; server on CPU %s, wrk on CPU %s; go run ./cmd/loadtest", c.Conns, c.Duration, c.ServerCPU, c.LoadCPU)))
	for i, r := range results {
		m, lo, h := r.Median()
		y := top + rowH*i
		fill := "#4c78a8"
		if strings.HasPrefix(r.Server, "visitors") {
			fill = "#2e8b57"
		}
		fmt.Fprintf(&b, `<text x="%d" y="%d" text-anchor="end">%s</text>`+"\n", left-8, y+rowH/2+4, html.EscapeString(r.Server))
		fmt.Fprintf(&b, `<rect x="%d" y="%d" width="%.1f" height="%d" fill="%s"/>`+"\n", left, y+6, m*scale, rowH-12, fill)
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="#222"/>`+"\n", left+lo*scale, y+rowH/2, left+h*scale, y+rowH/2)
		fmt.Fprintf(&b, `<text x="%.1f" y="%d">%s</text>`+"\n", left+h*scale+6, y+rowH/2+4, html.EscapeString(fmt.Sprintf("%.0f req/s", m)))
	}
	b.WriteString("</g>\n</svg>\n")
	_, err := io.WriteString(w, b.String())
	return err
}
