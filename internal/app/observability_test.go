package app

import (
	"context"
	"fmt"
	"io"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"visitors/internal/flightrec"
	"visitors/internal/servertest"
	"visitors/internal/store"
	"visitors/internal/webtest"
)

// sleepyStore makes every /hi visit take d: the test-only way to a slow
// request.
type sleepyStore struct {
	store.Store
	d time.Duration
}

func (s sleepyStore) Hit(ctx context.Context) (uint64, error) {
	time.Sleep(s.d)
	return s.Store.Hit(ctx)
}

// mustRunConfig runs cfg, on free ports, until the test ends, and
// returns the public and admin addresses and the log.
func mustRunConfig(t *testing.T, cfg Config) (addr, admin string, out *servertest.Buffer) {
	t.Helper()
	// Sockets made here and handed over as fd:N: no port is found
	// free, closed, and taken by someone else before Run binds it.
	fd, pub, err := servertest.ListenFD()
	if err != nil {
		t.Fatal(err)
	}
	afd, adm, err := servertest.ListenFD()
	if err != nil {
		t.Fatal(err)
	}
	cfg.Addr, cfg.AdminAddr = fmt.Sprintf("fd:%d", fd), fmt.Sprintf("fd:%d", afd)
	ctx, cancel := context.WithCancel(context.Background())
	out = new(servertest.Buffer)
	done := make(chan error, 1)
	go func() { done <- Run(ctx, cfg, DefaultTimeouts, out) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("Run() = %v", err)
			}
		case <-time.After(cfg.ShutdownTimeout + stopSlack):
			t.Errorf("Run did not return within %v of its context's end (-shutdown-timeout %v)", cfg.ShutdownTimeout+stopSlack, cfg.ShutdownTimeout)
		}
	})
	// The sockets accept from the start: only an answer says Run serves.
	// The public listener is not asked, so that no request but the
	// test's shows in its metrics.
	waitAnswers(t, done, "http://"+adm+"/healthz", 30*time.Second, "the admin listener")
	return pub, adm, out
}

func mustGetBody(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := webtest.Client.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(b)
}

// TestSlowRequestSnapshot makes /hi slow and checks that the flight
// recorder writes one snapshot, that the log names it and the request,
// and that it parses as a Go execution trace with the request marked.
func TestSlowRequestSnapshot(t *testing.T) {
	data := t.TempDir()
	addr, admin, out := mustRunConfig(t, Config{
		LogLevel: zerolog.InfoLevel, ShutdownTimeout: 5 * time.Second, Store: StoreMemory, Data: data,
		Metrics: true, FlightRecorder: true, FlightRecorderWindow: 10 * time.Second, FlightRecorderBytes: 32 << 20,
		// A threshold far above what a fast request takes on a loaded
		// machine: with 100ms, a /whoami slowed by other work once made
		// three slow requests of two.
		SlowRequest: time.Second, TraceEvery: time.Minute, TraceKeep: 10,
		Test: &TestHooks{WrapStore: func(s store.Store) store.Store { return sleepyStore{s, 1100 * time.Millisecond} }},
	})
	for range 2 { // the second is within -trace-every: no second snapshot
		if code, body := mustGetBody(t, "http://"+addr+"/hi"); code != 200 {
			t.Fatalf("GET /hi = %d %s", code, body)
		}
	}
	if code, _ := mustGetBody(t, "http://"+addr+"/whoami"); code != 200 { // fast: no snapshot
		t.Fatalf("GET /whoami = %d", code)
	}
	pattern := filepath.Join(data, "traces", flightrec.Prefix+"*-slow-hi.trace")
	var files []string
	for deadline := time.Now().Add(10 * time.Second); len(files) == 0 && time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		files, _ = filepath.Glob(pattern)
	}
	if len(files) != 1 {
		t.Fatalf("snapshots %s: %v, want one\nlog:\n%s", pattern, files, out.String())
	}
	var logLine string
	for deadline := time.Now().Add(5 * time.Second); logLine == "" && time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		for l := range strings.SplitSeq(out.String(), "\n") {
			if strings.Contains(l, `"trace":"`+files[0]+`"`) {
				logLine = l
			}
		}
	}
	if !strings.Contains(logLine, `"path":"/hi"`) || !strings.Contains(logLine, `"status":200`) {
		t.Errorf("no log line names the snapshot %s and the request GET /hi:\n%s", files[0], out.String())
	}
	trace, err := exec.Command("go", "tool", "trace", "-d=parsed", files[0]).CombinedOutput()
	if err != nil {
		t.Fatalf("go tool trace -d=parsed %s: %v\n%.2000s", files[0], err, trace)
	}
	if !strings.Contains(string(trace), "slow request: GET /hi 200 in") {
		t.Errorf("the snapshot has no mark of the slow request")
	}

	_, metrics := mustGetBody(t, "http://"+admin+"/metrics")
	for _, want := range []string{
		"visitors_http_slow_requests_total 2\n",
		`visitors_flight_recorder_snapshots_total{trigger="slow_request"} 1` + "\n",
		`visitors_http_requests_total{code="200",route="hi"} 2` + "\n",
	} {
		if !strings.Contains(metrics, want) {
			t.Errorf("/metrics has no %q", want)
		}
	}
	if code, body := mustGetBody(t, "http://"+admin+"/debug/flightrecorder"); code != 200 || len(body) == 0 {
		t.Errorf("GET /debug/flightrecorder = %d with %d bytes, want 200 and a trace", code, len(body))
	}
	if all, _ := filepath.Glob(filepath.Join(data, "traces", flightrec.Prefix+"*.trace")); len(all) != 2 {
		t.Errorf("after an on-demand snapshot, %d files, want 2: %v", len(all), all)
	}
}

