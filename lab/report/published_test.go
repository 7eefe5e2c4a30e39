package report

import (
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"

	"visitors/lab/digest"
	"visitors/lab/greeting"
	"visitors/lab/hello"
	"visitors/lab/whoami"
)

// stepCounts is how many steps each serial benchmark has.
var stepCounts = map[string]int{
	"Greeting": len(greeting.Steps),
	"Digest":   len(digest.Steps) + 2, // AppendDigestDirect and AppendDigest
	"Hello":    len(hello.Steps),
	"Whoami":   len(whoami.Steps),
}

// TestPublishedAttached checks that every published figure is attached
// to a step that exists, and that the case's page, docs/lab/<case>.md,
// quotes it.
func TestPublishedAttached(t *testing.T) {
	for bench, steps := range Published {
		n, ok := stepCounts[bench]
		if !ok {
			t.Errorf("Published[%q]: no such case", bench)
			continue
		}
		for step, figures := range steps {
			i, err := strconv.Atoi(step)
			if err != nil || i < 0 || i >= n {
				t.Errorf("Published[%q][%q]: %s has steps 0 to %d", bench, step, bench, n-1)
			}
			page := "docs/lab/" + strings.ToLower(bench) + ".md"
			doc, err := os.ReadFile("../../" + page)
			if err != nil {
				t.Fatal(err)
			}
			section := stepSection(string(doc), strings.ToLower(bench), step)
			if section == "" {
				t.Errorf("%s has no section for %s step %s", page, bench, step)
				continue
			}
			for _, f := range Figures(figures) {
				if !strings.Contains(section, "| published | "+f+" |") {
					t.Errorf("%s's section of %s step %s does not quote its published %q", page, bench, step, f)
				}
			}
		}
	}
}

func TestFigures(t *testing.T) {
	tests := []struct {
		in     string
		want   []string
		wantNs float64
		hasNs  bool
	}{
		{"", nil, 0, false},
		{"12,843 ns", []string{"12,843 ns"}, 12843, true},
		{"1,451 ns; 1,180 ns, 720 B, 9 allocs", []string{"1,451 ns", "1,180 ns, 720 B, 9 allocs"}, 1451, true},
		{"100,158 allocs", []string{"100,158 allocs"}, 0, false},
	}
	for _, tt := range tests {
		if got := Figures(tt.in); !slices.Equal(got, tt.want) {
			t.Errorf("Figures(%q) = %q, want %q", tt.in, got, tt.want)
		}
		if got, ok := PublishedNs(tt.in); got != tt.wantNs || ok != tt.hasNs {
			t.Errorf("PublishedNs(%q) = %v, %v; want %v, %v", tt.in, got, ok, tt.wantNs, tt.hasNs)
		}
	}
}

// stepSection returns the part of doc from the heading "### CASE step
// N:" to the next heading of that level, or "".
func stepSection(doc, name, step string) string {
	head := "### " + name + " step " + step + ":"
	i := strings.Index(doc, head)
	if i < 0 {
		return ""
	}
	rest := doc[i+len(head):]
	if j := strings.Index(rest, "\n### "); j >= 0 {
		rest = rest[:j]
	}
	return rest
}
