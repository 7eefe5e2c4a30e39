package app

import (
	"bufio"
	"crypto/tls"
	"io"
	"net"
	"net/http"
	"reflect"
	"testing"
	"time"

	"visitors/internal/coarse"
)

// TestHeaderTrickleCut: a client that sends its header a byte at a
// time, each well within any per-read bound, is cut off ReadHeader
// after the request's first byte: on a new connection, and on a
// keep-alive one after a first request was answered (the gate's watch
// times a header from its first byte, not from each read).
func TestHeaderTrickleCut(t *testing.T) {
	const short = 300 * time.Millisecond
	to := longTimeouts()
	to.ReadHeader = short
	r := mustStart(t, testConfig(), to, io.Discard)
	for _, keepAlive := range []bool{false, true} {
		c := mustDial(t, r.addr)
		if keepAlive {
			mustWrite(t, c, "GET /whoami HTTP/1.1\r\nHost: x\r\n\r\n")
			resp, err := http.ReadResponse(bufio.NewReader(c), nil)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			time.Sleep(2 * short) // idle, within the idle bound of a minute
		}
		start := time.Now()
		mustWrite(t, c, "GET /hi HTTP/1.1\r\nHost: x\r\n")
		go func() {
			for {
				time.Sleep(short / 10)
				if _, err := c.Write([]byte("X")); err != nil {
					return // cut
				}
			}
		}()
		expectCut(t, c, start, short+slack, "a header sent a byte at a time")
	}
}

// recordingConn is a net.Conn that takes every write and counts the
// write deadlines set on it.
type recordingConn struct {
	net.Conn
	deadlines []time.Time
}

func (c *recordingConn) Write(b []byte) (int, error) { return len(b), nil }
func (c *recordingConn) SetWriteDeadline(t time.Time) error {
	c.deadlines = append(c.deadlines, t)
	return nil
}

// TestWriteDeadlineArmedLazily: the gate arms a connection's write
// deadline on its first write and again only when the armed one is less
// than half the bound away, not on every write; a handler's own
// deadline holds until net/http clears it after the response, which
// hands the writes back to the gate without a call on the connection,
// and it keeps a handler's deadline that is within its bound.
func TestWriteDeadlineArmedLazily(t *testing.T) {
	const w = 10 * time.Second
	clock := coarse.Manual()
	g := newGate(nil, 0, 0, nil)
	g.write, g.clock = w, clock
	rc := &recordingConn{}
	c := &gateConn{Conn: rc, g: g}
	write := func(n int) {
		t.Helper()
		for range n {
			if _, err := c.Write([]byte("x")); err != nil {
				t.Fatal(err)
			}
		}
	}
	want := func(n int, when string) {
		t.Helper()
		if len(rc.deadlines) != n {
			t.Fatalf("%s: %d write deadlines set, want %d", when, len(rc.deadlines), n)
		}
	}
	write(1000)
	want(1, "1000 writes at once")
	if d := time.Until(rc.deadlines[0]); d < w-time.Second || d > w {
		t.Errorf("the deadline armed is %v away, want %v", d, w)
	}
	clock.Advance(w / 2) // exactly w/2 left: not less (mutation conns.go:322:43, `<` → `<=`)
	write(1000)
	want(1, "1000 writes w/2 later")
	clock.Advance(time.Millisecond) // under w/2 left
	write(1000)
	want(2, "1000 writes past w/2")

	// A live stream's deadline, an hour away: set as asked, kept.
	c.SetWriteDeadline(time.Now().Add(time.Hour))
	want(3, "a handler's deadline")
	clock.Advance(w)
	write(10)
	want(3, "writes under a handler's deadline")
	// net/http clears it after the response: the next write brings the
	// hour down to the gate's bound.
	c.SetWriteDeadline(time.Time{})
	want(3, "the deadline cleared")
	write(10)
	want(4, "writes after the handler's deadline was cleared")
	if d := time.Until(rc.deadlines[3]); d > w {
		t.Errorf("after a handler's deadline of an hour, the gate's is %v away, want at most %v", d, w)
	}

	// A handler's deadline within the gate's bound (a stream's, 3/4 of
	// it away), cleared: the next write keeps it, as it would keep one
	// of its own that far away. Mutation survivor conns.go:344:35 (the
	// deadline taken as that far in the past) armed another.
	c.SetWriteDeadline(time.Now().Add(w * 3 / 4))
	c.SetWriteDeadline(time.Time{})
	want(5, "a handler's deadline of 3/4 the bound, cleared")
	write(10)
	want(5, "writes after a handler's deadline of 3/4 the bound was cleared")
}

