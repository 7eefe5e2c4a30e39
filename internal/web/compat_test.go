package web

import (
	"net/http/httptest"
	"testing"

	"visitors/internal/metrics"
	"visitors/internal/race"
	"visitors/internal/webtest"
)

// TestCompatRoutes: the paths of the closed services reach
// internal/compat, which counts through the server's store, and the
// paths beside them keep their own routes (the owner API's /api/ is 404
// here, without one; /hi is /hi).
func TestCompatRoutes(t *testing.T) {
	s, st := mustServer(t, nil)
	tests := []struct {
		target, body string
		code         int
	}{
		{"/hit/ns/k", `{"value":1}` + "\n", 200},
		{"/hit/ns/k", `{"value":2}` + "\n", 200},
		{"/get/ns/k", `{"value":2}` + "\n", 200},
		{"/api/v1/counters", "404 page not found", 404},
		{"/hit", "404 page not found", 404},
		{"/badges", "404 page not found", 404},
	}
	for _, tt := range tests {
		r := httptest.NewRequest("GET", tt.target, nil)
		r.Header.Set("User-Agent", "Mozilla/5.0")
		w := httptest.NewRecorder()
		s.ServeHTTP(w, r)
		if w.Code != tt.code || w.Body.String() != tt.body {
			t.Errorf("GET %s = %d %q, want %d %q", tt.target, w.Code, w.Body.String(), tt.code, tt.body)
		}
	}
	if got := mustCount(t, st, "countapi/ns/k").Total; got != 2 {
		t.Errorf("countapi/ns/k total %d, want 2", got)
	}
	if got := counts(metrics.Compat); !got {
		t.Error("the compat route is not a counting route for the metrics")
	}
}

// TestCompatLeavesTheBudgets: a path no route takes, which now asks
// internal/compat first, still allocates nothing of web's beyond what a
// 404 did.
func TestCompatLeavesTheBudgets(t *testing.T) {
	if race.Enabled {
		t.Skip("allocation budgets are checked without -race")
	}
	s, st := mustServerObserved(t, nil, false) // with compat, without metrics
	without := New(Config{Store: st})
	r := httptest.NewRequest("GET", "/no/such/path", nil)
	w := webtest.NewResponseWriter()
	with := testing.AllocsPerRun(500, func() { w.Reset(); s.ServeHTTP(w, r) })
	base := testing.AllocsPerRun(500, func() { w.Reset(); without.ServeHTTP(w, r) })
	if with > base {
		t.Errorf("a 404 allocates %v with compat, %v without", with, base)
	}
}

// compatTargets are one URL of each closed service, for the benchmarks:
// what a visit through them costs beside /counter/{key}.svg.
var compatTargets = []struct{ name, target string }{
	{"counter", "/counter/octocat/hello-world.svg"},
	{"hits", "/api/count/incr/badge.svg?url=https%3A%2F%2Fgithub.com%2Foctocat%2Fhello-world&title=hits&count_bg=%2379C83D"},
	{"countapi", "/hit/mysite.com/visits"},
	{"visitor-badge", "/badge?page_id=octocat.hello-world&left_text=visitors"},
	{"ghpvc", "/ghpvc/?username=octocat&abbreviated=true&base=1200"},
}

// BenchmarkCompat prices a counted visit through each closed service's
// URL, with the metrics as the service runs them; compare with
// benchstat -col /service.
func BenchmarkCompat(b *testing.B) {
	for _, tt := range compatTargets {
		b.Run("service="+tt.name, func(b *testing.B) { benchServeObs(b, tt.target, obsMetrics) })
	}
}

func BenchmarkCompatParallel(b *testing.B) {
	for _, tt := range compatTargets {
		b.Run("service="+tt.name, func(b *testing.B) { benchServeParallelObs(b, tt.target, obsMetrics) })
	}
}
