package whoami

import (
	"bytes"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"visitors/internal/race"
	"visitors/internal/webtest"
	"visitors/lab/allocs"
)

// The TestWhyAllocs… tests check the cause docs/lab/whoami.md gives for each
// step's allocations: the handler alone, counted exactly (allocs.PerRun,
// not testing.AllocsPerRun, which rounds down), at the start and after
// 100,000 requests (the pool of step 3 and the service's scratch pool
// filled), and with the line the write-up names removed or restored.
// No step parses a form: /whoami reads only the User-Agent header.

// steady is the number of requests served before the steady-state count.
const steady = 100_000

// agent is the User-Agent of every counted request: 31 bytes, so that the
// body (about 80 bytes) outgrows bytes.Buffer's first 64 and needs one
// growth, and every "User-Agent: " line is over the 32 bytes a string
// concatenation that does not escape may keep on the stack.
const agent = "Mozilla/5.0 (X11; Linux x86_64)"

// latency is the latency every counted request reports (a stepping
// clock): 1.234567ms, a 10-byte Duration.String.
const latency = 1234567 * time.Nanosecond

// handlerAllocs returns the allocations of one request to h alone, written
// to a webtest writer that charges net/http's clone of the header map if
// clone is set: at the start (requests 2 to 101) and after steady
// requests.
func handlerAllocs(tb testing.TB, h http.Handler, clone bool) (start, atSteady float64) {
	tb.Helper()
	if race.Enabled {
		tb.Skip("allocation counts are checked without -race: sync.Pool drops items under it")
	}
	w := webtest.NewResponseWriter()
	w.CloneHeader = clone
	r := httptest.NewRequest("GET", "/whoami", nil)
	r.Header.Set("User-Agent", agent)
	serve := func() { w.Reset(); h.ServeHTTP(w, r) }
	start = allocs.PerRun(100, serve)
	for range steady - 101 {
		serve()
	}
	return start, allocs.PerRun(100, serve)
}

// own is the handler's own allocations, without net/http's header clone,
// the same at the start and at steady state; it fails tb otherwise.
func own(tb testing.TB, h http.Handler) float64 {
	tb.Helper()
	start, st := handlerAllocs(tb, h, false)
	if !same(start, st) {
		tb.Errorf("%.2f allocs at the start, %.2f after %d requests; want the same", start, st, steady)
	}
	return st
}

// near reports whether a measured average is n: a background goroutine
// (the test framework, the GC) may add one allocation now and then.
func near(got, n float64) bool { return got >= n && got < n+0.1 }

// same reports whether two measured averages, or a difference of them, are
// equal but for such an allocation.
func same(a, b float64) bool { return math.Abs(a-b) < 0.1 }

// TestWhyAllocsPerStep pins every step's own allocations, the sums of the
// causes the write-up names (each has its own test below), and checks
// that net/http's clone of the header map is 3 more at every step: each
// step, the service included, calls Header().
func TestWhyAllocsPerStep(t *testing.T) {
	want := []float64{
		8, // step 1's and os.Hostname's string (TestWhyAllocsHostnameOnce)
		7, // three lines, the slice of lines, Join, []byte(… + "\n"), Set (TestWhyAllocsStringSlice)
		3, // the buffer's 64 bytes and its one growth, Set (TestWhyAllocsBuffer)
		1, // Set: the pooled buffer keeps its growth (TestWhyAllocsBuffer)
		0, // the service: Content-Type from a preallocated []string (TestWhyAllocsService)
	}
	for i := range Steps {
		t.Run(fmt.Sprintf("step=%d", i), func(t *testing.T) {
			for _, clone := range []bool{false, true} {
				start, st := handlerAllocs(t, newStep(t, i, steppingClock(latency)), clone)
				w := want[i]
				if clone {
					w += 3
				}
				if !near(start, w) || !near(st, w) {
					t.Errorf("step %d, header clone charged %v: %.2f allocs at the start, %.2f after %d requests; want %v", i, clone, start, st, steady, w)
				}
			}
		})
	}
}

// TestWhyAllocsHostnameOnce: os.Hostname (a uname system call on Linux)
// returns a new string on every call, so looking the host name up once
// (0 → 1) saves exactly that allocation: "Hostname: " + host still
// concatenates, at both steps.
func TestWhyAllocsHostnameOnce(t *testing.T) {
	if race.Enabled {
		t.Skip("allocation counts are checked without -race")
	}
	if got := allocs.PerRun(100, func() { os.Hostname() }); got != 1 {
		t.Errorf("os.Hostname: %.2f allocs a call, want 1", got)
	}
	s0 := own(t, newStep(t, 0, steppingClock(latency)))
	s1 := own(t, newStep(t, 1, steppingClock(latency)))
	if !same(s0-s1, 1) {
		t.Errorf("step 0 %.2f, step 1 %.2f allocs; want os.Hostname's 1 between them", s0, s1)
	}
}

