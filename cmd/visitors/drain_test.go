package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"visitors/internal/servertest"
	"visitors/internal/webtest"
)

// TestCleanStopDrains: SIGTERM while requests are in flight, on the
// real binary in sync mode. A request in flight finishes: an owner
// import whose body is half sent when the signal comes is answered 200
// once the rest arrives, and its counts are kept. A live stream is told
// to come back (a retry field) and ends cleanly. Sync visits racing the
// signal from 16 connections are each answered 200 in whole or not at
// all (a refused or closed connection: never a 5xx, never a cut body),
// and every one answered 200 is in the file after the stop: the export
// of the stopped store holds at least the visits acknowledged and at
// most those plus the ones that got no answer. The binary exits 0.
func TestCleanStopDrains(t *testing.T) {
	dir := t.TempDir()
	p := servertest.Start(t, bin, apiEnv, "-data", dir, "-durability", "sync")

	// A live stream, read up to its first event.
	stream, err := http.Get(p.URL("/counter/watched/stream"))
	if err != nil {
		t.Fatal(err)
	}
	defer stream.Body.Close()
	er := webtest.NewEventReader(stream.Body)
	if ev, err := er.Next(); err != nil || ev.Data == "" {
		t.Fatalf("the stream's first event = %+v, %v", ev, err)
	}

	// An import in flight: its headers and half its body sent.
	const dump = `{"format":"visitors-export-1","hits":0,"keys":[{"key":"imported","total":42}]}`
	imp, err := net.Dial("tcp", p.Addr)
	if err != nil {
		t.Fatal(err)
	}
	defer imp.Close()
	fmt.Fprintf(imp, "POST /api/v1/import HTTP/1.1\r\nHost: drain\r\nAuthorization: Bearer %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", apiRoot, len(dump), dump[:len(dump)/2])

	// Sync visits from 16 connections, until the server stops taking them.
	var acked, unanswered atomic.Int64
	var bad sync.Map // what must never happen, by description
	var wg sync.WaitGroup
	started := make(chan struct{})
	var once sync.Once
	for range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := &http.Client{Timeout: webtest.Deadline, Transport: &http.Transport{}}
			for {
				resp, err := c.Get(p.URL("/counter/drained.json"))
				if err != nil {
					unanswered.Add(1) // no answer: counted at most once
					if strings.Contains(err.Error(), "connection refused") {
						return // the listener is closed: the server stops
					}
					continue
				}
				body, err := io.ReadAll(resp.Body)
				resp.Body.Close()
				switch {
				case err != nil:
					bad.Store(fmt.Sprintf("a body cut short after %d: %v", resp.StatusCode, err), true)
				case resp.StatusCode != http.StatusOK:
					bad.Store(fmt.Sprintf("%d %s", resp.StatusCode, body), true)
				default:
					acked.Add(1)
					once.Do(func() { close(started) })
				}
			}
		}()
	}
	webtest.Receive(t, started, "a first sync visit answered")
	time.Sleep(200 * time.Millisecond)

	if err := p.Cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}

	// The stream is told to reconnect, then ends.
	ev, err := er.Next()
	for err == nil && ev.Retry == "" {
		ev, err = er.Next()
	}
	if err != nil {
		t.Errorf("the stream at SIGTERM ended with %v and no retry field, want one then its end", err)
	} else if _, err := er.Next(); err != io.EOF {
		t.Errorf("after its retry field the stream = %v, want its clean end (EOF)", err)
	}

	// The import, in flight all along, is finished and answered.
	time.Sleep(300 * time.Millisecond)
	if err := p.Cmd.Process.Signal(syscall.Signal(0)); err != nil {
		t.Fatalf("the binary exited with an import in flight: %v\n%s", err, p.Stdout())
	}
	if _, err := io.WriteString(imp, dump[len(dump)/2:]); err != nil {
		t.Fatalf("send the rest of the import after SIGTERM: %v", err)
	}
	imp.SetReadDeadline(time.Now().Add(webtest.Deadline))
	resp, err := http.ReadResponse(bufio.NewReader(imp), nil)
	if err != nil {
		t.Fatalf("the import in flight at SIGTERM got no answer: %v", err)
	}
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), `"imported": true`) {
		t.Errorf("the import in flight at SIGTERM = %d %s, want 200 and imported", resp.StatusCode, body)
	}

	if err := p.Stop(syscall.SIGTERM, webtest.Deadline); err != nil { // a second SIGTERM: the context is done already
		t.Errorf("the binary after SIGTERM: %v, want exit status 0\n%s", err, p.Stdout())
	}
	wg.Wait()
	bad.Range(func(k, _ any) bool {
		t.Errorf("a visit racing the stop: %s", k)
		return true
	})

	// What the stopped store holds.
	out, err := command(t, bin, "export", "-data", dir).Output()
	if err != nil {
		t.Fatalf("visitors export: %v", err)
	}
	totals := exportTotals(t, out)
	a, u := uint64(acked.Load()), uint64(unanswered.Load())
	if got := totals["drained"]; got < a || got > a+u {
		t.Errorf("after the stop the store holds %d visits of drained, want at least the %d acknowledged and at most %d (with the %d unanswered)", got, a, a+u, u)
	}
	if got := totals["imported"]; got != 42 {
		t.Errorf("after the stop the imported key holds %d, want 42 (the import answered during the stop)", got)
	}
	t.Logf("%d sync visits acknowledged, %d unanswered (the listener closed); the store holds %d", a, u, totals["drained"])
}

// exportTotals reads each key's total from the output of visitors export.
func exportTotals(tb testing.TB, out []byte) map[string]uint64 {
	tb.Helper()
	var d struct {
		Keys []struct {
			Key   string `json:"key"`
			Total uint64 `json:"total"`
		} `json:"keys"`
	}
	if err := json.Unmarshal(out, &d); err != nil {
		tb.Fatalf("visitors export printed %q: %v", out, err)
	}
	m := map[string]uint64{}
	for _, k := range d.Keys {
		m[k.Key] = k.Total
	}
	return m
}
