package greeting

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"

	"visitors/internal/webtest"
)

// inputs are well-formed queries: for malformed ones r.FormValue (steps
// 0-4) and the service's own parser may disagree on purpose.
var inputs = []string{
	"", "color=", "color=red", "color=Dark_Blue2", "color=%72ed", "color=" + strings.Repeat("a", 64),
	"color=" + strings.Repeat("a", 65), "color=%3Cscript%3E", "color=red'", "color=x%3Cb%3Ered",
	"color=a+b", "color=%C3%A9", "x=1&color=blue", "color=red&color=%3Cb%3E",
}

// TestStepsAgree serves every input to every step, in the same order, and
// checks that each step answers exactly as step 0 does.
func TestStepsAgree(t *testing.T) {
	handlers := make([]http.Handler, len(Steps))
	for i, s := range Steps {
		handlers[i] = s()
	}
	for round := range 3 {
		for _, q := range inputs {
			var want string
			for step, h := range handlers {
				w := httptest.NewRecorder()
				h.ServeHTTP(w, httptest.NewRequest("GET", "/hi?"+q, nil))
				got := fmt.Sprintf("%d %s %q", w.Code, w.Header().Get("Content-Type"), w.Body)
				if step == 0 {
					want = got
					continue
				}
				if got != want {
					t.Errorf("round %d, ?%s: step %d = %s, step 0 = %s", round, q, step, got, want)
				}
			}
		}
	}
}

func TestStep4MutexAgrees(t *testing.T) {
	a, b := Step4(), Step4Mutex()
	for _, q := range inputs {
		wa, wb := httptest.NewRecorder(), httptest.NewRecorder()
		a.ServeHTTP(wa, httptest.NewRequest("GET", "/hi?"+q, nil))
		b.ServeHTTP(wb, httptest.NewRequest("GET", "/hi?"+q, nil))
		if wa.Code != wb.Code || wa.Body.String() != wb.Body.String() {
			t.Errorf("?%s: Step4 = %d %q, Step4Mutex = %d %q", q, wa.Code, wa.Body, wb.Code, wb.Body)
		}
	}
}

// BenchmarkGreeting compares every step from one goroutine. r.Form is
// cleared each time so that r.FormValue parses the query, as it does on a
// fresh request.
func BenchmarkGreeting(b *testing.B) {
	for i, step := range Steps {
		b.Run(fmt.Sprintf("step=%d", i), func(b *testing.B) {
			h := step()
			r := httptest.NewRequest("GET", "/hi?color=red", nil)
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

// BenchmarkGreetingParallel is step 4's comparison: the counter behind a
// mutex or an atomic add, with the service beside them, from every core.
// Run it with -blockprofile and -mutexprofile to see the mutex wait.
// Steps 0 to 3 are left out: their plain int counter is a data race.
func BenchmarkGreetingParallel(b *testing.B) {
	steps := []struct {
		name string
		new  func() http.Handler
	}{
		{"step=4/counter=mutex", Step4Mutex},
		{"step=4/counter=atomic", Step4},
		{"step=5", Step5},
	}
	runtime.SetMutexProfileFraction(5)
	defer runtime.SetMutexProfileFraction(0)
	for _, s := range steps {
		b.Run(s.name, func(b *testing.B) {
			h := s.new()
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				r := httptest.NewRequest("GET", "/hi?color=red", nil)
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
