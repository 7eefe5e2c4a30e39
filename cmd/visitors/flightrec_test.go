package main

import (
	"bufio"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"visitors/internal/flightrec"
	"visitors/internal/servertest"
	"visitors/internal/webtest"
)

// armFlightRecorder arms p's flight recorder for d (such as "1m") on its
// admin listener.
func armFlightRecorder(tb testing.TB, p *servertest.Proc, d string) {
	tb.Helper()
	if code, body := adminDo(tb, p, "POST", "/debug/flightrecorder/arm?for="+d); code != 200 || !strings.HasPrefix(body, "armed") {
		tb.Fatalf("POST /debug/flightrecorder/arm?for=%s = %d %q, want 200 armed", d, code, body)
	}
}

// adminDo sends a request without a body to p's admin listener and
// returns the status and body.
func adminDo(tb testing.TB, p *servertest.Proc, method, path string) (int, string) {
	tb.Helper()
	r := send(tb, webtest.NewAPIRequest(tb, method, p.AdminURL(path), "", ""), path)
	return r.code, r.body
}

// metric returns the value of the sample named exactly name (labels
// included) in p's /metrics, or "" if there is none.
func metric(tb testing.TB, p *servertest.Proc, name string) string {
	tb.Helper()
	_, _, body := mustGet(tb, p.AdminURL("/metrics"))
	sc := bufio.NewScanner(strings.NewReader(body))
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), name+" "); ok {
			return v
		}
	}
	return ""
}

// waitMetric waits up to 10s for p's sample name to read want.
func waitMetric(tb testing.TB, p *servertest.Proc, name, want string) {
	tb.Helper()
	var got string
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if got = metric(tb, p, name); got == want {
			return
		}
	}
	tb.Fatalf("%s = %q, want %q", name, got, want)
}

// slowRequest makes one request to p that takes 300ms at least, as the
// server times it: an owner-API import whose body comes late (the
// memory store takes no import: p must have another).
func slowRequest(tb testing.TB, p *servertest.Proc) {
	tb.Helper()
	pr, pw := io.Pipe()
	go func() {
		pw.Write([]byte(`{"`))
		time.Sleep(300 * time.Millisecond)
		pw.Close()
	}()
	req, err := http.NewRequest("POST", p.URL("/api/v1/import"), pr)
	if err != nil {
		tb.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+apiRoot)
	resp, err := webtest.Client.Do(req)
	if err != nil {
		tb.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
}

// TestFlightRecorderArmedOnDemand (issue 26): by default the flight
// recorder is disarmed, says so in /metrics, and a slow request writes no
// snapshot. Armed on the admin listener, a slow request writes one;
// DELETE disarms it at once, and an arming for a short while ends by
// itself. Bad arming requests are 400 or 405 and change nothing.
func TestFlightRecorderArmedOnDemand(t *testing.T) {
	traces := t.TempDir()
	p := servertest.Start(t, bin, apiEnv, "-data", t.TempDir(), "-log-level", "warn",
		"-slow-request", "100ms", "-trace-every", "1ms", "-trace-dir", traces)
	const armed, slow = "visitors_flight_recorder_armed", "visitors_http_slow_requests_total"
	snapshots := func() []string {
		m, err := filepath.Glob(filepath.Join(traces, flightrec.Prefix+"*-slow-api.trace"))
		if err != nil {
			t.Fatal(err)
		}
		return m
	}

	if got := metric(t, p, armed); got != "0" {
		t.Fatalf("at start %s = %q, want 0", armed, got)
	}
	slowRequest(t, p)
	waitMetric(t, p, slow, "1")
	if code, body := adminDo(t, p, "GET", "/debug/flightrecorder"); code != 409 || !strings.Contains(body, "not armed") {
		t.Errorf("GET /debug/flightrecorder disarmed = %d %q, want 409", code, body)
	}
	for _, bad := range []struct {
		method, path string
		code         int
	}{
		{"POST", "/debug/flightrecorder/arm", 400},
		{"POST", "/debug/flightrecorder/arm?for=-1m", 400},
		{"POST", "/debug/flightrecorder/arm?for=0", 400},
		{"POST", "/debug/flightrecorder/arm?for=soon", 400},
		{"POST", "/debug/flightrecorder/arm?for=25h", 400},
		{"GET", "/debug/flightrecorder/arm?for=1m", 405},
		{"PUT", "/debug/flightrecorder/arm?for=1m", 405},
	} {
		if code, body := adminDo(t, p, bad.method, bad.path); code != bad.code || body == "" {
			t.Errorf("%s %s = %d %q, want %d and a message", bad.method, bad.path, code, body, bad.code)
		}
	}
	if got := metric(t, p, armed); got != "0" {
		t.Fatalf("after refused armings %s = %q, want 0", armed, got)
	}
	if got := snapshots(); len(got) != 0 {
		t.Fatalf("disarmed, a slow request wrote %v", got)
	}

	armFlightRecorder(t, p, "10m")
	waitMetric(t, p, armed, "1")
	slowRequest(t, p)
	waitMetric(t, p, slow, "2")
	waitMetric(t, p, `visitors_flight_recorder_snapshots_total{trigger="slow_request"}`, "1")
	if got := snapshots(); len(got) != 1 {
		t.Fatalf("armed, a slow request wrote %v, want one snapshot", got)
	}

	if code, body := adminDo(t, p, "DELETE", "/debug/flightrecorder/arm"); code != 200 {
		t.Fatalf("DELETE /debug/flightrecorder/arm = %d %q", code, body)
	}
	waitMetric(t, p, armed, "0")
	slowRequest(t, p)
	waitMetric(t, p, slow, "3")

	armFlightRecorder(t, p, "300ms")
	waitMetric(t, p, armed, "0") // by itself
	slowRequest(t, p)
	waitMetric(t, p, slow, "4")
	time.Sleep(200 * time.Millisecond) // a snapshot is written in the background
	if got := snapshots(); len(got) != 1 {
		t.Errorf("after DELETE and an arming that ended, snapshots %v, want the one written while armed", got)
	}
	if strings.Contains(p.Stderr(), "panic") {
		t.Errorf("stderr: %s", p.Stderr())
	}
}

// TestFlightRecorderAlwaysOn: -flight-recorder arms it from the start
// for good; DELETE is refused with 409.
func TestFlightRecorderAlwaysOn(t *testing.T) {
	p := servertest.Start(t, bin, rulesOff, "-store", "memory", "-log-level", "warn", "-flight-recorder", "-trace-dir", t.TempDir())
	if got := metric(t, p, "visitors_flight_recorder_armed"); got != "1" {
		t.Fatalf("visitors_flight_recorder_armed = %q, want 1", got)
	}
	if code, body := adminDo(t, p, "DELETE", "/debug/flightrecorder/arm"); code != 409 || !strings.Contains(body, "-flight-recorder") {
		t.Errorf("DELETE arm with -flight-recorder = %d %q, want 409", code, body)
	}
	if code, _ := adminDo(t, p, "GET", "/debug/flightrecorder"); code != 200 {
		t.Errorf("GET /debug/flightrecorder = %d, want 200", code)
	}
}
