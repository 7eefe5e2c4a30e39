package whoami

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"visitors/lab/allocs"

	"visitors/internal/store/storetest"
	"visitors/internal/webtest"
)

// steppingClock returns a clock that advances by step on every call.
func steppingClock(step time.Duration) func() time.Time {
	t := storetest.Anchor()
	return func() time.Time {
		t = t.Add(step)
		return t
	}
}

func newStep(tb testing.TB, i int, now func() time.Time) http.Handler {
	tb.Helper()
	h := Steps[i](now)
	tb.Cleanup(func() {
		if c, ok := h.(io.Closer); ok {
			if err := c.Close(); err != nil {
				tb.Error(err)
			}
		}
	})
	return h
}

func whoami(h http.Handler, ua string) *httptest.ResponseRecorder {
	r := httptest.NewRequest("GET", "/whoami", nil)
	r.Header.Set("User-Agent", ua)
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w
}

// TestStepsAgree checks that every step answers as step 0 does, for
// latencies whose Duration.String has at most three decimals, where the
// service's format and the reconstruction's agree.
func TestStepsAgree(t *testing.T) {
	agents := []string{"", "curl/8.5.0", "Mozilla/5.0 (X11; Linux x86_64) <b>", "ünï \"quoted\""}
	steps := []time.Duration{0, 850, 1500, 12345 * time.Nanosecond, 2500 * time.Microsecond, 1200 * time.Millisecond}
	for _, step := range steps {
		for _, ua := range agents {
			var want string
			for i := range Steps {
				w := whoami(newStep(t, i, steppingClock(step)), ua)
				got := fmt.Sprintf("%d %s %q", w.Code, w.Header().Get("Content-Type"), w.Body)
				if i == 0 {
					want = got
					continue
				}
				if got != want {
					t.Errorf("latency %v, UA %q: step %d = %s, step 0 = %s", step, ua, i, got, want)
				}
			}
		}
	}
}

// TestLatencyFormat shows where the service's latency differs from the
// reconstruction's time.Duration.String: beyond three decimals.
func TestLatencyFormat(t *testing.T) {
	tests := []struct {
		latency                 time.Duration
		reconstruction, service string
	}{
		{850, "850ns", "850ns"},
		{12345 * time.Nanosecond, "12.345µs", "12.345µs"},
		{1234567 * time.Nanosecond, "1.234567ms", "1.234ms"},
		{1500000001, "1.500000001s", "1.5s"},
	}
	for _, tt := range tests {
		for i, want := range map[int]string{0: tt.reconstruction, 3: tt.reconstruction, len(Steps) - 1: tt.service} {
			body := whoami(newStep(t, i, steppingClock(tt.latency)), "ua").Body.String()
			if !strings.HasSuffix(body, "Latency: "+want+"\n") {
				t.Errorf("step %d, latency %d ns: body %q, want Latency: %s", i, int64(tt.latency), body, want)
			}
		}
	}
}

func BenchmarkWhoami(b *testing.B) {
	for i := range Steps {
		b.Run(fmt.Sprintf("step=%d", i), func(b *testing.B) {
			h := newStep(b, i, time.Now)
			r := httptest.NewRequest("GET", "/whoami", nil)
			r.Header.Set("User-Agent", "Mozilla/5.0 (X11; Linux x86_64)")
			w := webtest.NewServerResponseWriter()
			defer allocs.Exact(b)()
			for b.Loop() {
				w.Reset()
				h.ServeHTTP(w, r)
			}
		})
	}
}

func BenchmarkWhoamiParallel(b *testing.B) {
	for i := range Steps {
		b.Run(fmt.Sprintf("step=%d", i), func(b *testing.B) {
			h := newStep(b, i, time.Now)
			defer allocs.Exact(b)()
			b.RunParallel(func(pb *testing.PB) {
				r := httptest.NewRequest("GET", "/whoami", nil)
				r.Header.Set("User-Agent", "Mozilla/5.0 (X11; Linux x86_64)")
				w := webtest.NewServerResponseWriter()
				for pb.Next() {
					w.Reset()
					h.ServeHTTP(w, r)
				}
			})
		})
	}
}
