package admin

import (
	"encoding/json"
	"errors"
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

func TestVars(t *testing.T) {
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
