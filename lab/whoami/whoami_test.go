package whoami

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"visitors/internal/webtest"
)

// steppingClock returns a clock that advances by step on every call.
func steppingClock(step time.Duration) func() time.Time {
	t := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	return func() time.Time {
		t = t.Add(step)
		return t
	}
}

func TestStepsAgree(t *testing.T) {
	agents := []string{"", "curl/8.5.0", "Mozilla/5.0 (X11; Linux x86_64) <b>", "ünï \"quoted\""}
	steps := []time.Duration{0, 850, 1500, 12345 * time.Nanosecond, 2500 * time.Microsecond, 1200 * time.Millisecond}
	for _, step := range steps {
		for _, ua := range agents {
			var want string
			for i, s := range Steps {
				h := s(steppingClock(step))
				r := httptest.NewRequest("GET", "/whoami", nil)
				r.Header.Set("User-Agent", ua)
				w := httptest.NewRecorder()
				h.ServeHTTP(w, r)
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

func BenchmarkWhoami(b *testing.B) {
	for i, step := range Steps {
		b.Run(fmt.Sprintf("step=%d", i), func(b *testing.B) {
			h := step(time.Now)
			r := httptest.NewRequest("GET", "/whoami", nil)
			r.Header.Set("User-Agent", "Mozilla/5.0 (X11; Linux x86_64)")
			w := webtest.NewResponseWriter()
			b.ReportAllocs()
			for b.Loop() {
				w.Reset()
				h.ServeHTTP(w, r)
			}
		})
	}
}

func BenchmarkWhoamiParallel(b *testing.B) {
	for i, step := range Steps {
		b.Run(fmt.Sprintf("step=%d", i), func(b *testing.B) {
			h := step(time.Now)
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				r := httptest.NewRequest("GET", "/whoami", nil)
				r.Header.Set("User-Agent", "Mozilla/5.0 (X11; Linux x86_64)")
				w := webtest.NewResponseWriter()
				for pb.Next() {
					w.Reset()
					h.ServeHTTP(w, r)
				}
			})
		})
	}
}

var _ http.Handler = Step0(time.Now)
