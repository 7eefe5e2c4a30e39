package web

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"visitors/internal/client"
	"visitors/internal/store"
	"visitors/internal/store/memstore"
	"visitors/internal/webtest"
)

// mustStreamServer runs a Server with short stream timing on a real
// listener, for clients that read streams.
func mustStreamServer(t testing.TB, c Config, times streamTimes) (*Server, *httptest.Server, *memstore.Store) {
	t.Helper()
	st := memstore.New(memstore.Options{})
	t.Cleanup(func() { st.Close() })
	c.Store = st
	c.streamTimes = &times
	s := New(c)
	hs := httptest.NewUnstartedServer(s)
	hs.Config.RegisterOnShutdown(s.Shutdown)
	hs.Start()
	t.Cleanup(hs.Close)
	return s, hs, st
}

// streamCounts is an event's data.
type streamCounts struct {
	Key          string
	Total, Today uint64
	UniqueToday  uint64 `json:"unique_today"`
}

// streamClient reads the streams of [mustOpen]: each ends within
// 10 s, well under the package timeout and far above what these tests
// read (TestStreamCoalesces, the longest, about a second), so that a
// stream whose events never come (mutants stream.go:144:9 and 155:12:
// a change never sent) fails its reader with the client's timeout
// rather than at webtest.Deadline (a minute then, past the mutation
// run's timeout; 20 s now).
var streamClient = &http.Client{Timeout: 10 * time.Second}

// mustOpen opens a stream and checks its headers.
func mustOpen(t *testing.T, url string) (*http.Response, *webtest.EventReader) {
	t.Helper()
	resp, err := streamClient.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	if resp.StatusCode != 200 {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("GET %s = %d %q", url, resp.StatusCode, b)
	}
	for k, v := range map[string]string{"Content-Type": "text/event-stream; charset=utf-8", "Cache-Control": "no-cache, no-store", "Access-Control-Allow-Origin": "*"} {
		if got := resp.Header.Get(k); got != v {
			t.Errorf("%s = %q, want %q", k, got, v)
		}
	}
	return resp, webtest.NewEventReader(resp.Body)
}

// mustRefused GETs a stream that the server is to refuse, and returns
// its answer and whole body.
func mustRefused(t *testing.T, url string) (*http.Response, []byte) {
	t.Helper()
	resp, err := webtest.Client.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	return resp, b
}

// nextCounts returns the next event's counts, skipping comments.
func nextCounts(t *testing.T, er *webtest.EventReader) (streamCounts, webtest.Event) {
	t.Helper()
	return webtest.NextJSON[streamCounts](t, er)
}

func TestStreamEvents(t *testing.T) {
	s, hs, st := mustStreamServer(t, Config{}, streamTimes{interval: 20 * time.Millisecond, heartbeat: time.Hour, retry: 3 * time.Second})
	for range 3 {
		get(t, s, "GET", "/counter/a/b.svg")
	}
	_, er := mustOpen(t, hs.URL+"/counter/a/b/stream")
	c, ev := nextCounts(t, er)
	// One client: its visits are one unique visitor, as the JSON says.
	if c != (streamCounts{"a/b", 3, 3, 1}) || ev.Retry != "3000" {
		t.Fatalf("first event = %+v retry %q, want a/b 3 3 unique 1 and retry 3000", c, ev.Retry)
	}
	for want := uint64(4); want <= 6; want++ {
		get(t, s, "GET", "/counter/a/b.json")
		for c.Total < want {
			c, _ = nextCounts(t, er)
		}
		if c.Total != want || c.Today != want || c.UniqueToday != 1 {
			t.Fatalf("after visit %d the stream says %+v, want unique 1", want, c)
		}
	}
	if got := mustCount(t, st, "a/b").Total; got != 6 {
		t.Errorf("reading the stream counted: total %d, want 6", got)
	}
}

// TestStreamCoalesces: many visits between two events come as one
// event with the newest counts, and consecutive events are at least an
// interval apart: the events' count is bounded by the time the client
// read for.
func TestStreamCoalesces(t *testing.T) {
	interval := 100 * time.Millisecond
	s, hs, _ := mustStreamServer(t, Config{}, streamTimes{interval: interval, heartbeat: time.Hour, retry: time.Second})
	_, er := mustOpen(t, hs.URL+"/counter/k/stream")
	nextCounts(t, er)
	start := time.Now()
	stop := make(chan struct{})
	done := make(chan int)
	go func() { // a visit every millisecond, 500 in all
		n := 0
		for range 500 {
			get(t, s, "GET", "/counter/k.svg")
			n++
			time.Sleep(time.Millisecond)
		}
		close(stop)
		done <- n
	}()
	events := 0
	var c streamCounts
	for c.Total < 500 {
		c, _ = nextCounts(t, er)
		events++
	}
	webtest.Receive(t, done, "end of the counting goroutine")
	elapsed := time.Since(start)
	if max := int(elapsed/interval) + 2; events > max {
		t.Errorf("%d events in %v, want at most %d (one per %v)", events, elapsed, max, interval)
	}
	if events >= 500 {
		t.Errorf("%d events for 500 visits: nothing coalesced", events)
	}
}

