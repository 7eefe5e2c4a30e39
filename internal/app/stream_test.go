package app

import (
	"io"
	"strings"
	"testing"
	"time"

	"visitors/internal/servertest"
	"visitors/internal/webtest"
)

// TestStreamOutlivesListenerDeadlines: a live stream lasts past the
// public listener's read and write deadlines, still delivers a change,
// and ends cleanly when the service shuts down: Run returns without
// waiting out -shutdown-timeout.
func TestStreamOutlivesListenerDeadlines(t *testing.T) {
	cfg := testConfig()
	cfg.ShutdownTimeout = time.Minute
	to := longTimeouts()
	to.Read, to.ReadHeader, to.Write = 200*time.Millisecond, 200*time.Millisecond, 200*time.Millisecond
	var out servertest.Buffer
	r := mustStart(t, cfg, to, &out)
	resp, err := webtest.Client.Get("http://" + r.addr + "/counter/k/stream")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	er := webtest.NewEventReader(resp.Body)
	type event struct{ Total uint64 }
	next := func() event {
		t.Helper()
		c, _ := webtest.NextJSON[event](t, er)
		return c
	}
	if c := next(); c.Total != 0 {
		t.Fatalf("first event total %d, want 0", c.Total)
	}
	time.Sleep(time.Second) // five times each deadline
	if resp, err := webtest.Client.Get("http://" + r.addr + "/counter/k.json"); err != nil {
		t.Fatal(err)
	} else {
		resp.Body.Close()
	}
	if c := next(); c.Total != 1 {
		t.Fatalf("after a visit the stream says total %d, want 1", c.Total)
	}
	if err := r.stop(); err != nil {
		t.Fatalf("Run() = %v", err)
	}
	if _, err := io.ReadAll(resp.Body); err != nil {
		t.Errorf("the stream did not end cleanly at shutdown: %v", err)
	}
	if strings.Contains(out.String(), "did not finish in time") {
		t.Errorf("shutdown waited for the stream:\n%s", out.String())
	}
}
