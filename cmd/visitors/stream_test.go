package main

import (
	"io"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"visitors/internal/servertest"
	"visitors/internal/webtest"
)

// TestBinaryStreamsLiveCounts: on the real binary with its durable
// store, a client reads a key's stream while another counts 50 visits to
// it: the stream starts with the count at once, its totals never go
// back, it ends at 50, and reading it counted nothing. Past -max-streams
// a stream is refused with 503. SIGTERM ends the open stream cleanly and
// the process exits without waiting out -shutdown-timeout.
func TestBinaryStreamsLiveCounts(t *testing.T) {
	p := servertest.Start(t, bin, rulesOff, "-data", t.TempDir(), "-max-streams", "2", "-shutdown-timeout", "1m", "-log-level", "info")
	for range 3 {
		mustGet(t, p.URL("/counter/live/key.svg"))
	}
	resp, err := webtest.Client.Get(p.URL("/counter/live/key/stream"))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream; charset=utf-8" {
		t.Fatalf("stream = %d %q", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	er := webtest.NewEventReader(resp.Body)
	type event struct {
		Key          string
		Total, Today uint64
	}
	next := func() event {
		t.Helper()
		c, _ := webtest.NextJSON[event](t, er)
		return c
	}
	if c := next(); c.Key != "live/key" || c.Total != 3 {
		t.Fatalf("first event = %+v, want live/key at 3", c)
	}

	var wg sync.WaitGroup
	wg.Add(1)
	go func() { // another client counts while the stream is read
		defer wg.Done()
		for range 47 {
			resp, err := webtest.Client.Get(p.URL("/counter/live/key.json"))
			if err != nil {
				t.Error(err)
				return
			}
			resp.Body.Close()
		}
	}()
	last, events := uint64(3), 0
	for last < 50 {
		c := next()
		if c.Total < last {
			t.Fatalf("stream went back from %d to %d", last, c.Total)
		}
		last = c.Total
		events++
	}
	webtest.Wait(t, &wg, "end of the 47 visits of the other client")
	if last != 50 {
		t.Errorf("stream ended at %d, want 50", last)
	}
	t.Logf("47 visits reached the stream in %d events", events)

	// -max-streams 2: one more is fine, the third is refused.
	second, err := webtest.Client.Get(p.URL("/counter/other/stream"))
	if err != nil || second.StatusCode != 200 {
		t.Fatalf("second stream = %v, %v", second, err)
	}
	defer second.Body.Close()
	code, hdr, body := mustGet(t, p.URL("/counter/third/stream"))
	if code != 503 || hdr.Get("Retry-After") == "" || !strings.HasPrefix(body, "Too many live streams") {
		t.Errorf("third stream = %d %q (Retry-After %q), want 503", code, body, hdr.Get("Retry-After"))
	}
	// /healthz says why, as a warning: the service serves the rest.
	if code, _, body := mustGet(t, p.AdminURL("/healthz")); code != 200 || !strings.Contains(body, "warning: 2 live streams are open, -max-streams 2") {
		t.Errorf("/healthz at -max-streams = %d %q, want 200 with a warning naming the limit", code, body)
	}
	if _, _, body := mustGet(t, p.URL("/counter/live/key.json?count=false")); !strings.Contains(body, `"total":50`) {
		t.Errorf("after streaming, %s: reading streams counted", body)
	}

	done := make(chan error, 1)
	go func() { _, err := io.ReadAll(resp.Body); done <- err }()
	if err := p.Stop(syscall.SIGTERM, 30*time.Second); err != nil {
		t.Fatalf("stop with streams open: %v", err)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("the stream did not end cleanly: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Error("the stream was still open 30s after the process exited")
	}
	if strings.Contains(p.Stdout(), "did not finish in time") {
		t.Errorf("shutdown waited out its timeout for the streams:\n%s", p.Stdout())
	}
}
