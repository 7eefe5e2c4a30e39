package app

import (
	"bytes"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"runtime"
	"syscall"
	"testing"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"

	"visitors/internal/client"
	"visitors/internal/servertest"
)

// startTLS starts the service with -tls-cert on free ports, with cfg's
// other settings and timeouts to, and returns it.
func startTLS(t *testing.T, cfg Config, to Timeouts) *running {
	t.Helper()
	dir := t.TempDir()
	certFile, keyFile := filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	c := servertest.SelfSigned(t, "a.example")
	if err := os.WriteFile(certFile, c.Cert, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, c.Key, 0o600); err != nil {
		t.Fatal(err)
	}
	cfg.TLS.CertFile, cfg.TLS.KeyFile = certFile, keyFile
	return mustStart(t, cfg, to, io.Discard)
}

// stalledH2 is an HTTP/2 connection that opens streams and never lets
// the server send a byte of a body: its initial window is 0, and it
// sends no WINDOW_UPDATE.
type stalledH2 struct {
	c   net.Conn
	fr  *http2.Framer
	enc *hpack.Encoder
	buf bytes.Buffer

	maxStreams uint32         // the server's SETTINGS_MAX_CONCURRENT_STREAMS, once read
	outcome    map[uint32]int // a stream's answer: its status, or -1 if reset
}

// dialStalledH2 connects to addr over TLS, says HTTP/2 with an initial
// window of 0, and opens n streams, each a GET of path.
func dialStalledH2(t *testing.T, addr, path string, n int) *stalledH2 {
	t.Helper()
	c, err := tls.Dial("tcp", addr, &tls.Config{InsecureSkipVerify: true, ServerName: "a.example", NextProtos: []string{"h2"}}) // the test's own certificate
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	if p := c.ConnectionState().NegotiatedProtocol; p != "h2" {
		t.Fatalf("ALPN = %q, want h2", p)
	}
	s := &stalledH2{c: c, fr: http2.NewFramer(c, c), outcome: map[uint32]int{}}
	s.enc = hpack.NewEncoder(&s.buf)
	s.fr.ReadMetaHeaders = hpack.NewDecoder(4096, nil)
	if _, err := io.WriteString(c, http2.ClientPreface); err != nil {
		t.Fatal(err)
	}
	if err := s.fr.WriteSettings(http2.Setting{ID: http2.SettingInitialWindowSize, Val: 0}); err != nil {
		t.Fatal(err)
	}
	for i := range n {
		s.buf.Reset()
		for _, f := range [][2]string{{":method", "GET"}, {":scheme", "https"}, {":authority", "a.example"}, {":path", path}} {
			s.enc.WriteField(hpack.HeaderField{Name: f[0], Value: f[1]})
		}
		if err := s.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: uint32(2*i + 1), BlockFragment: s.buf.Bytes(), EndStream: true, EndHeaders: true}); err != nil {
			t.Fatal(err)
		}
	}
	return s
}

// readOutcomes reads frames until every one of n streams has an
// outcome, or until deadline.
func (s *stalledH2) readOutcomes(n int, deadline time.Time) error {
	s.c.SetReadDeadline(deadline)
	for len(s.outcome) < n {
		f, err := s.fr.ReadFrame()
		if err != nil {
			return fmt.Errorf("%d outcomes of %d: %w", len(s.outcome), n, err)
		}
		switch f := f.(type) {
		case *http2.SettingsFrame:
			if f.IsAck() {
				continue
			}
			if v, ok := f.Value(http2.SettingMaxConcurrentStreams); ok {
				s.maxStreams = v
			}
			s.fr.WriteSettingsAck()
		case *http2.MetaHeadersFrame:
			var status int
			fmt.Sscan(f.PseudoValue("status"), &status)
			s.outcome[f.StreamID] = status
		case *http2.RSTStreamFrame:
			if _, ok := s.outcome[f.StreamID]; !ok {
				s.outcome[f.StreamID] = -1
			}
		case *http2.PingFrame:
			if !f.IsAck() {
				s.fr.WritePing(true, f.Data)
			}
		case *http2.GoAwayFrame:
			return fmt.Errorf("GOAWAY %v after %d outcomes of %d", f.ErrCode, len(s.outcome), n)
		}
	}
	return nil
}

