package admin

import (
	"encoding/json"
	"errors"
	"expvar"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"visitors/internal/flightrec"
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
		{"flight recorder", Options{FlightRecorder: &fakeRecorder{Handler: ok}}, "/debug/flightrecorder", 200},
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

// fakeRecorder is a FlightRecorder that records what it was told.
type fakeRecorder struct {
	http.Handler
	armed  time.Duration // the last Arm's, 0 after Disarm
	always bool
}

func (f *fakeRecorder) Arm(d time.Duration) (time.Time, error) {
	f.armed = d
	if f.always {
		return time.Time{}, nil
	}
	return time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC), nil
}

func (f *fakeRecorder) Disarm() error {
	if f.always {
		return errors.New("armed for good")
	}
	f.armed = 0
	return nil
}

// TestArmFlightRecorder: POST /debug/flightrecorder/arm?for= arms the
// recorder for that long and DELETE disarms it; a for= that is missing,
// unparsable, zero, negative or past MaxArm is a 400 that says why, and
// leaves the recorder as it was; any other method is a 405 naming the
// two.
func TestArmFlightRecorder(t *testing.T) {
	fr := &fakeRecorder{}
	h := Handler(Options{FlightRecorder: fr})
	do := func(method, target string) (int, string, http.Header) {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, httptest.NewRequest(method, target, nil))
		return w.Code, w.Body.String(), w.Header()
	}
	for _, tt := range []struct{ query, want string }{
		{"", "for= is missing"},
		{"?for=", "for= is missing"},
		{"?for=soon", "for= is not a duration"},
		{"?for=30", "for= is not a duration"},
		{"?for=0s", `for="0s": want a positive duration`},
		{"?for=-5m", `for="-5m": want a positive duration`},
		{"?for=24h0m1s", `for="24h0m1s": at most 24h0m0s`},
		{"?for=%3Cb%3E1h", "for= is not a duration"},
	} {
		code, body, _ := do("POST", "/debug/flightrecorder/arm"+tt.query)
		if code != 400 || !strings.Contains(body, tt.want) || strings.Contains(body, "<b>") {
			t.Errorf("POST arm%s = %d %q, want 400 saying %q", tt.query, code, body, tt.want)
		}
		if fr.armed != 0 {
			t.Fatalf("POST arm%s armed it for %v", tt.query, fr.armed)
		}
	}
	if code, body, _ := do("POST", "/debug/flightrecorder/arm?for=30m"); code != 200 || fr.armed != 30*time.Minute || body != "armed until 2026-01-02T03:04:05Z (for 30m0s)\n" {
		t.Errorf("POST arm?for=30m = %d %q, armed %v; want 200, 30m", code, body, fr.armed)
	}
	if code, body, _ := do("POST", "/debug/flightrecorder/arm?for=24h"); code != 200 || fr.armed != flightrec.MaxArm {
		t.Errorf("POST arm?for=24h = %d %q, armed %v; want 200, 24h", code, body, fr.armed)
	}
	if code, body, _ := do("DELETE", "/debug/flightrecorder/arm"); code != 200 || fr.armed != 0 || body != "disarmed\n" {
		t.Errorf("DELETE arm = %d %q, armed %v; want 200, disarmed", code, body, fr.armed)
	}
	for _, m := range []string{"GET", "PUT", "PATCH"} {
		code, body, hdr := do(m, "/debug/flightrecorder/arm?for=30m")
		if code != 405 || hdr.Get("Allow") != "POST, DELETE" || !strings.Contains(body, "POST ?for=30m arms") {
			t.Errorf("%s arm = %d %q, Allow %q; want 405, Allow POST, DELETE", m, code, body, hdr.Get("Allow"))
		}
	}
	fr.always = true
	if code, body, _ := do("DELETE", "/debug/flightrecorder/arm"); code != 409 || !strings.Contains(body, "armed for good") {
		t.Errorf("DELETE arm of an always-on recorder = %d %q, want 409", code, body)
	}
	if code, body, _ := do("POST", "/debug/flightrecorder/arm?for=1m"); code != 200 || body != "armed for good by -flight-recorder\n" {
		t.Errorf("POST arm of an always-on recorder = %d %q, want 200 armed for good", code, body)
	}
}
