package hello

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"visitors/lab/allocs"

	"visitors/internal/webtest"
)

func newStep(tb testing.TB, i int, log io.Writer) http.Handler {
	tb.Helper()
	h := Steps[i](log)
	tb.Cleanup(func() {
		if c, ok := h.(io.Closer); ok {
			if err := c.Close(); err != nil {
				tb.Error(err)
			}
		}
	})
	return h
}

func serve(h http.Handler, query string) *httptest.ResponseRecorder {
	w := httptest.NewRecorder()
	h.ServeHTTP(w, httptest.NewRequest("GET", "/hello?"+query, nil))
	return w
}

const (
	page      = "<h1 style='color: red'>Welcome!</h1> <p>Name: gopher</p> <p>Count: %d</p>"
	lostQuote = "<h1 style='color: red>Welcome!</h1> <p>Name: gopher</p> <p>Count: %d</p>" // step 1
	lostP     = "<h1 style='color: red'>Welcome!</h1> <p>Name: gopher</p> <p>Count: %d"    // step 7
)

// TestSteps serves the same visits to every step and checks each answers
// and logs as its seed did.
func TestSteps(t *testing.T) {
	tests := []struct {
		step int
		body string
		log  string // in the line of visit n, with %d for n
	}{
		{0, page, "level=info msg=visited count=%d module=main name=gopher"},
		{1, lostQuote, "level=info msg=visited count=%d module=main name=gopher"},
		{2, page, "level=info msg=visited count=%d module=main name=gopher"},
		{3, page, "level=info msg=visited count=%d module=main name=gopher"},
		{4, page, `level=info msg="visited name=gopher count=%d"`},
		{5, page, `{"level":"info","message":"visited name=gopher count=%d"}`},
		{6, page, `{"level":"info","message":"visited name=gophercount=%d"}`},
		{7, lostP, `{"level":"info","message":"visited name=gophercount=%d"}`},
		{8, page, `"name":"gopher","count":%d,`},
	}
	if len(tests) != len(Steps) {
		t.Fatalf("%d steps, %d test cases", len(Steps), len(tests))
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("step=%d", tt.step), func(t *testing.T) {
			var log bytes.Buffer
			h := newStep(t, tt.step, &log)
			for n := 1; n <= 3; n++ {
				log.Reset()
				w := serve(h, "name=gopher&color=red")
				want := fmt.Sprintf(tt.body, n)
				if w.Code != 200 || w.Body.String() != want || w.Header().Get("Content-Type") != "text/html; charset=utf-8" {
					t.Errorf("visit %d = %d %q %q, want 200 text/html %q", n, w.Code, w.Header().Get("Content-Type"), w.Body, want)
				}
				if wantLog := fmt.Sprintf(tt.log, n); strings.Count(log.String(), "\n") != 1 || !strings.Contains(log.String(), wantLog) {
					t.Errorf("visit %d logged %q, want one line with %q", n, log.String(), wantLog)
				}
			}
		})
	}
}

// TestMuseumUnescaped shows that every step of the article writes the
// name and the color into the page as they came: a name or a color with
// markup injects it (XSS). The service escapes the name and refuses such
// a color with 400.
func TestMuseumUnescaped(t *testing.T) {
	tests := []struct {
		query, payload, escaped string
		serviceCode             int
	}{
		{"name=%3Cscript%3Ealert(1)%3C/script%3E", "<script>alert(1)</script>", "&lt;script&gt;alert(1)&lt;/script&gt;", 200},
		{"name=x&color=red'%3E%3Cscript%3E", "red'><script>", "", 400},
	}
	for _, tt := range tests {
		for i := range Steps {
			t.Run(fmt.Sprintf("%s/step=%d", tt.query, i), func(t *testing.T) {
				w := serve(newStep(t, i, io.Discard), tt.query)
				body := w.Body.String()
				if i < len(Steps)-1 {
					if w.Code != 200 || !strings.Contains(body, tt.payload) {
						t.Errorf("?%s = %d %q, want 200 with %q injected", tt.query, w.Code, body, tt.payload)
					}
					return
				}
				if w.Code != tt.serviceCode || strings.Contains(body, tt.payload) || !strings.Contains(body, tt.escaped) {
					t.Errorf("service: ?%s = %d %q, want %d, %q escaped", tt.query, w.Code, body, tt.serviceCode, tt.payload)
				}
			})
		}
	}
}

