package loadtest

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestParseWrk(t *testing.T) {
	out, err := os.ReadFile("testdata/wrk.txt")
	if err != nil {
		t.Fatal(err)
	}
	got, err := parseWrk(string(out))
	want := WrkResult{RPS: 87025.31, P50: 743 * time.Microsecond, P99: 1870 * time.Microsecond, Requests: 261035}
	if err != nil || got != want {
		t.Errorf("parseWrk = %+v, %v; want %+v", got, err, want)
	}
}

func TestParseWrkRejectsErrors(t *testing.T) {
	for _, extra := range []string{"  Non-2xx or 3xx responses: 12\n", "  Socket errors: connect 0, read 3, write 0, timeout 0\n"} {
		out, _ := os.ReadFile("testdata/wrk.txt")
		if _, err := parseWrk(string(out) + extra); err == nil {
			t.Errorf("parseWrk accepted a run with %q", strings.TrimSpace(extra))
		}
	}
	if _, err := parseWrk("garbage"); err == nil {
		t.Error("parseWrk accepted output without Requests/sec")
	}
}

// TestConstantRate runs the open-loop generator against a real server
// for a moment: it sends the scheduled number of requests, and a server
// that stalls is charged for the requests queued behind it.
func TestConstantRate(t *testing.T) {
	ts := httptest.NewServer(new(bareHandler))
	defer ts.Close()
	r, err := constantRate(context.Background(), ts.URL, 500, time.Second, 4)
	if err != nil {
		t.Fatal(err)
	}
	if r.Sent != 500 || r.Errors != 0 || r.P50 <= 0 || r.P99 < r.P50 {
		t.Errorf("constantRate(500/s, 1s) = %+v, want 500 sent, no errors, ordered percentiles", r)
	}
}

// stallingHandler stops the world for d once, on its first request after
// armed is closed, as a GC pause or a disk stall would.
type stallingHandler struct {
	mu   sync.Mutex
	once sync.Once
	d    time.Duration
}

func (h *stallingHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h.mu.Lock()
	h.once.Do(func() { time.Sleep(h.d) })
	h.mu.Unlock()
	w.Write(bareBody)
}

func TestConstantRateChargesStalls(t *testing.T) {
	ts := httptest.NewServer(&stallingHandler{d: 300 * time.Millisecond})
	defer ts.Close()
	r, err := constantRate(context.Background(), ts.URL, 500, time.Second, 4)
	if err != nil {
		t.Fatal(err)
	}
	// About 150 requests fell due during the stall; measured from when
	// they were due, the slowest 1% waited most of it.
	if r.P99 < 100*time.Millisecond {
		t.Errorf("p99 = %v after a 300ms stall at 500 req/s, want ≥ 100ms (coordinated omission?)", r.P99)
	}
}

// TestProcCPU: the CPU time /proc reports for this process grows as it
// works, in steps of a clock tick.
func TestProcCPU(t *testing.T) {
	before, err := procCPU(os.Getpid())
	if err != nil {
		t.Skipf("no /proc: %v", err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for x := 0; ; x++ {
		if x%1_000_000 == 0 {
			after, err := procCPU(os.Getpid())
			if err != nil {
				t.Fatal(err)
			}
			if d := after - before; d >= 3*clockTick {
				if d%clockTick != 0 {
					t.Errorf("CPU time grew by %v, not a whole number of ticks", d)
				}
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("after 10s of work, CPU time grew by %v", after-before)
			}
		}
	}
	if got := (WrkResult{CPU: time.Second, Requests: 1000}).CPUPerRequest(); got != time.Millisecond {
		t.Errorf("CPUPerRequest() = %v, want 1ms", got)
	}
}
