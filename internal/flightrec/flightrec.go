// Package flightrec keeps the last seconds of the Go execution trace in
// memory (runtime/trace's flight recorder) and writes them to a file when
// a request was slow, so that the request can be explained after it
// happened without tracing everything.
//
// Tracing costs every request (docs/operations.md has the figure), so a
// [Recorder] is disarmed unless [Options.Always] says otherwise: it is
// armed on demand for a while ([Recorder.Arm]), disarms itself when the
// time is up, and writes snapshots only while armed.
package flightrec

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"runtime/trace"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"

	"visitors/internal/metrics"
)

// Options configure a [Recorder].
type Options struct {
	// Dir receives the snapshots; it is created, if missing, with the
	// first. Required.
	Dir string
	// Window is how much recent execution the recorder keeps, at least.
	// Default 10s.
	Window time.Duration
	// MaxBytes bounds the memory the window takes; past it, the oldest
	// trace data goes first, and the window is shorter. Default 64 MiB.
	MaxBytes uint64
	// Every is the least time between two snapshots taken for slow
	// requests. Default 1m.
	Every time.Duration
	// Keep is how many snapshots are kept in Dir, the newest. Default 10.
	Keep int
	// Log receives a line per snapshot, naming its file.
	Log zerolog.Logger
	// Now is the clock snapshot times and names come from; nil means
	// time.Now.
	Now func() time.Time
	// Always arms the recorder at Start for good: Arm changes nothing,
	// Disarm is refused.
	Always bool
}

// MaxArm is the longest [Recorder.Arm] takes: a day, long enough to
// catch what happens once a day (a peak, a nightly job), short enough
// that an arming forgotten does not cost every request for good; that
// is what Options.Always is for.
const MaxArm = 24 * time.Hour

// Errors of [Recorder.Arm], [Recorder.Disarm] and [Recorder.Snapshot].
var (
	ErrDisarmed = errors.New("the flight recorder is not armed: POST /debug/flightrecorder/arm?for=30m on the admin listener arms it, and it keeps the execution trace from then on")
	ErrAlways   = errors.New("the flight recorder is armed for good by -flight-recorder; restart without it to disarm it")
	ErrArmFor   = fmt.Errorf("the flight recorder arms for a positive duration of at most %v", MaxArm)
	errClosed   = errors.New("the flight recorder is closed")
)

// Recorder is a flight recorder, armed or not. Its methods may be
// called concurrently.
type Recorder struct {
	o     Options
	armed atomic.Bool  // read by Slow on every slow request; set under mu
	last  atomic.Int64 // UnixNano of the last slow-request snapshot, or 0
	taken [2]atomic.Uint64

	mu    sync.Mutex            // guards fr, until, timer and gen, and writing and pruning: one snapshot at a time
	fr    *trace.FlightRecorder // running while armed, else nil
	until time.Time             // when an arming ends; zero: Always
	timer *time.Timer           // disarms at until
	gen   uint64                // arming number: a timer of an earlier arming does nothing

	closeMu sync.Mutex // guards closed, and wg.Add against Close's Wait
	closed  bool
	wg      sync.WaitGroup // snapshots taken in the background
}

