// Package admin serves the operator's endpoints of visitors: health,
// runtime statistics and every pprof profile. They belong on a separate
// listener, loopback by default, never on the public one.
package admin

import (
	"encoding/json"
	"net/http"
	"net/http/pprof"
	"runtime"
)

// Options says what the admin endpoints report.
type Options struct {
	// Health reports why the service is unhealthy, or nil when it is
	// healthy. A nil Health means always healthy.
	Health func() error
	// Stats returns the service's own counters for /debug/vars.
	// A nil Stats reports none.
	Stats func() map[string]any
}

// Handler returns the admin HTTP handler:
//
//	/healthz          200 "ok", or 503 with the reason
//	/debug/vars       JSON: the service's counters and runtime.MemStats
//	/debug/pprof/...  every pprof profile: cpu (profile), heap, allocs,
//	                  goroutine, block, mutex, threadcreate, and trace
func Handler(o Options) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.Header().Set("Cache-Control", "no-store")
		if o.Health != nil {
			if err := o.Health(); err != nil {
				w.WriteHeader(http.StatusServiceUnavailable)
				w.Write([]byte("unhealthy: " + err.Error() + "\n"))
				return
			}
		}
		w.Write([]byte("ok\n"))
	})
	mux.HandleFunc("GET /debug/vars", func(w http.ResponseWriter, r *http.Request) {
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		vars := map[string]any{"memstats": ms, "goroutines": runtime.NumGoroutine()}
		if o.Stats != nil {
			vars["visitors"] = o.Stats()
		}
		w.Header().Set("Content-Type", "application/json")
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		enc.Encode(vars)
	})
	mux.HandleFunc("/debug/pprof/", pprof.Index) // named profiles: heap, allocs, block, …
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	return mux
}