func TestStreamHeartbeat(t *testing.T) {
	_, hs, _ := mustStreamServer(t, Config{}, streamTimes{interval: time.Hour, heartbeat: 10 * time.Millisecond, retry: time.Second})
	_, er := mustOpen(t, hs.URL+"/counter/k/stream")
	nextCounts(t, er)
	for range 3 {
		ev, err := er.Next()
		if err != nil || ev.Comment != "heartbeat" {
			t.Fatalf("after the first event = %+v, %v; want a heartbeat comment", ev, err)
		}
	}
}

func TestStreamLimits(t *testing.T) {
	_, hs, _ := mustStreamServer(t, Config{MaxStreams: 5, StreamsPerClient: 2}, streamTimes{interval: time.Hour, heartbeat: time.Hour, retry: time.Second})
	mustOpen(t, hs.URL+"/counter/k/stream")
	mustOpen(t, hs.URL+"/counter/j/stream")
	resp, b := mustRefused(t, hs.URL+"/counter/k/stream")
	if resp.StatusCode != 503 || string(b) != msgStreamsClient || resp.Header.Get("Retry-After") == "" {
		t.Errorf("third stream from one client = %d %q (Retry-After %q), want 503 %q", resp.StatusCode, b, resp.Header.Get("Retry-After"), msgStreamsClient)
	}
}

func TestStreamLimitTotal(t *testing.T) {
	// Every client of the test is 127.0.0.1, so the per-client limit is
	// the total's; a second address comes from the IPv6 loopback.
	_, hs, _ := mustStreamServer(t, Config{MaxStreams: 1, StreamsPerClient: 5}, streamTimes{interval: time.Hour, heartbeat: time.Hour, retry: time.Second})
	mustOpen(t, hs.URL+"/counter/k/stream")
	resp, b := mustRefused(t, hs.URL+"/counter/k/stream")
	if resp.StatusCode != 503 || !strings.HasPrefix(string(b), "Too many live streams are open") {
		t.Errorf("stream past -max-streams = %d %q, want 503", resp.StatusCode, b)
	}
}

func TestStreamRejects(t *testing.T) {
	s, st := mustServer(t, nil)
	if w := get(t, s, "GET", "/counter/stream"); w.Code != 404 {
		t.Errorf("GET /counter/stream = %d, want 404", w.Code)
	}
	for _, target := range []string{"/counter//stream", "/counter/../stream", "/counter/a%20b/stream", "/counter/" + strings.Repeat("k", 129) + "/stream"} {
		w := get(t, s, "GET", target)
		if w.Code != 400 || w.Body.String() != store.MsgPublicKey {
			t.Errorf("GET %s = %d %q, want 400 %q", target, w.Code, w.Body, store.MsgPublicKey)
		}
	}
	if w := get(t, s, "POST", "/counter/k/stream"); w.Code != 405 {
		t.Errorf("POST a stream = %d, want 405", w.Code)
	}
	w := get(t, s, "HEAD", "/counter/k/stream")
	if w.Code != 200 || w.Header().Get("Content-Type") != "text/event-stream; charset=utf-8" || w.Body.Len() != 0 {
		t.Errorf("HEAD a stream = %d %q %q", w.Code, w.Header().Get("Content-Type"), w.Body)
	}
	if st.Keys() != 0 {
		t.Errorf("streams made %d keys, want 0", st.Keys())
	}
}

// TestStreamEndsOnShutdown: http.Server.Shutdown returns at once with a
// stream open, and the client sees the stream end.
func TestStreamEndsOnShutdown(t *testing.T) {
	s, hs, _ := mustStreamServer(t, Config{}, streamTimes{interval: time.Hour, heartbeat: time.Hour, retry: time.Second})
	resp, er := mustOpen(t, hs.URL+"/counter/k/stream")
	nextCounts(t, er)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := hs.Config.Shutdown(ctx); err != nil {
		t.Fatalf("Shutdown with a stream open = %v, want nil", err)
	}
	if _, err := io.ReadAll(resp.Body); err != nil {
		t.Errorf("the stream did not end cleanly: %v", err)
	}
	if s.Streams() != 0 {
		t.Errorf("%d streams open after shutdown", s.Streams())
	}
}