// The step1… handlers are Step1 copied with one named cause removed
// (written out: a switch in one handler changes what escapes).

// step1Copy is Step1 copied: the control, which must allocate as Step1.
func step1Copy(now func() time.Time) http.Handler {
	host := hostname()
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := now()
		var lines []string
		lines = append(lines, "User-Agent: "+r.UserAgent())
		lines = append(lines, "Hostname: "+host)
		lines = append(lines, "Latency: "+now().Sub(start).String())
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.Write([]byte(strings.Join(lines, "\n") + "\n"))
	})
}

// step1NoSet is Step1 without Header().Set.
func step1NoSet(now func() time.Time) http.Handler {
	host := hostname()
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := now()
		var lines []string
		lines = append(lines, "User-Agent: "+r.UserAgent())
		lines = append(lines, "Hostname: "+host)
		lines = append(lines, "Latency: "+now().Sub(start).String())
		// no Set
		w.Write([]byte(strings.Join(lines, "\n") + "\n"))
	})
}

// step1LinesFor3 is Step1 with the slice of lines made with room for its 3 lines.
func step1LinesFor3(now func() time.Time) http.Handler {
	host := hostname()
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := now()
		lines := make([]string, 0, 3)
		lines = append(lines, "User-Agent: "+r.UserAgent())
		lines = append(lines, "Hostname: "+host)
		lines = append(lines, "Latency: "+now().Sub(start).String())
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.Write([]byte(strings.Join(lines, "\n") + "\n"))
	})
}

// step1ConstUA is Step1 with a constant User-Agent line: no concatenation.
func step1ConstUA(now func() time.Time) http.Handler {
	host := hostname()
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := now()
		var lines []string
		lines = append(lines, "User-Agent: ua")
		lines = append(lines, "Hostname: "+host)
		lines = append(lines, "Latency: "+now().Sub(start).String())
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.Write([]byte(strings.Join(lines, "\n") + "\n"))
	})
}

// step1ConstHost is Step1 with a constant Hostname line.
func step1ConstHost(now func() time.Time) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := now()
		var lines []string
		lines = append(lines, "User-Agent: "+r.UserAgent())
		lines = append(lines, "Hostname: host")
		lines = append(lines, "Latency: "+now().Sub(start).String())
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.Write([]byte(strings.Join(lines, "\n") + "\n"))
	})
}

// step1ConstLatency is Step1 with a constant Latency line: no concatenation, no Duration.String.
func step1ConstLatency(now func() time.Time) http.Handler {
	host := hostname()
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		now() // the clock read as Step1 reads it at the start
		var lines []string
		lines = append(lines, "User-Agent: "+r.UserAgent())
		lines = append(lines, "Hostname: "+host)
		lines = append(lines, "Latency: 1ms")
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.Write([]byte(strings.Join(lines, "\n") + "\n"))
	})
}

// step1ConstLines is Step1 with the three lines constant and the slice made for them.
func step1ConstLines(now func() time.Time) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		now()
		lines := make([]string, 0, 3)
		lines = append(lines, "User-Agent: ua")
		lines = append(lines, "Hostname: host")
		lines = append(lines, "Latency: 1ms")
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.Write([]byte(strings.Join(lines, "\n") + "\n"))
	})
}

