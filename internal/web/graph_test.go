package web

import (
	"bytes"
	"encoding/xml"
	"regexp"
	"strings"
	"testing"

	"visitors/internal/store"
)

// TestGraphFollowsDarkTheme: graph.svg carries a style sheet whose
// prefers-color-scheme dark rules recolor its background, its text and
// its grid lines, each rule naming a class some element of the chart
// carries, and the chart stays well-formed XML. It catches a chart that
// stays white on a dark page (no media query), and a rule for a class no
// element carries (the dark theme changes nothing).
func TestGraphFollowsDarkTheme(t *testing.T) {
	s, _, _ := mustClockServer(t)
	mustVisit(t, s, "/counter/g.json", 3)
	tests := []struct {
		name, path string
	}{
		{"with visits", "/counter/g/graph.svg?days=7"},
		{"empty", "/counter/none/graph.svg?days=3"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := get(t, s, "GET", tt.path)
			if w.Code != 200 {
				t.Fatalf("%s = %d %q", tt.path, w.Code, w.Body)
			}
			var doc struct {
				Style string `xml:"style"`
			}
			if err := xml.Unmarshal(w.Body.Bytes(), &doc); err != nil {
				t.Fatalf("%s is not well-formed: %v\n%s", tt.path, err, w.Body)
			}
			_, dark, ok := strings.Cut(doc.Style, "@media (prefers-color-scheme: dark)")
			if !ok {
				t.Fatalf("%s: style %q has no @media (prefers-color-scheme: dark)", tt.path, doc.Style)
			}
			classes := map[string]bool{}
			for _, m := range regexp.MustCompile(`class="([^"]*)"`).FindAllStringSubmatch(w.Body.String(), -1) {
				for _, c := range strings.Fields(m[1]) {
					classes[c] = true
				}
			}
			rules := regexp.MustCompile(`\.([a-z-]+)\s*\{([^}]*)\}`).FindAllStringSubmatch(dark, -1)
			props := map[string]bool{}
			for _, r := range rules {
				for _, decl := range strings.Split(r[2], ";") {
					if p, _, ok := strings.Cut(decl, ":"); ok {
						props[r[1]+"."+strings.TrimSpace(p)] = true
					}
				}
			}
			for _, want := range []string{"bg.fill", "text.fill", "axis.stroke"} {
				if !props[want] {
					t.Errorf("%s: dark rules %q do not set %s (background, text, grid)", tt.path, dark, want)
				}
				if c, _, _ := strings.Cut(want, "."); !classes[c] {
					t.Errorf("%s: no element carries class %q: its dark rule changes nothing", tt.path, c)
				}
			}
		})
	}
}

// TestGraphWithUniqueVisitors: with unique visitors, Graph draws them
// as a line over the bars, with a legend and named axes; without, the
// public graph has none of these.
func TestGraphWithUniqueVisitors(t *testing.T) {
	d := store.Daily{Last: store.Day(20000).Time(), Counts: []uint64{4, 0, 9}}
	var with, without bytes.Buffer
	Graph(&with, "k", d, []uint64{2, 0, 5})
	Graph(&without, "k", d, nil)
	for _, want := range []string{`<polyline fill="none" stroke="#0969da"`, ">unique visitors</text>", ">UTC day</text>", ">visits</text>"} {
		if !strings.Contains(with.String(), want) {
			t.Errorf("Graph with unique lacks %q", want)
		}
		if strings.Contains(without.String(), want) {
			t.Errorf("Graph without unique holds %q", want)
		}
	}
	// The line's points: x at each slot's middle, y from the shared peak (9).
	if !strings.Contains(with.String(), `points="114.7,110.9 256.0,134.0 397.3,76.2"`) {
		t.Errorf("unexpected unique line: %s", with.String())
	}
}