// TestStreamStoreError: a store that cannot read answers 503.
func TestStreamStoreError(t *testing.T) {
	s := New(Config{Store: failingStore{}})
	defer s.Shutdown()
	hs := httptest.NewServer(s)
	defer hs.Close()
	resp, b := mustRefused(t, hs.URL+"/counter/k/stream")
	if resp.StatusCode != 503 || string(b) != msgStreamStore {
		t.Errorf("stream on a broken store = %d %q, want 503 %q", resp.StatusCode, b, msgStreamStore)
	}
	if s.Streams() != 0 {
		t.Errorf("a refused stream holds a slot: %d open", s.Streams())
	}
}

var _ store.Store = (*memstore.Store)(nil)

// TestStreamLimitPerForwardedClient: behind a trusted proxy, the
// per-client limit counts the client the proxy forwards, not the proxy:
// clients behind it each get their own streams, and one client still
// gets no more than its share.
func TestStreamLimitPerForwardedClient(t *testing.T) {
	s, hs, _ := mustStreamServer(t, Config{MaxStreams: 10, StreamsPerClient: 2}, streamTimes{interval: time.Hour, heartbeat: time.Hour, retry: time.Second})
	var proxies client.Proxies
	if err := proxies.Set("127.0.0.0/8,::1/128"); err != nil {
		t.Fatal(err)
	}
	s.visits.Rules.Trusted = &proxies
	open := func(forwardedFor string) int {
		t.Helper()
		req, err := http.NewRequest("GET", hs.URL+"/counter/k/stream", nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("X-Forwarded-For", forwardedFor)
		resp, err := webtest.Client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { resp.Body.Close() })
		return resp.StatusCode
	}
	for _, xff := range []string{"203.0.113.1", "203.0.113.1", "203.0.113.2", "203.0.113.2", "198.51.100.7"} {
		if got := open(xff); got != 200 {
			t.Fatalf("a stream for %s, within its 2 = %d, want 200", xff, got)
		}
	}
	if got := open("203.0.113.1"); got != 503 {
		t.Errorf("a third stream for 203.0.113.1 = %d, want 503", got)
	}
	if n := s.Streams(); n != 5 {
		t.Errorf("Streams() = %d, want 5", n)
	}
}

// TestStreamMaxAge: a stream ends once its age is between nine tenths
// of StreamMaxAge and StreamMaxAge, with a last event that holds only a
// retry field, between retry and twice retry, which EventSource waits
// before it reconnects; its slot is free then. A stream that never
// ended held its slot, and a connection, for as long as its client
// liked.
func TestStreamMaxAge(t *testing.T) {
	const maxAge, retry = 400 * time.Millisecond, 2 * time.Second
	const slack = 2 * time.Second // a busy shared machine's scheduler
	s, hs, _ := mustStreamServer(t, Config{StreamMaxAge: maxAge}, streamTimes{interval: time.Hour, heartbeat: time.Hour, retry: retry})
	start := time.Now()
	resp, er := mustOpen(t, hs.URL+"/counter/k/stream")
	nextCounts(t, er)
	var last webtest.Event
	for {
		ev, err := er.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("the stream ended with %v after %v, want it to end cleanly at about %v", err, time.Since(start).Round(time.Millisecond), maxAge)
		}
		last = ev
	}
	resp.Body.Close()
	if age := time.Since(start); age < maxAge*9/10 || age > maxAge+slack {
		t.Errorf("the stream ended after %v, want between %v and %v", age.Round(time.Millisecond), maxAge*9/10, maxAge+slack)
	}
	ms, err := strconv.Atoi(last.Retry)
	if err != nil || last.Data != "" || time.Duration(ms)*time.Millisecond < retry || time.Duration(ms)*time.Millisecond > 2*retry {
		t.Errorf("the stream's last event = %+v, want only a retry field between %v and %v", last, retry, 2*retry)
	}
	deadline := time.Now().Add(slack)
	for s.Streams() != 0 {
		if time.Now().After(deadline) {
			t.Fatalf("%d streams open %v after the stream ended, want 0", s.Streams(), slack)
		}
		time.Sleep(time.Millisecond)
	}
}