// TestObservabilityOff: with -metrics=false and -flight-recorder=false
// there is no /metrics, /debug/flightrecorder refuses with 409 while
// the recorder is not armed (issue 26: it is armed on demand), and
// nothing is written to -trace-dir.
func TestObservabilityOff(t *testing.T) {
	data := t.TempDir()
	_, admin, _ := mustRunConfig(t, Config{LogLevel: zerolog.InfoLevel, ShutdownTimeout: 5 * time.Second, Store: StoreMemory, Data: data,
		SlowRequest: 250 * time.Millisecond, FlightRecorderWindow: time.Second, TraceEvery: time.Minute, TraceKeep: 1})
	for p, want := range map[string]int{"/metrics": 404, "/debug/flightrecorder": 409} {
		if code, _ := mustGetBody(t, "http://"+admin+p); code != want {
			t.Errorf("GET %s = %d, want %d", p, code, want)
		}
	}
	if m, _ := filepath.Glob(filepath.Join(data, "traces")); len(m) != 0 {
		t.Errorf("-trace-dir created with the flight recorder off")
	}
}

// TestMetricsAndFlightRecorderApart: -metrics and -flight-recorder do
// not need each other. With metrics on and the recorder off, /metrics
// counts requests and slow requests; with the recorder on and metrics
// off, a slow request still writes a snapshot (both learn of a request
// from the same timing of it) and there is no /metrics.
func TestMetricsAndFlightRecorderApart(t *testing.T) {
	for _, tt := range []struct {
		name                    string
		metrics, flightRecorder bool
	}{
		{"metrics without the flight recorder", true, false},
		{"the flight recorder without metrics", false, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			data := t.TempDir()
			addr, admin, out := mustRunConfig(t, Config{
				LogLevel: zerolog.InfoLevel, ShutdownTimeout: 5 * time.Second, Store: StoreMemory, Data: data,
				Metrics: tt.metrics, FlightRecorder: tt.flightRecorder,
				FlightRecorderWindow: 10 * time.Second, FlightRecorderBytes: 32 << 20,
				// Every request here is a slow /hi.
				SlowRequest: 200 * time.Millisecond, TraceEvery: time.Minute, TraceKeep: 10,
				Test: &TestHooks{WrapStore: func(s store.Store) store.Store { return sleepyStore{s, 300 * time.Millisecond} }},
			})
			if code, body := mustGetBody(t, "http://"+addr+"/hi"); code != 200 {
				t.Fatalf("GET /hi = %d %s", code, body)
			}

			code, metrics := mustGetBody(t, "http://"+admin+"/metrics")
			if !tt.metrics {
				if code != 404 {
					t.Errorf("GET /metrics with -metrics=false = %d, want 404", code)
				}
			} else {
				if code != 200 {
					t.Fatalf("GET /metrics = %d, want 200", code)
				}
				for _, want := range []string{
					`visitors_http_requests_total{code="200",route="hi"} 1` + "\n",
					"visitors_http_slow_requests_total 1\n",
				} {
					if !strings.Contains(metrics, want) {
						t.Errorf("/metrics has no %q", want)
					}
				}
			}

			pattern := filepath.Join(data, "traces", flightrec.Prefix+"*-slow-hi.trace")
			var files []string
			if tt.flightRecorder {
				for deadline := time.Now().Add(10 * time.Second); len(files) == 0 && time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
					files, _ = filepath.Glob(pattern)
				}
				if len(files) != 1 {
					t.Errorf("snapshots %s: %v, want one\nlog:\n%s", pattern, files, out.String())
				}
			} else {
				if code, _ := mustGetBody(t, "http://"+admin+"/debug/flightrecorder"); code != 409 {
					t.Errorf("GET /debug/flightrecorder with -flight-recorder=false, not armed = %d, want 409", code)
				}
				if m, _ := filepath.Glob(filepath.Join(data, "traces")); len(m) != 0 {
					t.Errorf("-trace-dir created with the flight recorder off")
				}
			}
		})
	}
}

