package web

import (
	"encoding/xml"
	"fmt"
	"net/http/httptest"
	"strings"
	"testing"

	"visitors/internal/badge"
	"visitors/internal/race"
	"visitors/internal/webtest"
)

// escapeAll percent-escapes every byte of s.
func escapeAll(s string) string {
	var b strings.Builder
	for i := range len(s) {
		fmt.Fprintf(&b, "%%%02X", s[i])
	}
	return b.String()
}

// githubPath starts the path data of Simple Icons' github logo.
const githubPath = `d="M12 .297c`

func TestCounterLogo(t *testing.T) {
	tests := []struct {
		target string
		code   int
		want   []string // in the body
		counts bool
	}{
		{"/counter/k.svg?logo=github", 200, []string{`<path fill="#f5f5f5" ` + githubPath, `aria-label="visitors: 1"`}, true},
		{"/counter/k.svg?logo=GitHub&logo_color=blue", 200, []string{`<path fill="#007ec6" ` + githubPath}, true},
		{"/counter/k.svg?logo=github&logo_color=abc&style=for-the-badge", 200, []string{`<path fill="#abc" ` + githubPath, `<svg x="9" y="7"`}, true},
		{"/counter/k.svg?logo=&label=x", 200, []string{`aria-label="x: 1"`}, true},
		{"/counter/k.svg?logo=C%2B%2B", 200, []string{`<svg x="5" y="3" width="14" height="14" viewBox="0 0 24 24">`}, true},
		{"/counter/k.svg?count=false&logo=go", 200, []string{`aria-label="visitors: 0"`}, false},
		// An unknown logo on a badge: 400, and still a badge saying so.
		{"/counter/k.svg?logo=nosuchlogo&style=plastic&label=views", 400, []string{`aria-label="views: unknown logo"`, `height="18"`, `fill="#e05d44"`}, false},
		{"/counter/k.svg?logo=%3Cscript%3E", 400, []string{`aria-label="visitors: unknown logo"`}, false},
		{"/counter/k.svg?logo=" + strings.Repeat("a", 65), 400, []string{"unknown logo"}, false},
		// The longest name looked up, every byte escaped: 3×64 bytes of query.
		{"/counter/k.svg?logo=" + escapeAll("github"+strings.Repeat(" ", badge.MaxLogoBytes-6)), 200, []string{`<path fill="#f5f5f5" ` + githubPath}, true},
		{"/counter/k.svg?logo=" + escapeAll("github"+strings.Repeat(" ", badge.MaxLogoBytes-5)), 400, []string{"unknown logo"}, false},
		// Elsewhere, or with other faults, the usual text.
		{"/counter/k.json?logo=nosuchlogo", 400, []string{msgLogo}, false},
		{"/counter/k.svg?logo=%zz", 400, []string{msgEscape}, false},
		{"/counter/k.svg?logo=github&logo_color=%23fff", 400, []string{"Optional logo_color: colors must be"}, false},
		{"/counter/k.svg?logo=github&logo_color=url(x)", 400, []string{"Optional logo_color"}, false},
	}
	for _, tt := range tests {
		s, st := mustServer(t, nil)
		w := get(t, s, "GET", tt.target)
		if w.Code != tt.code {
			t.Errorf("GET %s = %d %q, want %d", tt.target, w.Code, w.Body, tt.code)
			continue
		}
		for _, want := range tt.want {
			// An error badge carries the whole message in Visitors-Error.
			if !strings.Contains(w.Body.String()+w.Header().Get("Visitors-Error"), want) {
				t.Errorf("GET %s: body lacks %s:\n%s", tt.target, want, w.Body)
			}
		}
		if got := mustCount(t, st, "k").Total; (got == 1) != tt.counts || got > 1 {
			t.Errorf("GET %s counted %d visits, want counted %v", tt.target, got, tt.counts)
		}
		if strings.HasPrefix(w.Header().Get("Content-Type"), "image/svg") {
			if err := xml.Unmarshal(w.Body.Bytes(), new(struct{})); err != nil {
				t.Errorf("GET %s: not well-formed: %v", tt.target, err)
			}
			if strings.Contains(w.Body.String(), "<script") {
				t.Errorf("GET %s: reflects markup", tt.target)
			}
			if w.Header().Get("Cache-Control") != "no-cache, no-store, must-revalidate" {
				t.Errorf("GET %s: Cache-Control %q", tt.target, w.Header().Get("Cache-Control"))
			}
		}
	}
}

// TestCounterLogoAllocs: a badge with a logo allocates at most once per
// request, and no more than the same badge without it
// (TestCounterAllocs), its name escaped or not.
func TestCounterLogoAllocs(t *testing.T) {
	if race.Enabled {
		t.Skip("allocation budgets are checked without -race")
	}
	s, _ := mustServer(t, nil)
	allocs := func(target string) float64 {
		r := httptest.NewRequest("GET", target, nil)
		w := webtest.NewResponseWriter()
		s.ServeHTTP(w, r)
		got := testing.AllocsPerRun(500, func() { w.Reset(); s.ServeHTTP(w, r) })
		if w.Code != 200 {
			t.Errorf("GET %s = %d", target, w.Code)
		}
		return got
	}
	for _, tt := range []struct{ target, plain string }{
		{"/counter/k.svg?logo=github", "/counter/k.svg"},
		{"/counter/k.svg?logo=Go&logo_color=blue&style=for-the-badge", "/counter/k.svg?style=for-the-badge"},
		{"/counter/k.svg?logo=C%2B%2B", "/counter/k.svg"},
	} {
		got, plain := allocs(tt.target), allocs(tt.plain)
		if got > 1 || got > plain {
			t.Errorf("GET %s allocs = %v, want at most 1 and at most the %v of %s", tt.target, got, plain, tt.plain)
		}
	}
}

func BenchmarkCounterBadgeLogo(b *testing.B) {
	benchServe(b, "/counter/octocat/hello-world.svg?logo=github")
}
