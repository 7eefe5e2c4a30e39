package boltstore

import (
	"strings"
	"testing"
)

// TestCheckBoundsTheRouteKeysNamed: check names at most max keys that
// end in a route name, and then how many more there are; with max at
// their number it names them all. (Mutation testing, issue 28: no test
// ran check with a bound on a store with such keys, so the bound's
// mutants, file.go:595:19 and 596:83, could fail none.)
func TestCheckBoundsTheRouteKeysNamed(t *testing.T) {
	dir := t.TempDir()
	s := mustOpen(t, Options{Dir: dir})
	for _, k := range []string{"a/graph", "b/daily", "c/stream", "d/graphs"} {
		mustIncr(t, s, []byte(k))
	}
	mustClose(t, s)
	for _, tc := range []struct {
		max, named int
		more       string
	}{
		{1, 1, "warning: 2 more keys end in a route name\n"},
		{2, 2, "warning: 1 more keys end in a route name\n"},
		{3, 3, ""},
		{0, 3, ""},
	} {
		var out strings.Builder
		if err := Check(dir, &out, tc.max); err != nil {
			t.Fatalf("Check(max %d) = %v\n%s", tc.max, err, out.String())
		}
		got := out.String()
		if n := strings.Count(got, "ends in a route name ("); n != tc.named {
			t.Errorf("Check(max %d) names %d keys ending in a route name, want %d:\n%s", tc.max, n, tc.named, got)
		}
		if more := strings.Contains(got, " more keys end in a route name"); more != (tc.more != "") || !strings.Contains(got, tc.more) {
			t.Errorf("Check(max %d) does not end the list with %q:\n%s", tc.max, tc.more, got)
		}
	}
}