// TestAdminWriteTimeoutCutsStalledReader: a client of the admin listener
// that sends requests but never reads the responses holds a connection,
// and a goroutine, only until the admin listener's write deadline,
// Timeouts.AdminWrite (its own: the public one is a minute here).
func TestAdminWriteTimeoutCutsStalledReader(t *testing.T) {
	to := longTimeouts()
	to.AdminWrite = 200 * time.Millisecond
	r := mustStart(t, testConfig(), to, io.Discard)
	// n responses of /debug/vars (some KiB each, with the runtime's
	// memstats) are well over the server's send buffer.
	expectStalledReaderCut(t, r.adminAddr, "/debug/vars", to.AdminWrite)
}

// TestObserversWithoutData: with no -data (the memory store), -metrics
// still counts the public requests on the admin listener's /metrics,
// and -trace-dir still gives the admin listener a flight recorder to
// arm; with neither -data nor -trace-dir there is no recorder, as it
// has nowhere to write. It catches /metrics left out when no flight
// recorder runs, and the recorder's -trace-dir test read the wrong way
// round.
func TestObserversWithoutData(t *testing.T) {
	for _, tt := range []struct {
		name        string
		metrics     bool
		traceDir    bool
		wantMetrics int
		wantFR      int
	}{
		{"-metrics, no -trace-dir", true, false, 200, 404},
		{"-trace-dir, no -metrics", false, true, 404, 409}, // 409: there, not armed
	} {
		t.Run(tt.name, func(t *testing.T) {
			cfg := Config{LogLevel: zerolog.InfoLevel, ShutdownTimeout: 5 * time.Second, Store: StoreMemory,
				Metrics: tt.metrics, FlightRecorderWindow: time.Second, TraceEvery: time.Minute, TraceKeep: 1}
			if tt.traceDir {
				cfg.TraceDir = t.TempDir()
			}
			addr, admin, _ := mustRunConfig(t, cfg)
			if code, body := mustGetBody(t, "http://"+addr+"/hi"); code != 200 {
				t.Fatalf("GET /hi = %d %s", code, body)
			}
			code, body := mustGetBody(t, "http://"+admin+"/metrics")
			if code != tt.wantMetrics {
				t.Errorf("GET /metrics = %d, want %d", code, tt.wantMetrics)
			}
			if want := `visitors_http_requests_total{code="200",route="hi"} 1` + "\n"; code == 200 && !strings.Contains(body, want) {
				t.Errorf("/metrics has no %q:\n%s", want, body)
			}
			if code, _ := mustGetBody(t, "http://"+admin+"/debug/flightrecorder"); code != tt.wantFR {
				t.Errorf("GET /debug/flightrecorder = %d, want %d", code, tt.wantFR)
			}
		})
	}
}