// liveHeap returns the bytes of live heap objects: after two
// collections, so that what sync.Pools held (net/http's response
// buffers of requests already answered) is gone too.
func liveHeap() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// TestHTTP2StalledStreamsBounded: HTTP/2 connections from one client
// address open 250 streams each, every stream a GET of a year of daily
// counts, with a flow-control window of 0: the server can send no byte
// of any answer, and holds each one it made until its write timeout (a
// minute here). The server allows MaxStreamsPerConn streams a
// connection, and answers (200) at most -max-conns-per-client of them
// from one client and -max-conns in all at once, as many as over
// HTTP/1.1, one a connection; it refuses the others (429, 503). Once
// the connections close, an ordinary HTTP/2 request is served: what
// was counted was given back. The heap the stalled answers hold is
// logged. Without these bounds each connection's 250 streams were
// answered and held: 2,500 stalled answers from one address with 10
// connections, and a review saw the heap grow from 17 MB to 546 MB with
// 60. A small answer (a badge) is counted until it is sent too: it was
// counted until its handler returned, and 10 connections held 1,000.
// A refusal's goroutine ends within refuseWrite: without that bound it
// was held, unanswered, until the write timeout.
func TestHTTP2StalledStreamsBounded(t *testing.T) {
	tests := []struct {
		name                string
		path                string
		conns, streams      int
		maxConns, perClient int
		wantAnswered        int // at most
		wantRefusal         int // the status of a refusal
	}{
		{"per client", "/counter/k/daily.json?days=365", 10, 250, 10000, DefaultMaxConnsPerClient, DefaultMaxConnsPerClient, 429},
		{"in all", "/counter/k/daily.json?days=365", 3, 100, 40, 0, 40, 503},
		// A badge fits the answer's buffer: its handler returns before
		// a byte of it is sent, and its goroutine waits on. It was not
		// counted then: every stream of every connection was answered.
		{"per client, small answers", "/counter/k.svg", 10, 100, 10000, DefaultMaxConnsPerClient, DefaultMaxConnsPerClient, 429},
		{"in all, small answers", "/counter/k.svg", 3, 100, 40, 0, 40, 503},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := testConfig()
			cfg.Fair.MaxConns, cfg.Fair.MaxConnsPerClient = tt.maxConns, tt.perClient
			r := startTLS(t, cfg, longTimeouts())
			before, goroutines := liveHeap(), runtime.NumGoroutine()
			var cs []*stalledH2
			for range tt.conns {
				cs = append(cs, dialStalledH2(t, r.addr, tt.path, tt.streams))
			}
			deadline := time.Now().Add(30 * time.Second)
			answered, refused, reset := 0, 0, 0
			for _, s := range cs {
				if err := s.readOutcomes(tt.streams, deadline); err != nil {
					t.Errorf("connection: %v", err)
				}
				if s.maxStreams == 0 || s.maxStreams > MaxStreamsPerConn {
					t.Errorf("the server advertised %d streams a connection, want 1 to %d", s.maxStreams, MaxStreamsPerConn)
				}
				for _, st := range s.outcome {
					switch st {
					case 200:
						answered++
					case -1:
						reset++
					case tt.wantRefusal:
						refused++
					default:
						t.Errorf("a stream answered %d, want 200, %d or a reset", st, tt.wantRefusal)
					}
				}
			}
			time.Sleep(time.Second) // the refusals' writes time out, and their goroutines end
			grew := int64(liveHeap()) - int64(before)
			t.Logf("%d connections x %d streams: %d answered and stalled, %d refused, %d reset; %d goroutines; live heap grew %.1f MB",
				tt.conns, tt.streams, answered, refused, reset, runtime.NumGoroutine(), float64(grew)/(1<<20))
			if answered > tt.wantAnswered {
				t.Errorf("%d stalled answers, want at most %d", answered, tt.wantAnswered)
			}
			if refused == 0 {
				t.Errorf("no stream refused %d past the bound", tt.wantRefusal)
			}
			// A goroutine an answer held, and a few a connection: a
			// refusal's ends within refuseWrite, not the write timeout.
			if grew, most := runtime.NumGoroutine()-goroutines, tt.wantAnswered+5*tt.conns; grew > most {
				t.Errorf("%d goroutines more than before, want at most %d: the refusals' are held", grew, most)
			}
			for _, s := range cs {
				s.c.Close()
			}
			mustServeHTTP2(t, r.addr)
		})
	}
}

