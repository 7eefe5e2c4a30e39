package app

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestMaxStreamsLeaveRoom: -max-streams is at most half of -max-conns,
// so that live streams, each of which holds a connection for as long as
// its client likes, leave half of the connections to ordinary requests:
// by default, when -max-conns alone is lowered, and refused when given
// above. Both defaults were 10,000: streams could take every connection.
func TestMaxStreamsLeaveRoom(t *testing.T) {
	tests := []struct {
		name        string
		args        []string
		wantStreams int    // when accepted
		wantErr     string // when refused
	}{
		{"defaults", nil, 2500, ""},
		{"-max-conns lowered", []string{"-max-conns", "100"}, 50, ""},
		{"-max-conns 1", []string{"-max-conns", "1"}, 1, ""},
		{"-max-streams at half", []string{"-max-streams", "5000"}, 5000, ""},
		{"-max-streams over half", []string{"-max-streams", "5001"}, 0, "-max-streams 5001: at most half of -max-conns 10000"},
		{"-max-streams over half by env", []string{"-max-conns", "10"}, 0, "-max-streams 6: at most half of -max-conns 10"},
		{"no connection limit", []string{"-max-conns", "0", "-max-streams", "20000"}, 20000, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env := map[string]string{}
			if strings.HasSuffix(tt.name, "by env") {
				env["VISITORS_MAX_STREAMS"] = "6"
			}
			args := append([]string{"-data", t.TempDir()}, tt.args...)
			c, err := ParseFlags(args, func(k string) string { return env[k] }, io.Discard)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Errorf("ParseFlags(%q) = -max-streams %d, %v; want an error saying %q", args, c.MaxStreams, err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("ParseFlags(%q) = %v", args, err)
			}
			if c.MaxStreams != tt.wantStreams {
				t.Errorf("ParseFlags(%q).MaxStreams = %d, want %d (-max-conns %d)", args, c.MaxStreams, tt.wantStreams, c.Fair.MaxConns)
			}
		})
	}
}

// TestStreamsLeaveRoomForRequests runs the service as the flags make
// it with -max-conns 8, over plain HTTP/1.1 where each live stream
// holds a connection. Clients from four loopback addresses open streams
// until refused (4 each at most, the per-client bound); then four
// ordinary requests at once, on four new connections, are all answered.
// With -max-streams at its old default of 10,000, two addresses' eight
// streams took every connection and the ordinary requests waited in the
// accept queue.
func TestStreamsLeaveRoomForRequests(t *testing.T) {
	const maxConns = 8
	cfg, err := ParseFlags([]string{"-data", t.TempDir(), "-store", "memory", "-max-conns", fmt.Sprint(maxConns), "-count-bots", "-client-rate", "0"}, func(string) string { return "" }, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	cfg.AdminAddr = ""
	r := mustStart(t, cfg, longTimeouts(), io.Discard)

	// from returns a client whose connections come from 127.0.0.n, that
	// waits at most 3s for an answer's header: a connection waiting in
	// the accept queue gets none.
	from := func(n int) *http.Client {
		d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, byte(n))}}
		return &http.Client{Transport: &http.Transport{DialContext: d.DialContext, ResponseHeaderTimeout: 3 * time.Second}}
	}
	streams, refused := 0, 0
	for n := 2; n <= 5; n++ {
		c := from(n)
		t.Cleanup(c.CloseIdleConnections)
		for range 4 {
			ctx, cancel := context.WithCancel(context.Background())
			t.Cleanup(cancel)
			req, _ := http.NewRequestWithContext(ctx, "GET", "http://"+r.addr+"/counter/k/stream", nil)
			resp, err := c.Do(req)
			if err != nil {
				t.Logf("stream from 127.0.0.%d: %v", n, err)
				break
			}
			if resp.StatusCode != http.StatusOK {
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				refused++
				continue
			}
			t.Cleanup(func() { resp.Body.Close() })
			streams++
		}
		c.CloseIdleConnections() // a refused stream's connection is not held
	}
	t.Logf("%d streams open, %d refused", streams, refused)
	if streams > maxConns/2 {
		t.Errorf("%d streams open with -max-conns %d, want at most %d", streams, maxConns, maxConns/2)
	}
	var wg sync.WaitGroup
	for i := range maxConns - maxConns/2 {
		wg.Go(func() {
			c := from(10 + i)
			defer c.CloseIdleConnections()
			resp, err := c.Get("http://" + r.addr + "/hi")
			if err != nil {
				t.Errorf("an ordinary request with %d streams open: %v, want an answer", streams, err)
				return
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				t.Errorf("an ordinary request with %d streams open = %d, want 200", streams, resp.StatusCode)
			}
		})
	}
	wg.Wait()
}

// TestMaxStreamAgeIsWired: the service ends a live stream once
// -max-stream-age has passed (less up to a tenth).
func TestMaxStreamAgeIsWired(t *testing.T) {
	cfg := testConfig()
	cfg.MaxStreamAge = 300 * time.Millisecond
	r := mustStart(t, cfg, longTimeouts(), io.Discard)
	start := time.Now()
	resp, err := (&http.Client{Timeout: 10 * time.Second}).Get("http://" + r.addr + "/counter/k/stream")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if _, err := io.ReadAll(resp.Body); err != nil {
		t.Fatalf("the stream did not end cleanly within 10s of -max-stream-age %v: %v", cfg.MaxStreamAge, err)
	}
	if d := time.Since(start); d < cfg.MaxStreamAge*9/10 {
		t.Errorf("the stream ended after %v, before -max-stream-age %v less a tenth", d, cfg.MaxStreamAge)
	}
}
