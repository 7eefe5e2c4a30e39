package app

import (
	"bufio"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"sync"
	"testing"
	"time"

	"visitors/internal/coarse"
)

// TestGate runs the public listener's gate in this process, so that the
// race detector sees it: 8 clients on 127.0.0.1 race for -max-conns 6
// with -max-conns-per-client 4, keep-alive, while the listener is
// crowded and idle connections are cut short and closed. Every
// connection ends with a 200, a 429 or a close; at the end none is
// open. cmd/visitors proves each rule on the binary.
func TestGate(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	g := newGate(l, 6, 4, nil)
	srv := &http.Server{
		Handler:     http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "hi") }),
		IdleTimeout: time.Minute,
		ConnState:   g.connState,
	}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(g) }()
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 20 {
				c, err := net.DialTimeout("tcp", l.Addr().String(), 10*time.Second)
				if err != nil {
					t.Errorf("dial: %v", err)
					return
				}
				c.SetDeadline(time.Now().Add(10 * time.Second))
				r := bufio.NewReader(c)
				for range 2 { // keep-alive: two requests, then idle until closed
					io.WriteString(c, "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
					resp, err := http.ReadResponse(r, nil)
					if err != nil || resp.StatusCode != 200 {
						break // a 429 or a close
					}
					io.Copy(io.Discard, resp.Body)
				}
				c.Close()
			}
		})
	}
	wg.Wait()
	if err := srv.Close(); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != http.ErrServerClosed {
		t.Errorf("Serve = %v, want http.ErrServerClosed", err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for g.Open() != 0 || len(g.sem) != 0 {
		if time.Now().After(deadline) {
			t.Fatalf("after every client left: %d open, %d slots taken; want 0", g.Open(), len(g.sem))
		}
		time.Sleep(time.Millisecond)
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if len(g.clients) != 0 || len(g.conns) != 0 {
		t.Errorf("after every client left the gate remembers %d clients, %d connections", len(g.clients), len(g.conns))
	}
}

// TestGatePerClientBound: with -max-conns-per-client 2, a client's two
// open connections are served and its third is answered 429; once one
// of the two closes, a new one is served. It catches the bound one off
// or read the wrong way round.
func TestGatePerClientBound(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	g := newGate(l, 0, 2, nil)
	srv := &http.Server{
		Handler:     http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "hi") }),
		IdleTimeout: time.Minute,
		ConnState:   g.connState,
	}
	go srv.Serve(g)
	t.Cleanup(func() { closeWithin(t, srv) })
	get := func(step string, want int) net.Conn {
		t.Helper()
		c := mustDial(t, l.Addr().String())
		io.WriteString(c, "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			t.Fatalf("%s: %v", step, err)
		}
		io.Copy(io.Discard, resp.Body)
		if resp.StatusCode != want {
			// The steps after it count on this one.
			t.Fatalf("%s: %d, want %d", step, resp.StatusCode, want)
		}
		return c
	}
	first := get("first connection", 200)
	get("second connection", 200)
	get("third connection", 429)
	first.Close()
	deadline := time.Now().Add(10 * time.Second)
	for g.Open() != 1 { // the server sees the close
		if time.Now().After(deadline) {
			t.Fatalf("%d connections open after the first closed, want 1", g.Open())
		}
		time.Sleep(time.Millisecond)
	}
	get("a connection after the first closed", 200)
}

// closeWithin closes srv, and fails the test if its Close has not
// returned within 10 s: it closes every connection, and a connection's
// Close that blocks (mutation conns.go:147:11: a slot given back to a
// gate without -max-conns) would hang the test.
func closeWithin(t *testing.T, srv *http.Server) {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- srv.Close() }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Errorf("the server's Close did not return within 10s: a connection's Close blocks")
	}
}

