// Package admin serves the operator's endpoints of visitors: health,
// Prometheus metrics, expvar, the flight recorder and every pprof
// profile. They belong on a separate listener, loopback by default, never
// on the public one.
package admin

import (
	"errors"
	"expvar"
	"fmt"
	"net/http"
	"net/http/pprof"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"visitors/internal/flightrec"
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
	// FlightRecorder serves /debug/flightrecorder and its arming; nil
	// leaves them out.
	FlightRecorder FlightRecorder
}

// FlightRecorder is the flight recorder as the admin endpoints drive it
// (flightrec.Recorder is one): ServeHTTP answers GET
// /debug/flightrecorder with a snapshot; Arm and Disarm arm it for a
// while and disarm it.
type FlightRecorder interface {
	http.Handler
	Arm(d time.Duration) (until time.Time, err error)
	Disarm() error
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
//	/debug/flightrecorder/arm?for=30m
//	                       POST arms the flight recorder for that long, DELETE disarms it
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
	if fr := o.FlightRecorder; fr != nil {
		mux.Handle("GET /debug/flightrecorder", fr)
		mux.HandleFunc("POST /debug/flightrecorder/arm", func(w http.ResponseWriter, r *http.Request) { arm(w, r, fr) })
		mux.HandleFunc("DELETE /debug/flightrecorder/arm", func(w http.ResponseWriter, r *http.Request) { disarm(w, fr) })
		mux.HandleFunc("/debug/flightrecorder/arm", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Allow", "POST, DELETE")
			http.Error(w, r.Method+" /debug/flightrecorder/arm: POST ?for=30m arms the flight recorder, DELETE disarms it", http.StatusMethodNotAllowed)
		})
	}
	mux.HandleFunc("/debug/pprof/", pprof.Index) // named profiles: heap, allocs, block, …
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	return mux
}

// arm arms fr for the duration of the query's for, or answers 400 and
// why.
func arm(w http.ResponseWriter, r *http.Request, fr FlightRecorder) {
	v := r.URL.Query().Get("for")
	d, err := time.ParseDuration(v)
	switch {
	case v == "":
		err = errors.New("for= is missing: say how long to arm, such as ?for=30m")
	case err != nil:
		err = errors.New("for= is not a duration: want one such as 30m or 2h") // not echoed: it may be markup
	case d <= 0:
		err = fmt.Errorf("for=%s: want a positive duration, such as 30m", strconv.Quote(v))
	case d > flightrec.MaxArm:
		err = fmt.Errorf("for=%s: at most %v; an arming costs every request while it lasts (-flight-recorder arms it for good)", strconv.Quote(v), flightrec.MaxArm)
	}
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	until, err := fr.Arm(d)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	if until.IsZero() {
		w.Write([]byte("armed for good by -flight-recorder\n"))
		return
	}
	fmt.Fprintf(w, "armed until %s (for %v)\n", until.UTC().Format(time.RFC3339), d)
}

// disarm disarms fr, or answers 409 if -flight-recorder keeps it armed.
func disarm(w http.ResponseWriter, fr FlightRecorder) {
	if err := fr.Disarm(); err != nil {
		http.Error(w, err.Error(), http.StatusConflict)
		return
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.Write([]byte("disarmed\n"))
}
