package runner

import (
	"math"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// generatedSection matches the sections of docs/lab.md and of the case
// pages, docs/lab/<case>.md, that -regen writes
// (and -check compares); what is left is the hand-written prose.
var generatedSection = regexp.MustCompile(`(?s)<!-- BEGIN go run \./cmd/lab: (\w+) -->.*?<!-- END go run \./cmd/lab: \w+ -->`)

var (
	// "(−71%, p=0.009)", "−96% (p=0.000)": a change the prose quotes.
	proseChange = regexp.MustCompile(`([−+-])(\d+)%,? \(?p=(\d\.\d{3})`)
	// "`~` (p=0.436)", "`~`, p=0.063": no change, as the prose quotes it.
	proseSame = regexp.MustCompile("`~`,? \\(?p=(\\d\\.\\d{3})")
	// "-71.45% (p=0.009 n=10)" and "~ (p=0.436 n=10)" in tables.md.
	tableChange = regexp.MustCompile(`([+-]\d+\.\d+)% \(p=(\d\.\d{3}) n=`)
)

// TestProseQuotesStoredFigures: -check regenerates only the marked
// sections of docs/lab.md and of the case pages, so the prose around them, which quotes
// benchstat's changes and p-values, would go stale unnoticed when the
// figures are measured again. Every change the prose quotes as "−71%,
// p=0.009" must be one of docs/lab/tables.md's comparisons (rounded to
// the percent), and every "`~` (p=0.436)" one of its "~" rows.
func TestProseQuotesStoredFigures(t *testing.T) {
	pages := []string{"docs/lab.md"}
	for _, cs := range Cases {
		pages = append(pages, "docs/lab/"+cs.Name+".md")
	}
	var doc []byte
	for _, page := range pages {
		b, err := os.ReadFile("../../" + page)
		if err != nil {
			t.Fatal(err)
		}
		doc = append(doc, b...)
	}
	tables, err := os.ReadFile("../../docs/lab/tables.md")
	if err != nil {
		t.Fatal(err)
	}
	prose := strings.Join(strings.Fields(generatedSection.ReplaceAllString(string(doc), "")), " ")
	type change struct {
		pct int
		p   string
	}
	stored := map[change]bool{}
	for _, m := range tableChange.FindAllStringSubmatch(string(tables), -1) {
		f, _ := strconv.ParseFloat(m[1], 64)
		stored[change{int(math.Round(f)), m[2]}] = true
	}
	checked := 0
	for _, m := range proseChange.FindAllStringSubmatch(prose, -1) {
		pct, _ := strconv.Atoi(m[2])
		if m[1] != "+" {
			pct = -pct
		}
		if !stored[change{pct, m[3]}] {
			t.Errorf("the lab's pages quote %q: no such change in docs/lab/tables.md", m[0])
		}
		checked++
	}
	for _, m := range proseSame.FindAllStringSubmatch(prose, -1) {
		if !strings.Contains(string(tables), "~ (p="+m[1]+" n=") {
			t.Errorf("the lab's pages quote %q: no such row in docs/lab/tables.md", m[0])
		}
		checked++
	}
	if checked < 10 {
		t.Errorf("%d quoted figures found in the prose of the lab's pages; the patterns no longer match it", checked)
	}
	t.Logf("%d quoted figures checked", checked)
}
