// Package report turns the lab's benchmark output into tables and bar
// charts: one table per benchmark, one row per step, with the median and
// confidence interval that golang.org/x/perf's benchmath computes, each
// step compared with the one before it as benchstat compares two files
// (a Mann-Whitney U test; a difference whose p-value is above 0.05 is
// shown as "~", not as a change), and the figure the case study
// published beside each.
package report

import (
	"bytes"
	"fmt"
	"io"
	"strings"

	"golang.org/x/perf/benchfmt"
	"golang.org/x/perf/benchmath"
)

// Confidence is the confidence level of the intervals, as benchstat's.
const Confidence = 0.95

// Table is the summary of one benchmark, such as Greeting or
// GreetingParallel, over all of its steps.
type Table struct {
	Bench string // the benchmark's name without "Benchmark"
	Rows  []Row
}

// Row is one step of a [Table].
type Row struct {
	Step     string // the sub-benchmark name without "step=", e.g. "4/counter=mutex"
	N        int    // runs summarised
	NsOp     benchmath.Summary
	BytesOp  benchmath.Summary
	AllocsOp benchmath.Summary // go test's allocs/op, rounded down
	// ExactAllocs is the unrounded count (exact-allocs/op, total
	// allocations / N, from lab/allocs); HasExact is false if the run
	// reported none.
	ExactAllocs benchmath.Summary
	HasExact    bool
	Published   string // the case study's figure, or ""
	// VsPrev compares this step's ns/op with the previous row's, as
	// benchstat does; HasPrev is false for the first row.
	VsPrev  benchmath.Comparison
	HasPrev bool

	ns *benchmath.Sample
}

// Parse reads go test -bench output from r and returns one table per
// benchmark, in the order they first appear. name labels r in errors.
func Parse(r io.Reader, name string) ([]Table, error) {
	type key struct{ bench, step string }
	samples := map[key]map[string][]float64{} // unit -> values
	var tables []Table
	seen := map[string]int{} // bench -> index in tables
	rd := benchfmt.NewReader(r, name)
	for rd.Scan() {
		res, ok := rd.Result().(*benchfmt.Result)
		if !ok {
			if err, isErr := rd.Result().(*benchfmt.SyntaxError); isErr {
				return nil, err
			}
			continue
		}
		bench, step := splitName(res.Name)
		i, ok := seen[bench]
		if !ok {
			i = len(tables)
			seen[bench] = i
			tables = append(tables, Table{Bench: bench})
		}
		k := key{bench, step}
		if samples[k] == nil {
			samples[k] = map[string][]float64{}
			tables[i].Rows = append(tables[i].Rows, Row{Step: step})
		}
		for _, v := range res.Values {
			samples[k][v.Unit] = append(samples[k][v.Unit], v.Value)
		}
	}
	if err := rd.Err(); err != nil {
		return nil, fmt.Errorf("read %s: %w", name, err)
	}
	for ti := range tables {
		t := &tables[ti]
		for ri := range t.Rows {
			row := &t.Rows[ri]
			s := samples[key{t.Bench, row.Step}]
			row.N = len(s["sec/op"])
			row.NsOp = summarize(s["sec/op"], 1e9)
			row.BytesOp = summarize(s["B/op"], 1)
			row.AllocsOp = summarize(s["allocs/op"], 1)
			if v := s["exact-allocs/op"]; len(v) > 0 {
				row.ExactAllocs, row.HasExact = summarize(v, 1), true
			}
			row.ns = sample(s["sec/op"], 1e9)
			if ri > 0 && row.ns != nil && t.Rows[ri-1].ns != nil {
				row.VsPrev = benchmath.AssumeNothing.Compare(t.Rows[ri-1].ns, row.ns)
				row.HasPrev = true
			}
			row.Published = Published[strings.TrimSuffix(t.Bench, "AsPublished")][row.Step]
		}
	}
	return tables, nil
}

// splitName splits "Greeting/step=4/counter=mutex-2" into "Greeting" and
// "4/counter=mutex".
func splitName(n benchfmt.Name) (bench, step string) {
	base, parts := n.Parts()
	var b strings.Builder
	for _, p := range parts {
		if bytes.HasPrefix(p, []byte("-")) {
			continue // GOMAXPROCS
		}
		b.Write(p)
	}
	step = strings.TrimPrefix(b.String(), "/")
	return string(base), strings.TrimPrefix(step, "step=")
}

