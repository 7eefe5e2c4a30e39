package web

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"visitors/internal/client"
	"visitors/internal/unique"
	"visitors/internal/webtest"
)

// numBenchClients is how many client addresses the distinct-client
// benchmarks cycle through: as many as the load test's -clients script,
// more than the limiter remembers (client.DefaultMaxClients), so the
// limiter's table is full and turns over as in that scenario.
const numBenchClients = 1 << 17

// benchClients returns the X-Forwarded-For values of numBenchClients
// clients, 1.0.0.1 up, as the load test's script names them; each is
// set as a header's value without allocating.
func benchClients() [][]string {
	xff := make([][]string, numBenchClients)
	for k := range xff {
		a := 1<<24 + k + 1
		xff[k] = []string{fmt.Sprintf("%d.%d.%d.%d", a>>24&255, a>>16&255, a>>8&255, a&255)}
	}
	return xff
}

// withClientRules gives s the rules of the load test's servers for
// -clients: loopback trusted as the proxy, and either every default
// rule (rules) or every rule off and unique visitors not counted, as
// visitors-rules0 runs.
func withClientRules(tb testing.TB, s *Server, rules bool) {
	tb.Helper()
	withDefaultRules(tb, s)
	var p client.Proxies
	if err := p.Set("127.0.0.1"); err != nil {
		tb.Fatal(err)
	}
	s.visits.Rules.Trusted = &p
	if rules {
		return
	}
	s.visits.Rules.Limiter, s.visits.Rules.Bots = nil, nil
	u, err := unique.New(unique.Options{Off: true, Now: s.now})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { u.Close() })
	s.visits.Uniques = u
}

// clientsRequest returns the request of the -clients scenario for path
// (/counter/load.svg or /counter/load.json), less its X-Forwarded-For:
// a counting request, from the trusted proxy, by a browser.
func clientsRequest(path string) *http.Request {
	r := httptest.NewRequest("GET", path, nil)
	r.RemoteAddr = "127.0.0.1:40000"
	r.Header.Set("User-Agent", benchUA)
	return r
}

// clientsServer returns a server with the rules of withClientRules and
// the metrics on (the flight recorder is off until armed, as in the
// service), that has served one round of every client of xff at path: the limiter's table is full and turning over, as in the load
// test past its first seconds.
func clientsServer(b *testing.B, xff [][]string, path string, rules bool) *Server {
	b.Helper()
	s, _ := mustServerObserved(b, nil, true)
	withClientRules(b, s, rules)
	r := clientsRequest(path)
	w := webtest.NewResponseWriter()
	for _, a := range xff {
		r.Header["X-Forwarded-For"] = a
		w.Reset()
		s.ServeHTTP(w, r)
	}
	return s
}

// clientsPaths are the counting requests of the -clients scenario: the
// badge (the load test's -path /counter/load.svg) and the JSON read.
var clientsPaths = []struct{ name, path string }{{"svg", "/counter/load.svg"}, {"json", "/counter/load.json"}}

// BenchmarkCounterClients serves a counting badge (or JSON read) to a
// new client on every request, through a trusted proxy, as the load
// test's -clients scenario does: the limiter meets a new client each
// time and its table turns over, and each request is a new unique
// visitor. A round of every client comes first, untimed: the table is
// full from the start. rules=false is visitors-rules0. Compare with
// benchstat -col /rules.
func BenchmarkCounterClients(b *testing.B) {
	xff := benchClients()
	for _, p := range clientsPaths {
		for _, rules := range []bool{false, true} {
			b.Run(fmt.Sprintf("path=%s/rules=%v", p.name, rules), func(b *testing.B) {
				s := clientsServer(b, xff, p.path, rules)
				r := clientsRequest(p.path)
				w := webtest.NewResponseWriter()
				b.ReportAllocs()
				i := 0
				cpu := cpuTime()
				for b.Loop() {
					r.Header["X-Forwarded-For"] = xff[i%numBenchClients]
					i++
					w.Reset()
					s.ServeHTTP(w, r)
				}
				reportCPU(b, cpu)
				if w.Code != 200 {
					b.Fatalf("GET %s = %d", p.path, w.Code)
				}
			})
		}
	}
}

// BenchmarkCounterClientsParallel is the RunParallel twin of
// BenchmarkCounterClients.
func BenchmarkCounterClientsParallel(b *testing.B) {
	xff := benchClients()
	for _, p := range clientsPaths {
		for _, rules := range []bool{false, true} {
			b.Run(fmt.Sprintf("path=%s/rules=%v", p.name, rules), func(b *testing.B) {
				s := clientsServer(b, xff, p.path, rules)
				b.ReportAllocs()
				b.ResetTimer()
				cpu := cpuTime()
				defer reportCPU(b, cpu)
				var next atomic.Int64
				b.RunParallel(func(pb *testing.PB) {
					r := clientsRequest(p.path)
					w := webtest.NewResponseWriter()
					for pb.Next() {
						r.Header["X-Forwarded-For"] = xff[next.Add(1)%numBenchClients]
						w.Reset()
						s.ServeHTTP(w, r)
					}
					if w.Code != 200 && w.Code != 0 {
						b.Errorf("GET %s = %d", p.path, w.Code)
					}
				})
			})
		}
	}
}
