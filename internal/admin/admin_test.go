package admin

import (
	"encoding/json"
	"errors"
	"expvar"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestHealthz(t *testing.T) {
	tests := []struct {
		name     string
		health   func() error
		wantCode int
		wantBody string
	}{
		{"nil is healthy", nil, 200, "ok\n"},
		{"healthy", func() error { return nil }, 200, "ok\n"},
		{"unhealthy", func() error { return errors.New("flush failed: disk full") }, 503, "unhealthy: flush failed: disk full\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := httptest.NewRecorder()
			Handler(Options{Health: tt.health}).ServeHTTP(w, httptest.NewRequest("GET", "/healthz", nil))
			if w.Code != tt.wantCode || w.Body.String() != tt.wantBody {
				t.Errorf("GET /healthz = %d %q, want %d %q", w.Code, w.Body, tt.wantCode, tt.wantBody)
			}
		})
	}
}

func TestProfiles(t *testing.T) {
	h := Handler(Options{})
	for _, p := range []string{"", "heap", "allocs", "goroutine", "block", "mutex", "threadcreate", "cmdline", "symbol"} {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, httptest.NewRequest("GET", "/debug/pprof/"+p, nil))
		if w.Code != 200 || w.Body.Len() == 0 {
			t.Errorf("GET /debug/pprof/%s = %d with %d bytes, want 200 with a body", p, w.Code, w.Body.Len())
		}
	}
	// cpu and trace take a duration; a short one proves they are wired.
	for _, p := range []string{"profile?seconds=1", "trace?seconds=0.1"} {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, httptest.NewRequest("GET", "/debug/pprof/"+p, nil))
		if w.Code != 200 || w.Body.Len() == 0 {
			t.Errorf("GET /debug/pprof/%s = %d with %d bytes, want 200 with a body", p, w.Code, w.Body.Len())
		}
	}
}

// TestVarsReportsStats: /debug/vars shows what Options.Stats returns,
// beside the runtime's figures. That the service's own counters reach
// Stats is app.TestVars's promise, through the real wiring.
func TestVarsReportsStats(t *testing.T) {
	h := Handler(Options{Stats: func() map[string]any { return map[string]any{"log_lines_dropped": 3} }})
	w := httptest.NewRecorder()
	h.ServeHTTP(w, httptest.NewRequest("GET", "/debug/vars", nil))
	var got struct {
		Visitors map[string]float64
		Memstats map[string]any
	}
	if err := json.Unmarshal(w.Body.Bytes(), &got); err != nil {
		t.Fatalf("/debug/vars is not JSON: %v\n%s", err, w.Body)
	}
	if got.Visitors["log_lines_dropped"] != 3 || got.Memstats["HeapAlloc"] == nil {
		t.Errorf("/debug/vars = %s, want visitors.log_lines_dropped 3 and memstats", strings.TrimSpace(w.Body.String()))
	}
}

func TestOptionalEndpoints(t *testing.T) {
	ok := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("served")) })
	tests := []struct {
		name     string
		o        Options
		path     string
		wantCode int
	}{
		{"metrics", Options{Metrics: ok}, "/metrics", 200},
		{"no metrics", Options{}, "/metrics", 404},
		{"flight recorder", Options{FlightRecorder: ok}, "/debug/flightrecorder", 200},
		{"no flight recorder", Options{}, "/debug/flightrecorder", 404},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := httptest.NewRecorder()
			Handler(tt.o).ServeHTTP(w, httptest.NewRequest("GET", tt.path, nil))
			if w.Code != tt.wantCode {
				t.Errorf("GET %s = %d, want %d", tt.path, w.Code, tt.wantCode)
			}
		})
	}
}

// TestVarsAreExpvar checks that /debug/vars is the expvar package's: a
// variable published with expvar appears beside the service's, and the
// latest Handler's Stats are the ones served.
func TestVarsAreExpvar(t *testing.T) {
	expvar.NewInt("admin_test_published").Set(42)
	Handler(Options{Stats: func() map[string]any { return map[string]any{"keys": 1} }})
	h := Handler(Options{Stats: func() map[string]any { return map[string]any{"keys": 2} }})
	w := httptest.NewRecorder()
	h.ServeHTTP(w, httptest.NewRequest("GET", "/debug/vars", nil))
	var got struct {
		Published  int `json:"admin_test_published"`
		Goroutines int
		Cmdline    []string
		Visitors   struct{ Keys int }
	}
	if err := json.Unmarshal(w.Body.Bytes(), &got); err != nil {
		t.Fatalf("/debug/vars is not JSON: %v\n%s", err, w.Body)
	}
	if got.Published != 42 || got.Goroutines == 0 || len(got.Cmdline) == 0 || got.Visitors.Keys != 2 {
		t.Errorf("/debug/vars = %+v, want the expvar published (42), goroutines, cmdline and the latest Stats (keys 2)", got)
	}
}
