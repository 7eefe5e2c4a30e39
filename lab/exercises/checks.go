package exercises

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"

	"visitors/internal/webtest"
	"visitors/lab/allocs"
)

// Visitors is how many visitors PoolKeepsGrowth serves before it
// counts: from visitor 100,000 on, greeting's body with color=red no
// longer fits the 64 bytes a bytes.Buffer starts with.
const Visitors = 100_000

// PoolKeepsGrowth checks exercise 1 on a /hi handler: after Visitors
// requests with color=red, parsed beforehand, a request allocates
// nothing. The seed's handler appends the number to buf.Bytes(), so the
// slice that grows is a copy and the pool keeps the small buffer: one
// allocation per request from visitor 100,000 on. Run it without -race,
// under which sync.Pool drops items on purpose.
func PoolKeepsGrowth(h http.Handler) error {
	r := httptest.NewRequest("GET", "/hi?color=red", nil)
	if err := r.ParseForm(); err != nil {
		return err
	}
	w := webtest.NewResponseWriter()
	serve := func() { w.Reset(); h.ServeHTTP(w, r) }
	for range Visitors {
		serve()
	}
	if got := allocs.PerRun(100, serve); got >= 0.5 {
		return fmt.Errorf("after %d visitors a request allocates %.2f times; want 0: the buffer put back in the pool is not the one that grew", Visitors, got)
	}
	return nil
}

// ColorAnchored checks exercise 2 on a /hi handler: a color that is not
// a word is refused with 400 and not written into the page, and a word
// is still accepted. The seed's `\w*$` matches every string.
func ColorAnchored(h http.Handler) error {
	for _, tt := range []struct {
		query string
		code  int
	}{{"color=red", 200}, {"color=", 200}, {"color=%3Cscript%3Ealert(1)%3C/script%3E", 400}, {"color=red%3B%20x", 400}} {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, httptest.NewRequest("GET", "/hi?"+tt.query, nil))
		if w.Code != tt.code {
			return fmt.Errorf("/hi?%s = %d, want %d", tt.query, w.Code, tt.code)
		}
		if tt.code == 400 && strings.Contains(w.Body.String(), "<script>") {
			return fmt.Errorf("/hi?%s: the markup is in the answer: %q", tt.query, w.Body)
		}
	}
	return nil
}

// NoAlias checks exercise 3 on a digest function: a result the caller
// holds does not change when the function is called again. The seed's
// last step returns its pooled buffer through unsafe, so the next call
// that gets the same buffer rewrites the caller's string.
func NoAlias(digest func(int) string) error {
	for try := 0; try < 50; try++ {
		first := digest(12345)
		keep := strings.Clone(first)
		digest(67890)
		if first != keep {
			return fmt.Errorf("digest(12345) = %q, and %q after a call of digest(67890): the result aliases memory the function reuses", keep, first)
		}
	}
	return nil
}