// mustServeHTTP2 GETs /hi over HTTP/2 until it is answered 200, for at
// most 10s: the stalled streams' handlers end once their connections
// close.
func mustServeHTTP2(t *testing.T, addr string) {
	t.Helper()
	c := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{
		TLSClientConfig:   &tls.Config{InsecureSkipVerify: true, ServerName: "a.example"},
		ForceAttemptHTTP2: true,
	}}
	defer c.CloseIdleConnections()
	deadline := time.Now().Add(10 * time.Second)
	for {
		resp, err := c.Get("https://" + addr + "/hi")
		if err == nil {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode == 200 && resp.ProtoMajor == 2 {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("GET /hi over HTTP/2 after the stalled connections closed = %v, %v; want 200 over HTTP/2", resp, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestStreamBoundCounts: streamBound counts a client address's HTTP/2
// requests (an IPv6 client by its /64), not a trusted proxy's, refuses
// past perClient with 429 and past max with 503, and gives back what it
// counted.
func TestStreamBoundCounts(t *testing.T) {
	var trusted client.Proxies
	if err := trusted.Set("10.0.0.0/8"); err != nil {
		t.Fatal(err)
	}
	f := newStreamBound(nil, 5, 2, &trusted)
	type entered struct {
		id      netip.Addr
		counted bool
	}
	var held []entered
	steps := []struct {
		remote string
		want   int // 0: admitted
	}{
		{"192.0.2.1:1", 0},
		{"192.0.2.1:2", 0},
		{"192.0.2.1:3", http.StatusTooManyRequests},
		{"[2001:db8::1]:1", 0},
		{"[2001:db8::2]:1", 0}, // the same /64
		{"[2001:db8::3]:1", http.StatusTooManyRequests},
		{"10.0.0.1:1", 0}, // a trusted proxy: not counted per client, but in all
		{"10.0.0.1:2", http.StatusServiceUnavailable},
	}
	for _, st := range steps {
		id, counted, status := f.enter(st.remote)
		if status != st.want {
			t.Errorf("enter(%s) = %d, want %d", st.remote, status, st.want)
		}
		if status == 0 {
			held = append(held, entered{id, counted})
		}
	}
	for _, e := range held {
		f.leave(e.id, e.counted)
	}
	if f.total != 0 || len(f.clients) != 0 {
		t.Errorf("after every request left: total %d, clients %v; want 0 and none", f.total, f.clients)
	}
}

// TestHTTP2ReceiveBuffersBounded: a client that sends a request body
// to a handler that never reads it (a GET of daily counts, stalled on
// a flow-control window of 0) fills the server's receive buffer of the
// stream, held until the stream ends. The windows the server grants
// bound that buffer: at most MaxReceivePerConn a connection, all
// streams together, where net/http's default is 1 MiB a connection and
// 1 MiB a stream (100 MiB from the 100 connections one client may
// hold). The client sends all the windows allow; the heap it makes the
// server hold is logged.
func TestHTTP2ReceiveBuffersBounded(t *testing.T) {
	const conns = 20
	cfg := testConfig()
	cfg.Fair.MaxConns, cfg.Fair.MaxConnsPerClient = 10000, DefaultMaxConnsPerClient
	r := startTLS(t, cfg, longTimeouts())
	before := liveHeap()
	sent := 0
	for range conns {
		s := dialStalledH2(t, r.addr, "", 0)
		s.c.SetReadDeadline(time.Now().Add(10 * time.Second))
		// The server's SETTINGS (the stream's window), then its
		// WINDOW_UPDATE of the connection.
		streamWin, connWin := uint32(0), uint32(65535)
		for gotSettings, gotConn := false, false; !gotSettings || !gotConn; {
			f, err := s.fr.ReadFrame()
			if err != nil {
				t.Fatalf("reading the server's SETTINGS and window: %v", err)
			}
			switch f := f.(type) {
			case *http2.SettingsFrame:
				if f.IsAck() {
					continue
				}
				streamWin = 65535
				if v, ok := f.Value(http2.SettingInitialWindowSize); ok {
					streamWin = v
				}
				gotSettings = true
				s.fr.WriteSettingsAck()
			case *http2.WindowUpdateFrame:
				if f.StreamID == 0 {
					connWin += f.Increment
					gotConn = true
				}
			}
		}
		if streamWin > MaxReceivePerConn || connWin > MaxReceivePerConn {
			t.Errorf("the server grants a window of %d bytes a stream and %d a connection, want at most %d each", streamWin, connWin, MaxReceivePerConn)
		}
		s.buf.Reset()
		for _, f := range [][2]string{{":method", "GET"}, {":scheme", "https"}, {":authority", "a.example"}, {":path", "/counter/k/daily.json?days=365"}} {
			s.enc.WriteField(hpack.HeaderField{Name: f[0], Value: f[1]})
		}
		if err := s.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: s.buf.Bytes(), EndHeaders: true}); err != nil {
			t.Fatal(err)
		}
		chunk := make([]byte, 16<<10)
		for left := int(min(streamWin, connWin)); left > 0; left -= len(chunk) {
			if left < len(chunk) {
				chunk = chunk[:left]
			}
			if err := s.fr.WriteData(1, false, chunk); err != nil {
				t.Fatal(err)
			}
			sent += len(chunk)
		}
	}
	time.Sleep(500 * time.Millisecond) // the server reads what was sent
	grew := int64(liveHeap()) - int64(before)
	t.Logf("%d connections, one stalled stream each: %.1f MB of bodies sent, live heap grew %.1f MB", conns, float64(sent)/(1<<20), float64(grew)/(1<<20))
}

// TestHTTP2UnreadConnectionCut: an HTTP/2 client that grants every
// window but reads nothing from its socket (a receive buffer of 4 KiB)
// stalls the server's writes to the connection itself, below the
// streams. The server closes such a connection once a write has taken
// no byte for the write timeout (1s here, HTTP2Config.WriteByteTimeout);
// the streams' own write timeouts reset the streams but left the
// connection, its goroutines and its buffers, for as long as the client
// kept it busy. The cut is an event the test waits for (a write of the
// client fails once the server has closed), for at most 30s.
func TestHTTP2UnreadConnectionCut(t *testing.T) {
	to := longTimeouts()
	to.Write = time.Second
	r := startTLS(t, testConfig(), to)
	d := &net.Dialer{Control: func(_, _ string, rc syscall.RawConn) error {
		var err error
		if cerr := rc.Control(func(fd uintptr) { err = setRcvBuf(fd, 4096) }); cerr != nil {
			return cerr
		}
		return err
	}}
	c, err := tls.DialWithDialer(d, "tcp", r.addr, &tls.Config{InsecureSkipVerify: true, ServerName: "a.example", NextProtos: []string{"h2"}}) // the test's own certificate
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	fr := http2.NewFramer(c, c)
	var buf bytes.Buffer
	enc := hpack.NewEncoder(&buf)
	if _, err := io.WriteString(c, http2.ClientPreface); err != nil {
		t.Fatal(err)
	}
	const win = 1<<31 - 1
	if err := fr.WriteSettings(http2.Setting{ID: http2.SettingInitialWindowSize, Val: win}); err != nil {
		t.Fatal(err)
	}
	if err := fr.WriteWindowUpdate(0, win-65535); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	for i := 0; time.Since(start) < 30*time.Second; i++ {
		if i < 1000 { // 15 MB of answers asked for, more than the socket buffers hold
			buf.Reset()
			for _, f := range [][2]string{{":method", "GET"}, {":scheme", "https"}, {":authority", "a.example"}, {":path", "/counter/k/daily.json?days=365"}} {
				enc.WriteField(hpack.HeaderField{Name: f[0], Value: f[1]})
			}
			err = fr.WriteHeaders(http2.HeadersFrameParam{StreamID: uint32(2*i + 1), BlockFragment: buf.Bytes(), EndStream: true, EndHeaders: true})
		} else {
			err = fr.WritePing(false, [8]byte{})
		}
		if err != nil {
			t.Logf("the server closed the connection %v after the first request (%v)", time.Since(start).Round(time.Millisecond), err)
			return
		}
		if i%50 == 49 || i >= 1000 {
			time.Sleep(50 * time.Millisecond)
		}
	}
	t.Errorf("a connection whose client reads nothing is still open after %v, want it closed about -write-timeout (1s) after its writes stall", time.Since(start).Round(time.Second))
}
