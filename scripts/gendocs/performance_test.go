package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

var (
	// figure matches a number as the docs write it: 82,741, 11.96, 0.98.
	figure = regexp.MustCompile(`\d[\d,]*(?:\.\d+)?`)
	// measuredLink matches the link of a row to its measurement file.
	measuredLink = regexp.MustCompile(`\]\((measurements/[^)#]+\.md)(?:#[^)]*)?\)`)
)

// TestPerformanceFiguresAreMeasured: every number in the table of
// docs/performance.md's first section is one that its row's dated
// measurement file holds, so that the summary cannot drift from the
// runs it cites, or round them differently.
func TestPerformanceFiguresAreMeasured(t *testing.T) {
	docs := filepath.Join("..", "..", "docs")
	b, err := os.ReadFile(filepath.Join(docs, "performance.md"))
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	start := strings.Index(doc, "\n## What to expect on one core\n")
	if start < 0 {
		t.Fatal(`docs/performance.md has no section "What to expect on one core"`)
	}
	section := doc[start+1:]
	if end := strings.Index(section, "\n## "); end >= 0 {
		section = section[:end]
	}
	rows := 0
	for _, line := range strings.Split(section, "\n") {
		if !strings.HasPrefix(line, "| ") || strings.HasPrefix(line, "| ---") || strings.HasPrefix(line, "| what |") {
			continue
		}
		m := measuredLink.FindStringSubmatch(line)
		if m == nil {
			t.Errorf("a row links no measurement file: %s", line)
			continue
		}
		rows++
		src, err := os.ReadFile(filepath.Join(docs, m[1]))
		if err != nil {
			t.Errorf("%s: %v", line, err)
			continue
		}
		text := string(src)
		cells := measuredLink.ReplaceAllString(line, "")
		for _, f := range figure.FindAllString(cells, -1) {
			if !strings.Contains(text, f) {
				t.Errorf("docs/performance.md quotes %s, which %s does not hold (row %q)", f, m[1], line)
			}
		}
	}
	if rows < 7 {
		t.Errorf("found %d rows in docs/performance.md's first table, want its figures (at least 7)", rows)
	}
}