// TestWhyAllocsStringSlice names step 1's 7 allocations, each removed
// alone: Header().Set's value slice (1); each of the three
// concatenated lines (1 each: go build -gcflags=-m reports each
// "escapes to heap", and they allocate with the slice made for 3 too); the slice of
// lines, grown past the 32 bytes kept on the stack for a first append (1:
// 3 strings are 48 bytes); strings.Join's string and the
// []byte(… + "\n") built from it (2). Duration.String allocates nothing:
// its result is copied into the concatenation and does not escape, so a
// constant Latency line saves only the concatenation.
func TestWhyAllocsStringSlice(t *testing.T) {
	clock := func() func() time.Time { return steppingClock(latency) }
	s1 := own(t, newStep(t, 1, clock()))
	if c := own(t, step1Copy(clock())); !same(c, s1) {
		t.Fatalf("step 1 copied: %.2f allocs, step 1 %.2f; want the same", c, s1)
	}
	for _, tt := range []struct {
		name  string
		h     func(func() time.Time) http.Handler
		saves float64
	}{
		{"no Set", step1NoSet, 1},
		{"lines made for 3", step1LinesFor3, 1},
		{"a constant User-Agent line", step1ConstUA, 1},
		{"a constant Hostname line", step1ConstHost, 1},
		{"a constant Latency line", step1ConstLatency, 1},
		{"the three lines constant, made for 3", step1ConstLines, 4},
	} {
		got := own(t, tt.h(clock()))
		if !same(s1-got, tt.saves) {
			t.Errorf("step 1 %.2f allocs, with %s %.2f; want %v between them", s1, tt.name, got, tt.saves)
		}
	}
	// Join and the conversion: the expression alone, from lines held in
	// an array that does not move.
	lines := [3]string{"User-Agent: " + agent, "Hostname: vm", "Latency: " + latency.String()}
	var sink []byte
	if got := allocs.PerRun(100, func() { sink = []byte(strings.Join(lines[:], "\n") + "\n") }); got != 2 {
		t.Errorf(`[]byte(strings.Join(lines, "\n") + "\n"): %.2f allocs, want 2 (Join's string, the []byte)`, got)
	}
	_ = sink
}

// TestWhyAllocsBuffer: step 2's bytes.Buffer allocates twice, its first
// 64 bytes and one growth for the body of about 80 (so 1 → 2 replaces
// step 1's six string allocations with two: 7 → 3); the pool of step 3
// keeps the grown buffer, so only Set is left (3 → 1). writeBody into a
// buffer that has room allocates nothing: Duration.String's result is
// copied by WriteString and stays on the stack.
func TestWhyAllocsBuffer(t *testing.T) {
	if race.Enabled {
		t.Skip("allocation counts are checked without -race")
	}
	host := hostname()
	var body bytes.Buffer
	writeBody(&body, agent, host, latency)
	if n := body.Len(); n <= 64 || n > 128 {
		t.Fatalf("body of %d bytes, want 65 to 128 (one growth past 64): host name %q", n, host)
	}
	var kept []byte
	if got := allocs.PerRun(100, func() {
		var buf bytes.Buffer
		writeBody(&buf, agent, host, latency)
		kept = buf.Bytes()
	}); got != 2 {
		t.Errorf("writeBody into a new bytes.Buffer: %.2f allocs, want 2", got)
	}
	_ = kept
	if got := allocs.PerRun(100, func() { body.Reset(); writeBody(&body, agent, host, latency) }); got != 0 {
		t.Errorf("writeBody into a buffer with room: %.2f allocs, want 0 (Duration.String on the stack)", got)
	}
	s2 := own(t, newStep(t, 2, steppingClock(latency)))
	s3 := own(t, newStep(t, 3, steppingClock(latency)))
	if !same(s2-s3, 2) {
		t.Errorf("step 2 %.2f, step 3 %.2f allocs; want the buffer's 2 between them", s2, s3)
	}
}

// ctText is the service's preallocated Content-Type value.
var ctText = []string{"text/plain; charset=utf-8"}

// TestWhyAllocsService: what the service (step 4) saves on step 3 is
// Header().Set's value slice, 1 allocation: step 3 with Content-Type
// assigned from a preallocated []string, as the service does, allocates
// as the service. Its latency format saves nothing, as Duration.String
// allocated nothing (TestWhyAllocsBuffer). The header clone is charged at
// both (TestWhyAllocsPerStep).
func TestWhyAllocsService(t *testing.T) {
	step3Prealloc := func(now func() time.Time) http.Handler {
		host := hostname()
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			start := now()
			buf := bufPool.Get().(*bytes.Buffer)
			defer bufPool.Put(buf)
			buf.Reset()
			writeBody(buf, r.UserAgent(), host, now().Sub(start))
			w.Header()["Content-Type"] = ctText // was Set
			w.Write(buf.Bytes())
		})
	}
	s3 := own(t, newStep(t, 3, steppingClock(latency)))
	s4 := own(t, newStep(t, 4, steppingClock(latency)))
	sp := own(t, step3Prealloc(steppingClock(latency)))
	if !same(s3-s4, 1) || !same(sp, s4) {
		t.Errorf("step 3 %.2f, step 4 %.2f, step 3 without Set %.2f allocs; want 1 between 3 and 4, and 3 without Set as 4", s3, s4, sp)
	}
}
