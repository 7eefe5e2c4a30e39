package web

import (
	"net/http/httptest"
	"testing"
)

// benchServe serves target to s in a loop with a reused request and
// writer, as the allocation test does, so only the handler is measured.
func benchServe(b *testing.B, target string) {
	s, _ := mustServer(b, nil)
	r := httptest.NewRequest("GET", target, nil)
	r.Header.Set("User-Agent", "bench/1.0")
	w := newDiscardWriter()
	b.ReportAllocs()
	for b.Loop() {
		w.reset()
		s.ServeHTTP(w, r)
	}
	if w.code != 200 {
		b.Fatalf("GET %s = %d", target, w.code)
	}
}

// benchServeParallel is the RunParallel twin of benchServe: every
// goroutine shares the server, store and log, as real requests do.
func benchServeParallel(b *testing.B, target string) {
	s, _ := mustServer(b, nil)
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		r := httptest.NewRequest("GET", target, nil)
		r.Header.Set("User-Agent", "bench/1.0")
		w := newDiscardWriter()
		for pb.Next() {
			w.reset()
			s.ServeHTTP(w, r)
		}
		if w.code != 200 && w.code != 0 { // 0: this goroutine got no iteration
			b.Errorf("GET %s = %d", target, w.code)
		}
	})
}

func BenchmarkHi(b *testing.B)             { benchServe(b, "/hi?color=red") }
func BenchmarkHiParallel(b *testing.B)     { benchServeParallel(b, "/hi?color=red") }
func BenchmarkHello(b *testing.B)          { benchServe(b, "/hello?name=gopher&color=red") }
func BenchmarkHelloParallel(b *testing.B)  { benchServeParallel(b, "/hello?name=gopher&color=red") }
func BenchmarkWhoami(b *testing.B)         { benchServe(b, "/whoami") }
func BenchmarkWhoamiParallel(b *testing.B) { benchServeParallel(b, "/whoami") }
