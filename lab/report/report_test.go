package report

import (
	"bytes"
	"encoding/xml"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"visitors/internal/golden"
)

func mustParse(t *testing.T) []Table {
	t.Helper()
	f, err := os.Open("testdata/bench.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	tables, err := Parse(f, "bench.txt")
	if err != nil {
		t.Fatal(err)
	}
	return tables
}

func TestParse(t *testing.T) {
	tables := mustParse(t)
	var got []string
	for _, tb := range tables {
		var steps []string
		for _, r := range tb.Rows {
			steps = append(steps, r.Step)
		}
		got = append(got, tb.Bench+": "+strings.Join(steps, ","))
	}
	want := []string{
		"Greeting: 0,1,2,3,4,5",
		"GreetingParallel: 4/counter=mutex,4/counter=atomic,5",
		"Digest: 0,1,2,3,4,5,6",
		"DigestParallel: 0,5,6",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("Parse tables =\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	g := tables[0]
	if r := g.Rows[0]; r.N != 2 || r.NsOp.Center != 7600 || r.Published != "12,843 ns" {
		t.Errorf("Greeting step 0 = %d runs, median %v ns, published %q; want 2, 7600, 12,843 ns", r.N, r.NsOp.Center, r.Published)
	}
	if d := g.Delta(0); d != "" {
		t.Errorf("Delta(step 0) = %q, want none", d)
	}
	if d := g.Delta(1); !strings.Contains(d, "n=2") {
		t.Errorf("Delta(step 1) = %q, want a comparison of 2 runs each", d)
	}
}

// TestGolden compares the text, Markdown and SVG forms with testdata.
// Run with -update to rewrite them after a deliberate change.
func TestGolden(t *testing.T) {
	for _, tb := range mustParse(t) {
		var text, md, svg bytes.Buffer
		if err := tb.WriteText(&text); err != nil {
			t.Fatal(err)
		}
		if err := tb.WriteMarkdown(&md); err != nil {
			t.Fatal(err)
		}
		if err := tb.WriteSVG(&svg, "go1.26 · test"); err != nil {
			t.Fatal(err)
		}
		if err := xml.Unmarshal(svg.Bytes(), new(struct{})); err != nil {
			t.Errorf("%s.svg is not well-formed XML: %v", tb.Bench, err)
		}
		for ext, got := range map[string][]byte{".txt": text.Bytes(), ".md": md.Bytes(), ".svg": svg.Bytes()} {
			golden.Check(t, filepath.Join("testdata", tb.Bench+ext), got)
		}
	}
}

func TestMedian(t *testing.T) {
	for _, tt := range []struct {
		v    []float64
		want float64
	}{{nil, 0}, {[]float64{3}, 3}, {[]float64{4, 1, 3}, 3}, {[]float64{4, 1, 3, 2}, 2.5}, {[]float64{1, 1, 10, 10}, 5.5}} {
		if got := Median(tt.v); got != tt.want {
			t.Errorf("Median(%v) = %v, want %v", tt.v, got, tt.want)
		}
	}
}