// Start returns a flight recorder, armed for good if o.Always, else
// disarmed. Only one can be armed in a process. The caller must call
// Close.
func Start(o Options) (*Recorder, error) {
	if o.Dir == "" {
		return nil, errors.New("flight recorder: no directory for traces")
	}
	if o.Window <= 0 {
		o.Window = 10 * time.Second
	}
	if o.MaxBytes == 0 {
		o.MaxBytes = 64 << 20
	}
	if o.Every <= 0 {
		o.Every = time.Minute
	}
	if o.Keep <= 0 {
		o.Keep = 10
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	r := &Recorder{o: o}
	if o.Always {
		r.mu.Lock()
		defer r.mu.Unlock()
		if err := r.start(); err != nil {
			return nil, err
		}
	}
	return r, nil
}

// start starts the runtime's flight recorder. r.mu must be held.
func (r *Recorder) start() error {
	fr := trace.NewFlightRecorder(trace.FlightRecorderConfig{MinAge: r.o.Window, MaxBytes: r.o.MaxBytes})
	if err := fr.Start(); err != nil {
		return fmt.Errorf("flight recorder: %w", err)
	}
	r.fr = fr
	r.armed.Store(true)
	return nil
}

// stop stops the runtime's flight recorder, if it runs, and the timer of
// the arming. r.mu must be held.
func (r *Recorder) stop() {
	r.gen++
	if r.timer != nil {
		r.timer.Stop()
		r.timer = nil
	}
	r.armed.Store(false)
	if r.fr != nil {
		r.fr.Stop()
		r.fr = nil
	}
}

// Arm arms the recorder for d, from now: it keeps the execution trace,
// and slow requests write snapshots, until then. Arming an armed
// recorder sets its end anew. It returns when the arming ends (zero if
// Always), or [ErrArmFor] if d is not in (0, MaxArm].
func (r *Recorder) Arm(d time.Duration) (time.Time, error) {
	if d <= 0 || d > MaxArm {
		return time.Time{}, ErrArmFor
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.isClosed() {
		return time.Time{}, errClosed
	}
	if r.o.Always {
		return time.Time{}, nil
	}
	if r.fr == nil {
		if err := r.start(); err != nil {
			return time.Time{}, err
		}
	}
	r.gen++
	gen := r.gen
	if r.timer != nil {
		r.timer.Stop()
	}
	r.until = r.o.Now().Add(d)
	r.timer = time.AfterFunc(d, func() { r.expire(gen) })
	r.o.Log.Info().Time("until", r.until).Dur("for", d).Msg("flight recorder armed")
	return r.until, nil
}

// expire disarms the recorder at the end of arming gen, unless it was
// armed anew or disarmed since.
func (r *Recorder) expire(gen uint64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if gen != r.gen || r.fr == nil {
		return
	}
	r.stop()
	r.o.Log.Info().Msg("flight recorder disarmed: its time is up")
}

// Disarm disarms the recorder now; disarming one that is not armed does
// nothing. An Always recorder refuses with [ErrAlways].
func (r *Recorder) Disarm() error {
	if r.o.Always {
		return ErrAlways
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.fr != nil {
		r.stop()
		r.o.Log.Info().Msg("flight recorder disarmed on request")
	}
	return nil
}

// Armed reports whether the recorder is armed.
func (r *Recorder) Armed() bool { return r.armed.Load() }

// isClosed reports whether Close was called.
func (r *Recorder) isClosed() bool {
	r.closeMu.Lock()
	defer r.closeMu.Unlock()
	return r.closed
}

// Slow takes a snapshot for slow request s, in the background, if the
// recorder is armed and none was taken for a slow request less than
// Every ago. It never blocks: it is called on the request's goroutine.
func (r *Recorder) Slow(s metrics.Slow) {
	if !r.armed.Load() {
		return
	}
	now := r.o.Now().UnixNano()
	last := r.last.Load()
	if last != 0 && now-last < int64(r.o.Every) || !r.last.CompareAndSwap(last, now) {
		return
	}
	r.closeMu.Lock()
	defer r.closeMu.Unlock()
	if r.closed { // a request that outlived the shutdown
		return
	}
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		// A mark in the trace, found under "User-defined logs" in go tool trace.
		trace.Log(context.Background(), "visitors", fmt.Sprintf("slow request: %s %s %d in %v", s.Method, s.Path, s.Code, s.Duration))
		path, err := r.snapshot("slow-" + s.Route.String())
		if errors.Is(err, ErrDisarmed) { // disarmed since the request
			return
		}
		if err != nil {
			r.o.Log.Error().Err(err).Str("path", s.Path).Msg("slow request: flight recorder snapshot failed")
			return
		}
		r.taken[0].Add(1)
		r.o.Log.Warn().Str("trace", path).Str("route", s.Route.String()).Str("method", s.Method).Str("path", s.Path).
			Int("status", s.Code).Dur("duration", s.Duration).Msg("slow request: flight recorder snapshot written; read it with go tool trace")
	}()
}

// Snapshot writes the window to a new file in Dir now, and returns its
// path; [ErrDisarmed] if the recorder is not armed.
func (r *Recorder) Snapshot(why string) (string, error) {
	path, err := r.snapshot(why)
	if err == nil {
		r.taken[1].Add(1)
		r.o.Log.Info().Str("trace", path).Msg("flight recorder snapshot written on request")
	}
	return path, err
}

// Snapshots reports how many snapshots were written for slow requests
// and on request.
func (r *Recorder) Snapshots() (slow, requested uint64) {
	return r.taken[0].Load(), r.taken[1].Load()
}

// Prefix starts the name of every snapshot file; pruning removes only
// files named so.
const Prefix = "flight-"

func (r *Recorder) snapshot(why string) (string, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.fr == nil {
		return "", ErrDisarmed
	}
	if err := os.MkdirAll(r.o.Dir, 0o700); err != nil { // traces hold request paths and keys: the owner's alone
		return "", fmt.Errorf("flight recorder snapshot: %w", err)
	}
	name := Prefix + r.o.Now().UTC().Format("20060102T150405.000000000Z") + "-" + why + ".trace"
	path := filepath.Join(r.o.Dir, name)
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return "", fmt.Errorf("flight recorder snapshot: %w", err)
	}
	_, err = r.fr.WriteTo(f)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(path)
		return "", fmt.Errorf("flight recorder snapshot %s: %w", path, err)
	}
	r.prune()
	return path, nil
}

// prune removes all but the newest Keep snapshots. Names sort by time.
func (r *Recorder) prune() {
	ents, err := os.ReadDir(r.o.Dir)
	if err != nil {
		r.o.Log.Error().Err(err).Msg("flight recorder: list -trace-dir")
		return
	}
	var names []string
	for _, e := range ents {
		if n := e.Name(); strings.HasPrefix(n, Prefix) && strings.HasSuffix(n, ".trace") && e.Type().IsRegular() {
			names = append(names, n)
		}
	}
	slices.Sort(names)
	for len(names) > r.o.Keep {
		if err := os.Remove(filepath.Join(r.o.Dir, names[0])); err != nil {
			r.o.Log.Error().Err(err).Msg("flight recorder: remove an old snapshot")
		}
		names = names[1:]
	}
}

// ServeHTTP writes a snapshot to Dir and sends it: GET
// /debug/flightrecorder, then go tool trace on the file. While the
// recorder is disarmed it answers 409 and says how to arm it.
func (r *Recorder) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	path, err := r.Snapshot("request")
	if errors.Is(err, ErrDisarmed) {
		http.Error(w, err.Error(), http.StatusConflict)
		return
	}
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/octet-stream")
	w.Header().Set("Content-Disposition", `attachment; filename="`+filepath.Base(path)+`"`)
	w.Header().Set("X-Trace-File", path)
	http.ServeFile(w, req, path)
}

// Close waits for snapshots in progress and stops the recorder; a slow
// request after it takes no snapshot.
func (r *Recorder) Close() error {
	r.closeMu.Lock()
	r.closed = true
	r.closeMu.Unlock()
	r.wg.Wait()
	r.mu.Lock()
	defer r.mu.Unlock()
	r.stop()
	return nil
}
