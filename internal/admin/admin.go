// Package admin serves the operator's endpoints of visitors: health,
// Prometheus metrics, expvar, the flight recorder and every pprof
// profile. They belong on a separate listener, loopback by default, never
// on the public one.
package admin

import (
	"expvar"
	"net/http"
	"net/http/pprof"
	"runtime"
	"sync"
	"sync/atomic"
)

// Options says what the admin endpoints report.
type Options struct {
	// Health reports why the service is unhealthy, or nil when it is
	// healthy. A nil Health means always healthy.
	Health func() error
	// Warnings returns what an operator should know that does not make
	// the service unhealthy, each a line of /healthz after its status.
	// nil reports none.
	Warnings func() []string
	// Stats returns the service's own counters, published in
	// /debug/vars as "visitors". A nil Stats reports none.
	Stats func() map[string]any
	// Metrics serves /metrics; nil leaves it out.
	Metrics http.Handler
	// FlightRecorder serves /debug/flightrecorder; nil leaves it out.
	FlightRecorder http.Handler
}

// expvar's variables belong to the process: "visitors" and "goroutines"
// are published once, and "visitors" reads the Stats of the latest
// Handler (a process runs one service; tests run several in turn).
var (
	publish sync.Once
	stats   atomic.Pointer[func() map[string]any]
)

func publishVars() {
	expvar.Publish("goroutines", expvar.Func(func() any { return runtime.NumGoroutine() }))
	expvar.Publish("visitors", expvar.Func(func() any {
		if f := stats.Load(); f != nil && *f != nil {
			return (*f)()
		}
		return map[string]any{}
	}))
}

// Handler returns the admin HTTP handler:
//
//	/healthz               200 "ok", or 503 with the reason; then a line per warning
//	/metrics               Prometheus metrics, if Options.Metrics is set
//	/debug/vars            expvar: cmdline, memstats, goroutines and the service's counters
//	/debug/flightrecorder  a flight-recorder snapshot, if Options.FlightRecorder is set
//	/debug/pprof/...       every pprof profile: cpu (profile), heap, allocs,
//	                       goroutine, block, mutex, threadcreate, and trace
func Handler(o Options) http.Handler {
	publish.Do(publishVars)
	stats.Store(&o.Stats)

	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.Header().Set("Cache-Control", "no-store")
		status := "ok\n"
		if o.Health != nil {
			if err := o.Health(); err != nil {
				w.WriteHeader(http.StatusServiceUnavailable)
				status = "unhealthy: " + err.Error() + "\n"
			}
		}
		w.Write([]byte(status))
		if o.Warnings != nil {
			for _, warning := range o.Warnings() {
				w.Write([]byte("warning: " + warning + "\n"))
			}
		}
	})
	mux.Handle("GET /debug/vars", expvar.Handler())
	if o.Metrics != nil {
		mux.Handle("GET /metrics", o.Metrics)
	}
	if o.FlightRecorder != nil {
		mux.Handle("GET /debug/flightrecorder", o.FlightRecorder)
	}
	mux.HandleFunc("/debug/pprof/", pprof.Index) // named profiles: heap, allocs, block, …
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	return mux
}
