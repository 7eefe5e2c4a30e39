package hello

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"visitors/internal/webtest"
)

// inputs are well-formed queries; names repeat so that counts grow.
var inputs = []string{
	"name=gopher", "name=gopher&color=red", "", "name=", "name=%3Cscript%3Ealert(1)%3C/script%3E",
	"name=a'b%22c%26d", "name=Ada+Lovelace", "name=%E4%B8%96%E7%95%8C", "name=" + strings.Repeat("n", 128),
	"name=" + strings.Repeat("n", 129), "name=%FF", "name=x&color=%3C", "name=gopher&color=Dark_Blue2",
	"color=blue&name=gopher",
}

func TestStepsAgree(t *testing.T) {
	handlers := make([]http.Handler, len(Steps))
	logs := make([]*bytes.Buffer, len(Steps))
	for i, s := range Steps {
		logs[i] = new(bytes.Buffer)
		handlers[i] = s(logs[i])
	}
	counted := 0
	for round := range 2 {
		for _, q := range inputs {
			var want string
			for step, h := range handlers {
				w := httptest.NewRecorder()
				h.ServeHTTP(w, httptest.NewRequest("GET", "/hello?"+q, nil))
				got := fmt.Sprintf("%d %s %q", w.Code, w.Header().Get("Content-Type"), w.Body)
				if step == 0 {
					want = got
					if w.Code == 200 {
						counted++
					}
					continue
				}
				if got != want {
					t.Errorf("round %d, ?%s: step %d = %s, step 0 = %s", round, q, step, got, want)
				}
			}
		}
	}
	for i, l := range logs {
		if got := strings.Count(l.String(), "\n"); got != counted {
			t.Errorf("step %d logged %d lines, want one per counted visit: %d", i, got, counted)
		}
		if !strings.Contains(l.String(), "gopher") {
			t.Errorf("step %d's log does not name the visitor:\n%.300s", i, l.String())
		}
	}
}

// BenchmarkHello compares every step from one goroutine, logging to
// io.Discard. r.Form is cleared each time so that r.FormValue parses the
// query, as it does on a fresh request.
func BenchmarkHello(b *testing.B) {
	for i, step := range Steps {
		b.Run(fmt.Sprintf("step=%d", i), func(b *testing.B) {
			h := step(io.Discard)
			r := httptest.NewRequest("GET", "/hello?name=gopher&color=red", nil)
			w := webtest.NewResponseWriter()
			b.ReportAllocs()
			for b.Loop() {
				r.Form = nil
				w.Reset()
				h.ServeHTTP(w, r)
			}
		})
	}
}

// BenchmarkHelloParallel runs every step from every core on one name:
// here step 6's shorter critical section, and step 7's lock-free count,
// show.
func BenchmarkHelloParallel(b *testing.B) {
	for i, step := range Steps {
		b.Run(fmt.Sprintf("step=%d", i), func(b *testing.B) {
			h := step(io.Discard)
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				r := httptest.NewRequest("GET", "/hello?name=gopher&color=red", nil)
				w := webtest.NewResponseWriter()
				for pb.Next() {
					r.Form = nil
					w.Reset()
					h.ServeHTTP(w, r)
				}
			})
		})
	}
}
