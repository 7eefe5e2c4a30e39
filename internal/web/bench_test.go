package web

import (
	"net/http/httptest"
	"testing"

	"visitors/internal/webtest"
)

// benchServe serves target to s in a loop with a reused request and
// writer, as the allocation test does, so only the handler is measured.
// As in the service by default, requests are observed by the metrics and
// the flight recorder runs.
func benchServe(b *testing.B, target string) {
	benchServeObs(b, target, obsAll)
}

// benchUA is a browser's User-Agent: not a bot.
const benchUA = "Mozilla/5.0 (X11; Linux x86_64; rv:133.0) Gecko/20100101 Firefox/133.0"

// What a benchmark observes: nothing, the metrics, or the metrics and
// the flight recorder (the service's default).
const (
	obsNone = iota
	obsMetrics
	obsAll
)

var obsNames = []string{"none", "metrics", "metrics+flightrecorder"}

func benchServeObs(b *testing.B, target string, obs int) {
	benchServeWith(b, target, obs, false)
}

// benchServeRules serves target with the default fairness rules or none,
// observed as the service observes by default since the flight recorder
// is off until armed (issue 26): by the metrics only.
func benchServeRules(b *testing.B, target string, rules bool) {
	benchServeWith(b, target, obsMetrics, rules)
}

// benchServer returns the server of the benchServe benchmarks: observed
// as obs says, with the default fairness rules or none.
func benchServer(b *testing.B, obs int, rules bool) *Server {
	b.Helper()
	s, _ := mustServerObserved(b, nil, obs >= obsMetrics)
	if rules {
		withDefaultRules(b, s)
	}
	if obs == obsAll {
		mustFlightRecorder(b)
	}
	return s
}

func benchServeWith(b *testing.B, target string, obs int, rules bool) {
	s := benchServer(b, obs, rules)
	r := httptest.NewRequest("GET", target, nil)
	r.Header.Set("User-Agent", benchUA)
	w := webtest.NewResponseWriter()
	b.ReportAllocs()
	cpu := cpuTime()
	for b.Loop() {
		w.Reset()
		s.ServeHTTP(w, r)
	}
	reportCPU(b, cpu)
	if w.Code != 200 {
		b.Fatalf("GET %s = %d", target, w.Code)
	}
}

// benchServeParallel is the RunParallel twin of benchServe: every
// goroutine shares the server, store and log, as real requests do.
func benchServeParallel(b *testing.B, target string) {
	benchServeParallelObs(b, target, obsAll)
}

func benchServeParallelObs(b *testing.B, target string, obs int) {
	benchServeParallelWith(b, target, obs, false)
}

func benchServeParallelRules(b *testing.B, target string, rules bool) {
	benchServeParallelWith(b, target, obsMetrics, rules)
}

func benchServeParallelWith(b *testing.B, target string, obs int, rules bool) {
	s := benchServer(b, obs, rules)
	b.ReportAllocs()
	b.ResetTimer()
	cpu := cpuTime()
	defer reportCPU(b, cpu)
	b.RunParallel(func(pb *testing.PB) {
		r := httptest.NewRequest("GET", target, nil)
		r.Header.Set("User-Agent", benchUA)
		w := webtest.NewResponseWriter()
		for pb.Next() {
			w.Reset()
			s.ServeHTTP(w, r)
		}
		if w.Code != 200 && w.Code != 0 { // 0: this goroutine got no iteration
			b.Errorf("GET %s = %d", target, w.Code)
		}
	})
}

func BenchmarkHi(b *testing.B)             { benchServe(b, "/hi?color=red") }
func BenchmarkHiParallel(b *testing.B)     { benchServeParallel(b, "/hi?color=red") }
func BenchmarkHello(b *testing.B)          { benchServe(b, "/hello?name=gopher&color=red") }
func BenchmarkHelloParallel(b *testing.B)  { benchServeParallel(b, "/hello?name=gopher&color=red") }
func BenchmarkWhoami(b *testing.B)         { benchServe(b, "/whoami") }
func BenchmarkWhoamiParallel(b *testing.B) { benchServeParallel(b, "/whoami") }

// BenchmarkHiObserved prices what the defaults add to /hi, side by side
// in one run: compare with benchstat -col /obs.
func BenchmarkHiObserved(b *testing.B) {
	for obs, name := range obsNames {
		b.Run("obs="+name, func(b *testing.B) { benchServeObs(b, "/hi?color=red", obs) })
	}
}

func BenchmarkHiObservedParallel(b *testing.B) {
	for obs, name := range obsNames {
		b.Run("obs="+name, func(b *testing.B) { benchServeParallelObs(b, "/hi?color=red", obs) })
	}
}