// summarize returns the median and its confidence interval of values,
// scaled, assuming nothing about their distribution, as benchstat does.
func summarize(values []float64, scale float64) benchmath.Summary {
	s := sample(values, scale)
	if s == nil {
		return benchmath.Summary{}
	}
	return benchmath.AssumeNothing.Summary(s, Confidence)
}

func sample(values []float64, scale float64) *benchmath.Sample {
	if len(values) == 0 {
		return nil
	}
	scaled := make([]float64, len(values))
	for i, v := range values {
		scaled[i] = v * scale
	}
	return benchmath.NewSample(scaled, &benchmath.DefaultThresholds)
}

// Allocs returns the row's allocations per operation: the exact count
// if the run reported one, else go test's rounded one.
func (r Row) Allocs() float64 {
	if r.HasExact {
		return r.ExactAllocs.Center
	}
	return r.AllocsOp.Center
}

// Delta returns the change of row i's median ns/op from the previous
// row's, as benchstat prints it: "-35.21% (p=0.000 n=10)", or "~ (p=0.436
// n=10)" when the difference is not significant at α = 0.05; "" for the
// first row. It means something only if the two rows were measured
// interleaved, as cmd/lab measures them.
func (t Table) Delta(i int) string {
	r := t.Rows[i]
	if !r.HasPrev {
		return ""
	}
	return r.VsPrev.FormatDelta(t.Rows[i-1].NsOp.Center, r.NsOp.Center) + " (" + r.VsPrev.String() + ")"
}

// Significant reports whether row i's time differs from row i-1's at
// α = 0.05.
func (t Table) Significant(i int) bool {
	r := t.Rows[i]
	return r.HasPrev && r.VsPrev.P <= r.VsPrev.Alpha
}

// Pct returns the half-width of s's confidence interval in percent of its
// center, as benchstat's ± column.
func Pct(s benchmath.Summary) string {
	if s.Center == 0 {
		return "±0%"
	}
	return s.PctRangeString()
}

// WriteText writes t as an aligned plain-text table.
func (t Table) WriteText(w io.Writer) error {
	rows := [][]string{{"step", "ns/op", "±", "vs previous step", "B/op", "allocs/op", "published"}}
	for i, r := range t.Rows {
		rows = append(rows, []string{
			r.Step, Num(r.NsOp.Center), Pct(r.NsOp), t.Delta(i), Num(r.BytesOp.Center), NumAllocs(r.Allocs()),
			r.Published,
		})
	}
	widths := make([]int, len(rows[0]))
	for _, r := range rows {
		for i, c := range r {
			widths[i] = max(widths[i], len([]rune(c)))
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s\n", t.Bench)
	for _, r := range rows {
		for i, c := range r {
			pad := widths[i] - len([]rune(c))
			if i == 0 || i == len(r)-1 {
				b.WriteString(c + strings.Repeat(" ", pad))
			} else {
				b.WriteString(strings.Repeat(" ", pad) + c)
			}
			if i < len(r)-1 {
				b.WriteString("  ")
			}
		}
		b.WriteString("\n")
	}
	var out strings.Builder
	for _, line := range strings.SplitAfter(b.String(), "\n") {
		out.WriteString(strings.TrimRight(line, " \n"))
		if strings.HasSuffix(line, "\n") {
			out.WriteString("\n")
		}
	}
	_, err := io.WriteString(w, out.String())
	return err
}

// WriteMarkdown writes t as a Markdown table.
func (t Table) WriteMarkdown(w io.Writer) error {
	var b strings.Builder
	b.WriteString("| step | ns/op | ± | vs previous step (benchstat) | B/op | allocs/op | published |\n")
	b.WriteString("| --- | ---: | ---: | --- | ---: | ---: | --- |\n")
	for i, r := range t.Rows {
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s | %s |\n",
			r.Step, Num(r.NsOp.Center), Pct(r.NsOp), t.Delta(i), Num(r.BytesOp.Center), NumAllocs(r.Allocs()), r.Published)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// Num formats v with thousands separators and at most one decimal
// below 100.
func Num(v float64) string {
	if v < 100 && v != float64(int64(v)) {
		return fmt.Sprintf("%.1f", v)
	}
	s := fmt.Sprintf("%.0f", v)
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	return b.String()
}

// NumAllocs formats an allocation count: an integer as is, an average
// with two decimals (4.88, not 4).
func NumAllocs(v float64) string {
	if v == float64(int64(v)) {
		return Num(v)
	}
	return fmt.Sprintf("%.2f", v)
}