// TestMuseumBrokenMarkup shows the article's two markup slips: step 1's
// format string lost the quote that closes the style attribute, and the
// final version (step 7) lost the closing </p>.
func TestMuseumBrokenMarkup(t *testing.T) {
	for i := range Steps {
		t.Run(fmt.Sprintf("step=%d", i), func(t *testing.T) {
			body := serve(newStep(t, i, io.Discard), "name=gopher&color=red").Body.String()
			lostQuote := strings.Contains(body, "color: red>")
			lostP := !strings.HasSuffix(body, "</p>")
			if lostQuote != (i == 1) || lostP != (i == 7) {
				t.Errorf("body %q: lost quote %v, lost </p> %v", body, lostQuote, lostP)
			}
		})
	}
}

// TestMuseumLogRunsTogether shows the log message of steps 6 and 7,
// whose "count=" lost the space before it: the message's words read
// name=gophercount=1, and a reader splitting them on spaces finds no
// count. Steps 4 and 5 wrote the same message with fmt and the space.
func TestMuseumLogRunsTogether(t *testing.T) {
	tests := []struct {
		step      int
		wantCount bool
	}{{4, true}, {5, true}, {6, false}, {7, false}}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("step=%d", tt.step), func(t *testing.T) {
			var log bytes.Buffer
			serve(newStep(t, tt.step, &log), "name=gopher")
			words := strings.Fields(strings.NewReplacer(`"`, " ", "}", " ").Replace(log.String()))
			if got := slices.Contains(words, "count=1"); got != tt.wantCount {
				t.Errorf("log %q has the word count=1: %v, want %v", log.String(), got, tt.wantCount)
			}
		})
	}
}

// request is the article's benchmark request (its name, no color).
const request = "/hello?name=zouying"

// BenchmarkHello compares every step from one goroutine, logging to
// io.Discard. r.Form is cleared each time so that r.FormValue parses the
// query, as it does on a fresh request (the article reused one request,
// parsed once).
func BenchmarkHello(b *testing.B) {
	for i := range Steps {
		b.Run(fmt.Sprintf("step=%d", i), func(b *testing.B) {
			h := newStep(b, i, io.Discard)
			r := httptest.NewRequest("GET", request, nil)
			w := webtest.NewServerResponseWriter()
			defer allocs.Exact(b)()
			for b.Loop() {
				r.Form = nil
				w.Reset()
				h.ServeHTTP(w, r)
			}
		})
	}
}

// BenchmarkHelloParallel runs every step from every core on one name:
// here step 7's shorter critical section, and step 8's lock-free count,
// show.
func BenchmarkHelloParallel(b *testing.B) {
	for i := range Steps {
		b.Run(fmt.Sprintf("step=%d", i), func(b *testing.B) {
			h := newStep(b, i, io.Discard)
			defer allocs.Exact(b)()
			b.RunParallel(func(pb *testing.PB) {
				r := httptest.NewRequest("GET", request, nil)
				w := webtest.NewServerResponseWriter()
				for pb.Next() {
					r.Form = nil
					w.Reset()
					h.ServeHTTP(w, r)
				}
			})
		})
	}
}

// BenchmarkHelloAsPublished measures every step with the article's own
// harness, so that its figures compare with the published ones: one
// request, POST /hello?name=zouying, reused (r.FormValue parses it once),
// and one httptest.ResponseRecorder never reset, so its body grows for
// the whole run. The service answers POST with 405, so its step is sent
// a GET.
func BenchmarkHelloAsPublished(b *testing.B) {
	for i := range Steps {
		b.Run(fmt.Sprintf("step=%d", i), func(b *testing.B) {
			h := newStep(b, i, io.Discard)
			rw := httptest.NewRecorder()
			req := httptest.NewRequest(publishedMethod(i), "/hello?name=zouying", nil)
			defer allocs.Exact(b)()
			for b.Loop() {
				h.ServeHTTP(rw, req)
			}
		})
	}
}

// BenchmarkHelloAsPublishedParallel is the article's harness from every
// core, one request and one recorder per goroutine.
func BenchmarkHelloAsPublishedParallel(b *testing.B) {
	for i := range Steps {
		b.Run(fmt.Sprintf("step=%d", i), func(b *testing.B) {
			h := newStep(b, i, io.Discard)
			defer allocs.Exact(b)()
			b.RunParallel(func(pb *testing.PB) {
				rw := httptest.NewRecorder()
				req := httptest.NewRequest(publishedMethod(i), "/hello?name=zouying", nil)
				for pb.Next() {
					h.ServeHTTP(rw, req)
				}
			})
		})
	}
}

// publishedMethod is the article's POST, or GET for the service's step.
func publishedMethod(step int) string {
	if step == len(Steps)-1 {
		return http.MethodGet
	}
	return http.MethodPost
}