// TestGateCrowdedAtItsPercent: a gate is crowded once CrowdedPercent of
// -max-conns are open, not one connection before, and never without a
// -max-conns. It catches the threshold one off, or its arithmetic
// wrong.
func TestGateCrowdedAtItsPercent(t *testing.T) {
	g := newGate(nil, 200, 0, nil)
	at := int64(200 * CrowdedPercent / 100)
	for _, tt := range []struct {
		open int64
		want bool
	}{{0, false}, {at - 1, false}, {at, true}, {200, true}} {
		g.open.Store(tt.open)
		if got := g.crowded(); got != tt.want {
			t.Errorf("%d open of 200 (crowded at %d%%): crowded() = %v, want %v", tt.open, CrowdedPercent, got, tt.want)
		}
	}
	unbounded := newGate(nil, 0, 0, nil)
	if unbounded.crowded() {
		t.Errorf("no -max-conns, nothing open: crowded() = true, want false")
	}
}

// TestCrowdedCutsLongIdleAtOnce: once the public listener is crowded, a
// keep-alive connection already idle for longer than CrowdedIdle is cut
// at the gate's next look (every 100ms here), whatever the idle bound:
// none (0), or one longer than CrowdedIdle. Mutation survivors
// conns.go:244:26 and 244:39 (cutLate's crowded bound not taken with
// an idle bound of 0, or with one of a minute) left it to the sweep's
// deadline, CrowdedIdle after the crowding.
func TestCrowdedCutsLongIdleAtOnce(t *testing.T) {
	for _, idle := range []time.Duration{0, time.Minute} {
		t.Run(fmt.Sprintf("idle bound %v", idle), func(t *testing.T) {
			g := newGate(mustListen(t), 4, 0, nil) // crowded from 3 open
			to := longTimeouts()
			to.ReadHeader, to.Idle = 400*time.Millisecond, idle // a tick of 100ms
			serveHi(t, g, to, nil)
			get := func() net.Conn {
				t.Helper()
				c := mustDial(t, g.Addr().String())
				mustWrite(t, c, "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
				resp, err := http.ReadResponse(bufio.NewReader(c), nil)
				if err != nil {
					t.Fatal(err)
				}
				io.Copy(io.Discard, resp.Body)
				return c
			}
			longIdle := get()
			time.Sleep(CrowdedIdle + 200*time.Millisecond) // not crowded: within its bound
			start := time.Now()
			get()
			get() // the third of 4: crowded
			// The sweep of the crowding gives it CrowdedIdle from now; the
			// watch must not wait for that.
			expectCut(t, longIdle, start, CrowdedIdle*3/4, "a connection idle for longer than CrowdedIdle when the listener became crowded")
		})
	}
}

// TestZeroBoundsCutNothing: a header or idle bound of 0 is no bound. A
// new connection that sends nothing for ten of the gate's looks, or one
// idle as long after a response, is served when its request comes.
// Mutation survivor conns.go:261:12 (`bound > 0` → `>= 0` in cutLate)
// cut either at the first look.
func TestZeroBoundsCutNothing(t *testing.T) {
	for _, tt := range []struct {
		name         string
		header, idle time.Duration
		answerFirst  bool // a request answered before the wait: the wait is idle
	}{
		{"no header bound", 0, 400 * time.Millisecond, false},
		{"no idle bound", 400 * time.Millisecond, 0, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			g := newGate(mustListen(t), 0, 0, nil)
			to := longTimeouts()
			to.ReadHeader, to.Idle = tt.header, tt.idle // a tick of 100ms
			serveHi(t, g, to, nil)
			c := mustDial(t, g.Addr().String())
			br := bufio.NewReader(c)
			get := func(when string) {
				t.Helper()
				if err := write(c, "GET / HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
					t.Fatalf("%s: %v", when, err)
				}
				resp, err := http.ReadResponse(br, nil)
				if err != nil {
					t.Fatalf("%s: %v", when, err)
				}
				io.Copy(io.Discard, resp.Body)
			}
			if tt.answerFirst {
				get("the first request")
			}
			time.Sleep(10 * watchTick(to))
			get("a request after ten of the gate's looks")
		})
	}
}

// serveHi serves "hi" on g through publicServer with the bounds to (and
// TLS with tlsConf, if not nil), on a coarse clock of its own; the server
// is closed within its bound and the clock stopped when t ends.
func serveHi(t *testing.T, g *connGate, to Timeouts, tlsConf *tls.Config) {
	t.Helper()
	clock := coarse.Start(time.Millisecond)
	srv := publicServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "hi") }), g, to, tlsConf, clock)
	go serve(srv, g)
	t.Cleanup(func() {
		closeWithin(t, srv)
		clock.Stop()
	})
}