// TestPublicServerDeadlines: over plain HTTP the gate keeps the public
// listener's bounds and the http.Server has none of its own; with TLS
// (HTTP/2, whose streams the gate does not see) the http.Server has all
// four, and the gate none.
func TestPublicServerDeadlines(t *testing.T) {
	to := DefaultTimeouts
	h := http.NotFoundHandler()

	plain := newGate(mustListen(t), 0, 0, nil)
	defer plain.Close()
	srv := publicServer(h, plain, to, nil, coarse.Manual())
	if srv.ReadHeaderTimeout != 0 || srv.ReadTimeout != 0 || srv.WriteTimeout != 0 || srv.IdleTimeout != 0 {
		t.Errorf("plain HTTP: http.Server timeouts %v %v %v %v, want none", srv.ReadHeaderTimeout, srv.ReadTimeout, srv.WriteTimeout, srv.IdleTimeout)
	}
	if !plain.watching || plain.header != to.ReadHeader || plain.idleFor != to.Idle || plain.write != to.Write {
		t.Errorf("plain HTTP: gate watching %v, header %v, idle %v, write %v; want true, %v, %v, %v", plain.watching, plain.header, plain.idleFor, plain.write, to.ReadHeader, to.Idle, to.Write)
	}
	if bd, ok := srv.Handler.(bodyDeadline); !ok || bd.d != to.Read {
		t.Errorf("plain HTTP: handler %T, want a bodyDeadline of %v", srv.Handler, to.Read)
	}

	// -read-timeout 0: no bound on a body, so no deadline at all (one of
	// 0 from the handler's start would cut every body at once).
	noRead := newGate(mustListen(t), 0, 0, nil)
	defer noRead.Close()
	to0 := to
	to0.Read = 0
	if srv := publicServer(h, noRead, to0, nil, coarse.Manual()); reflect.TypeOf(srv.Handler) != reflect.TypeOf(h) {
		t.Errorf("plain HTTP, Read 0: handler %T, want the handler itself (%T)", srv.Handler, h)
	}

	tlsGate := newGate(mustListen(t), 0, 0, nil)
	defer tlsGate.Close()
	srv = publicServer(h, tlsGate, to, &tls.Config{}, coarse.Manual())
	if srv.ReadHeaderTimeout != to.ReadHeader || srv.ReadTimeout != to.Read || srv.WriteTimeout != to.Write || srv.IdleTimeout != to.Idle {
		t.Errorf("TLS: http.Server timeouts %v %v %v %v, want %v %v %v %v", srv.ReadHeaderTimeout, srv.ReadTimeout, srv.WriteTimeout, srv.IdleTimeout, to.ReadHeader, to.Read, to.Write, to.Idle)
	}
	if tlsGate.watching || tlsGate.write != 0 {
		t.Errorf("TLS: gate watching %v, write %v; want false, 0", tlsGate.watching, tlsGate.write)
	}
}

// TestWatchTick: the gate looks for late connections every quarter of
// the shortest of the header and idle bounds (CrowdedIdle's, when that
// is shorter, or when neither is set), so that a cut comes at most a
// quarter late; never more often than every 10ms.
func TestWatchTick(t *testing.T) {
	for _, tt := range []struct {
		header, idle, want time.Duration
	}{
		{5 * time.Second, time.Minute, CrowdedIdle / 4}, // the defaults: CrowdedIdle is the shortest
		{time.Second, time.Minute, 250 * time.Millisecond},
		{time.Minute, 800 * time.Millisecond, 200 * time.Millisecond},
		{0, 400 * time.Millisecond, 100 * time.Millisecond}, // 0: no bound, not the shortest
		{400 * time.Millisecond, 0, 100 * time.Millisecond},
		{0, 0, CrowdedIdle / 4},
		{CrowdedIdle, time.Minute, CrowdedIdle / 4},
		{20 * time.Millisecond, time.Minute, 10 * time.Millisecond}, // the floor
		{time.Millisecond, time.Minute, 10 * time.Millisecond},
	} {
		to := DefaultTimeouts
		to.ReadHeader, to.Idle = tt.header, tt.idle
		if got := watchTick(to); got != tt.want {
			t.Errorf("watchTick(header %v, idle %v) = %v, want %v", tt.header, tt.idle, got, tt.want)
		}
	}
}

func mustListen(t *testing.T) net.Listener {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return l
}
