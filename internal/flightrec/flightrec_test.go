package flightrec

import (
	"bytes"
	"errors"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"visitors/internal/metrics"
	"visitors/internal/servertest"
	"visitors/internal/store/storetest"
)

func mustStart(t *testing.T, o Options) *Recorder {
	t.Helper()
	o.Always = true
	r, err := Start(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

// traces lists the snapshots in dir, oldest first.
func traces(t *testing.T, dir string) []string {
	t.Helper()
	m, err := filepath.Glob(filepath.Join(dir, Prefix+"*.trace"))
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(m)
	return m
}

// mustParseTrace runs go tool trace -d=parsed on path and returns its
// output: the trace's events, if it is a Go execution trace.
func mustParseTrace(t *testing.T, path string) string {
	t.Helper()
	out, err := exec.Command("go", "tool", "trace", "-d=parsed", path).CombinedOutput()
	if err != nil {
		t.Fatalf("go tool trace -d=parsed %s: %v\n%.2000s", path, err, out)
	}
	return string(out)
}

func TestSlowWritesOneSnapshotPerEvery(t *testing.T) {
	dir := t.TempDir()
	now := storetest.NewClock(storetest.At(2, "01:00"))
	var log servertest.Buffer
	r := mustStart(t, Options{Dir: dir, Every: time.Minute, Log: zerolog.New(&log), Now: now.Now})
	slow := metrics.Slow{Route: metrics.Hi, Method: "GET", Path: "/hi", Code: 200, Duration: 300 * time.Millisecond}

	r.Slow(slow)
	r.wg.Wait()
	now.Add(59 * time.Second)
	r.Slow(slow) // within Every of the first: none
	r.wg.Wait()
	if got := traces(t, dir); len(got) != 1 {
		t.Fatalf("after two slow requests in a minute, %d snapshots, want 1: %v", len(got), got)
	}
	now.Add(time.Second)
	r.Slow(slow)
	r.wg.Wait()
	got := traces(t, dir)
	if len(got) != 2 {
		t.Fatalf("a minute later, %d snapshots, want 2: %v", len(got), got)
	}
	if s, _ := r.Snapshots(); s != 2 {
		t.Errorf("Snapshots() slow = %d, want 2", s)
	}
	if !strings.Contains(log.String(), got[1]) || !strings.Contains(log.String(), `"path":"/hi"`) {
		t.Errorf("log does not name the file %s and the request:\n%s", got[1], log.String())
	}
	if out := mustParseTrace(t, got[1]); !strings.Contains(out, "slow request: GET /hi 200 in 300ms") {
		t.Errorf("the snapshot has no mark of the slow request; go tool trace -d=parsed printed:\n%.2000s", out)
	}
}

func TestKeepsTheNewest(t *testing.T) {
	dir := t.TempDir()
	now := storetest.NewClock(storetest.At(2, "01:00"))
	other := filepath.Join(dir, "notes.txt") // not ours: never removed
	if err := os.WriteFile(other, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	var logged bytes.Buffer
	r := mustStart(t, Options{Dir: dir, Keep: 3, Log: zerolog.New(&logged), Now: now.Now})
	var written []string
	for range 5 {
		p, err := r.Snapshot("test")
		if err != nil {
			t.Fatal(err)
		}
		written = append(written, p)
		now.Add(time.Second)
	}
	if got, want := traces(t, dir), written[2:]; !slices.Equal(got, want) {
		t.Errorf("kept %v, want the newest 3: %v", got, want)
	}
	if _, err := os.Stat(other); err != nil {
		t.Errorf("a file that is not a snapshot was touched: %v", err)
	}
	if strings.Contains(logged.String(), `"level":"error"`) {
		t.Errorf("pruning logged an error:\n%s", logged.String())
	}
}

// TestStartDefaults: options left zero (or negative) take the documented
// defaults, and set ones are kept.
func TestStartDefaults(t *testing.T) {
	tests := []struct {
		in   Options
		want Options
	}{
		{Options{}, Options{Window: 10 * time.Second, MaxBytes: 64 << 20, Every: time.Minute, Keep: 10}},
		{Options{Window: -1, Every: -1, Keep: -1}, Options{Window: 10 * time.Second, MaxBytes: 64 << 20, Every: time.Minute, Keep: 10}},
		{Options{Window: time.Second, MaxBytes: 1 << 20, Every: time.Second, Keep: 2}, Options{Window: time.Second, MaxBytes: 1 << 20, Every: time.Second, Keep: 2}},
	}
	for _, tt := range tests {
		tt.in.Dir = t.TempDir()
		r, err := Start(tt.in)
		if err != nil {
			t.Fatal(err)
		}
		got := r.o
		r.Close()
		if got.Window != tt.want.Window || got.MaxBytes != tt.want.MaxBytes || got.Every != tt.want.Every || got.Keep != tt.want.Keep || got.Now == nil {
			t.Errorf("Start(%+v) used %+v, want %+v", tt.in, got, tt.want)
		}
	}
}

func TestServeHTTP(t *testing.T) {
	dir := t.TempDir()
	r := mustStart(t, Options{Dir: dir, Log: zerolog.Nop()})
	w := httptest.NewRecorder()
	r.ServeHTTP(w, httptest.NewRequest("GET", "/debug/flightrecorder", nil))
	got := traces(t, dir)
	if w.Code != 200 || len(got) != 1 {
		t.Fatalf("GET /debug/flightrecorder = %d, %d files; want 200 and one file", w.Code, len(got))
	}
	file, err := os.ReadFile(got[0])
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(w.Body.Bytes(), file) || w.Header().Get("X-Trace-File") != got[0] {
		t.Errorf("the response is not the file it names (%d bytes, file %d bytes, X-Trace-File %q)", w.Body.Len(), len(file), w.Header().Get("X-Trace-File"))
	}
	mustParseTrace(t, got[0])
	if _, n := r.Snapshots(); n != 1 {
		t.Errorf("Snapshots() on demand = %d, want 1", n)
	}
}

// TestSlowAfterClose: a request that outlives the shutdown takes no
// snapshot, and does not race with Close.
func TestSlowAfterClose(t *testing.T) {
	dir := t.TempDir()
	r, err := Start(Options{Dir: dir, Log: zerolog.Nop(), Always: true})
	if err != nil {
		t.Fatal(err)
	}
	r.Close()
	r.Slow(metrics.Slow{Route: metrics.Hi, Method: "GET", Path: "/hi", Code: 200, Duration: time.Second})
	r.wg.Wait()
	if got := traces(t, dir); len(got) != 0 {
		t.Errorf("a slow request after Close wrote %v", got)
	}
}

// TestArmedOnDemand: a recorder started without Always is disarmed: a
// slow request writes nothing and a snapshot is refused. Armed, it
// writes; disarmed, it stops; armed briefly, it disarms itself. Arm
// refuses a duration that is not positive or is past MaxArm.
func TestArmedOnDemand(t *testing.T) {
	dir := t.TempDir()
	r, err := Start(Options{Dir: dir, Every: time.Nanosecond, Log: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	slow := metrics.Slow{Route: metrics.Hi, Method: "GET", Path: "/hi", Code: 200, Duration: time.Second}
	if r.Armed() {
		t.Fatal("armed at start without Always")
	}
	r.Slow(slow)
	r.wg.Wait()
	if _, err := r.Snapshot("test"); !errors.Is(err, ErrDisarmed) {
		t.Errorf("Snapshot disarmed: %v, want ErrDisarmed", err)
	}
	w := httptest.NewRecorder()
	r.ServeHTTP(w, httptest.NewRequest("GET", "/debug/flightrecorder", nil))
	if w.Code != 409 || !strings.Contains(w.Body.String(), "/debug/flightrecorder/arm") {
		t.Errorf("GET /debug/flightrecorder disarmed = %d %q, want 409 saying how to arm", w.Code, w.Body)
	}
	if got := traces(t, dir); len(got) != 0 {
		t.Fatalf("disarmed, it wrote %v", got)
	}
	for _, d := range []time.Duration{0, -time.Second, MaxArm + time.Nanosecond} {
		if _, err := r.Arm(d); !errors.Is(err, ErrArmFor) || r.Armed() {
			t.Errorf("Arm(%v) = %v, armed %v; want ErrArmFor, disarmed", d, err, r.Armed())
		}
	}

	if _, err := r.Arm(MaxArm); err != nil || !r.Armed() { // the longest taken
		t.Fatalf("Arm(MaxArm) = %v, armed %v", err, r.Armed())
	}
	if _, err := r.Arm(time.Minute); err != nil || !r.Armed() {
		t.Fatalf("Arm(1m) = %v, armed %v", err, r.Armed())
	}
	r.Slow(slow)
	r.wg.Wait()
	if got := traces(t, dir); len(got) != 1 {
		t.Fatalf("armed, a slow request wrote %v, want one snapshot", got)
	}
	if err := r.Disarm(); err != nil || r.Armed() {
		t.Fatalf("Disarm() = %v, armed %v", err, r.Armed())
	}
	r.Slow(slow)
	r.wg.Wait()
	if got := traces(t, dir); len(got) != 1 {
		t.Fatalf("disarmed again, %v, want the one snapshot of before", got)
	}

	if _, err := r.Arm(20 * time.Millisecond); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(10 * time.Second); r.Armed() && time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
	}
	if r.Armed() {
		t.Fatal("armed for 20ms, still armed 10s later")
	}
	if _, err := r.Arm(time.Minute); err != nil || !r.Armed() {
		t.Fatalf("armed again after expiring: %v, armed %v", err, r.Armed())
	}
}

// TestStaleTimerLeavesANewArmingAlone: the timer of an arming that was
// disarmed (one that fired while Disarm and a new Arm held the lock)
// does not disarm the arming after it; its own arming's end does.
func TestStaleTimerLeavesANewArmingAlone(t *testing.T) {
	r, err := Start(Options{Dir: t.TempDir(), Log: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if _, err := r.Arm(time.Hour); err != nil {
		t.Fatal(err)
	}
	r.mu.Lock()
	first := r.gen
	r.mu.Unlock()
	if err := r.Disarm(); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Arm(time.Hour); err != nil {
		t.Fatal(err)
	}
	r.expire(first) // the first arming's timer, late
	if !r.Armed() {
		t.Fatal("the timer of a disarmed arming disarmed the arming after it")
	}
	r.mu.Lock()
	second := r.gen
	r.mu.Unlock()
	r.expire(second)
	if r.Armed() {
		t.Error("the arming's own timer did not disarm it")
	}
}

// TestAlwaysCannotBeDisarmed: with Always, the recorder is armed from
// Start, Arm keeps it so, and Disarm is refused.
func TestAlwaysCannotBeDisarmed(t *testing.T) {
	r := mustStart(t, Options{Dir: t.TempDir(), Log: zerolog.Nop()})
	if _, err := r.Arm(time.Millisecond); err != nil {
		t.Fatal(err)
	}
	time.Sleep(10 * time.Millisecond)
	if err := r.Disarm(); !errors.Is(err, ErrAlways) || !r.Armed() {
		t.Errorf("Disarm() = %v, armed %v; want ErrAlways, armed", err, r.Armed())
	}
}