// fromConn is a connection whose peer is addr: the far end of a pipe
// already closed, so that a 429 written to it fails at once.
type fromConn struct {
	net.Conn
	addr *net.TCPAddr
}

func (c fromConn) RemoteAddr() net.Addr { return c.addr }

// queueListener hands out its connections in order, then net.ErrClosed.
type queueListener struct {
	mu    sync.Mutex
	conns []net.Conn
}

func (l *queueListener) Accept() (net.Conn, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.conns) == 0 {
		return nil, net.ErrClosed
	}
	c := l.conns[0]
	l.conns = l.conns[1:]
	return c, nil
}
func (l *queueListener) Close() error   { return nil }
func (l *queueListener) Addr() net.Addr { return &net.TCPAddr{IP: net.IPv6loopback} }

// mustFrom returns a connection from addr (an address, with a zone or
// not).
func mustFrom(t *testing.T, addr string) net.Conn {
	t.Helper()
	ap, err := netip.ParseAddr(addr)
	if err != nil {
		t.Fatal(err)
	}
	c, far := net.Pipe()
	far.Close()
	t.Cleanup(func() { c.Close() })
	return fromConn{Conn: c, addr: net.TCPAddrFromAddrPort(netip.AddrPortFrom(ap, 40000))}
}

// TestGateCountsIPv6ByPrefix64: -max-conns-per-client counts an IPv6
// client by its /64, since one subscriber commonly holds a whole /64
// (and picks a new address per connection): with a bound of 2, a third
// connection from another address of the same /64 (with a zone or not)
// is refused, one from the next /64 is admitted, and one of the /64's
// closing lets a new one in. An IPv4 client and its IPv4-mapped IPv6
// form are one client. The gate is driven directly, with connections
// that only claim their peer address, so no IPv6 route is needed.
func TestGateCountsIPv6ByPrefix64(t *testing.T) {
	tests := []struct {
		name                 string
		first, second, third string // one client: the third is refused
		other                string // another client, admitted
	}{
		{"IPv6 /64", "2001:db8:1:2::1", "2001:db8:1:2:ffff:ffff:ffff:ffff", "2001:db8:1:2:abcd::5", "2001:db8:1:3::1"},
		{"link-local with zones", "fe80::1%eth0", "fe80::2%eth1", "fe80::3", "fe80:0:0:1::1"},
		{"IPv4 and IPv4-mapped", "192.0.2.1", "::ffff:192.0.2.1", "192.0.2.1", "192.0.2.2"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			first := mustFrom(t, tt.first)
			l := &queueListener{conns: []net.Conn{first, mustFrom(t, tt.second), mustFrom(t, tt.third), mustFrom(t, tt.other)}}
			g := newGate(l, 0, 2, nil)
			var got []net.Conn
			for {
				c, err := g.Accept()
				if err != nil {
					break
				}
				got = append(got, c)
			}
			var peers []string
			for _, c := range got {
				peers = append(peers, peerOf(c))
			}
			if len(got) != 3 || g.Refused() != 1 || peerOf(got[2]) != tt.other {
				t.Fatalf("-max-conns-per-client 2 admitted %v, refused %d; want %s, %s and %s admitted, %s refused",
					peers, g.Refused(), tt.first, tt.second, tt.other, tt.third)
			}
			got[0].Close() // the first of the client's two leaves: room for one more
			l.conns = []net.Conn{mustFrom(t, tt.third), mustFrom(t, tt.third)}
			if c, err := g.Accept(); err != nil || peerOf(c) != tt.third {
				t.Errorf("after one of its two closed, a connection from %s: %v, %v; want admitted", tt.third, c, err)
			}
			if _, err := g.Accept(); err == nil || g.Refused() != 2 {
				t.Errorf("then another from %s: admitted, %d refused; want refused, 2", tt.third, g.Refused())
			}
		})
	}
}

// peerOf returns c's peer address as written, or "" if c is nil.
func peerOf(c net.Conn) string {
	if c == nil {
		return ""
	}
	return c.RemoteAddr().(*net.TCPAddr).AddrPort().Addr().String()
}
