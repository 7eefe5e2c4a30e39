package app

import (
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"visitors/internal/client"
)

// DefaultMaxConnsPerClient is -max-conns-per-client's default: a browser
// opens at most 6 connections to a host, so a hundred leaves room for a
// crowd behind one NAT address, and a hundred addresses are needed to
// fill the default -max-conns.
const DefaultMaxConnsPerClient = 100

// CrowdedIdle is how long a keep-alive connection may stay idle while the
// public listener is crowded: at least [CrowdedPercent] of -max-conns
// open. Otherwise it is [Timeouts].Idle.
const CrowdedIdle = 2 * time.Second

// CrowdedPercent is how full, in percent of -max-conns, the public
// listener is crowded.
const CrowdedPercent = 75

// msgTooManyConns is the answer to a connection past
// -max-conns-per-client.
const msgTooManyConns = "Too many connections from your address: at most %d at once (-max-conns-per-client); close idle ones and retry\n"

// connGate is the public listener's admission of connections. At most max
// are open (0: no limit): past it, a new connection waits in the
// kernel's accept queue until one closes, as with
// golang.org/x/net/netutil's LimitListener. At most perClient come from
// one client address (IPv6 by /64; 0: no limit; a trusted proxy's are
// not counted): past it, a connection is answered 429 and closed at
// once, and takes no slot of max. While at least CrowdedPercent of max
// are open, a keep-alive connection may be idle for CrowdedIdle only.
// Its methods may be called concurrently.
type connGate struct {
	net.Listener
	max, perClient int
	trusted        *client.Proxies
	sem            chan struct{} // a token per open connection; nil: no max
	done           chan struct{} // closed by Close
	closeOnce      sync.Once
	refused        atomic.Uint64 // connections refused by perClient

	mu      sync.Mutex // guards clients, conns and swept
	clients map[netip.Addr]int
	conns   map[*gateConn]struct{}
	swept   time.Time // when the idle connections were last cut short
	open    atomic.Int64
}

// newGate returns l behind a gate of max connections, perClient per
// client address, trusted exempt. The caller must set the server's
// ConnState to the gate's connState.
func newGate(l net.Listener, max, perClient int, trusted *client.Proxies) *connGate {
	g := &connGate{Listener: l, max: max, perClient: perClient, trusted: trusted, done: make(chan struct{}),
		clients: make(map[netip.Addr]int), conns: make(map[*gateConn]struct{})}
	if max > 0 {
		g.sem = make(chan struct{}, max)
	}
	return g
}

// Accept waits for a slot of max, then returns the next connection that
// its client's bound admits.
func (g *connGate) Accept() (net.Conn, error) {
	if g.sem != nil {
		select {
		case g.sem <- struct{}{}:
		case <-g.done:
			return nil, net.ErrClosed
		}
	}
	for {
		c, err := g.Listener.Accept()
		if err != nil {
			g.release()
			return nil, err
		}
		gc, ok := g.admit(c)
		if !ok {
			g.refuse(c)
			continue
		}
		if g.crowded() {
			g.sweep()
		}
		return gc, nil
	}
}

// admit counts c against its client's bound and reports whether it is
// within it.
func (g *connGate) admit(c net.Conn) (*gateConn, bool) {
	gc := &gateConn{Conn: c, g: g}
	var peer netip.Addr
	if t, ok := c.RemoteAddr().(*net.TCPAddr); ok {
		peer = t.AddrPort().Addr().Unmap().WithZone("")
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.perClient > 0 && peer.IsValid() && !g.trusted.Contains(peer) {
		gc.id, gc.counted = client.Group(peer), true
		if g.clients[gc.id] >= g.perClient {
			return nil, false
		}
		g.clients[gc.id]++
	}
	g.conns[gc] = struct{}{}
	g.open.Add(1)
	return gc, true
}

// refuse answers a connection past its client's bound with a 429, and
// closes it. The answer fits a socket's send buffer: the write does not
// wait for the client.
func (g *connGate) refuse(c net.Conn) {
	g.refused.Add(1)
	body := fmt.Sprintf(msgTooManyConns, g.perClient)
	c.SetWriteDeadline(time.Now().Add(100 * time.Millisecond))
	fmt.Fprintf(c, "HTTP/1.1 429 Too Many Requests\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s", len(body), body)
	c.Close()
}

// release gives back a slot of max.
func (g *connGate) release() {
	if g.sem != nil {
		<-g.sem
	}
}

// crowded reports whether at least CrowdedPercent of max are open.
func (g *connGate) crowded() bool {
	return g.max > 0 && g.open.Load()*100 >= int64(g.max)*CrowdedPercent
}

// sweep cuts short the idle time of the connections idle now, at most
// once per CrowdedIdle: those that went idle before the listener was
// crowded were given the whole idle timeout.
func (g *connGate) sweep() {
	now := time.Now()
	g.mu.Lock()
	defer g.mu.Unlock()
	if now.Sub(g.swept) < CrowdedIdle {
		return
	}
	g.swept = now
	for c := range g.conns {
		if c.idle.Load() {
			c.Conn.SetReadDeadline(now.Add(CrowdedIdle))
		}
	}
}

// connState tells the gate which connections are idle: it is the
// server's ConnState.
func (g *connGate) connState(c net.Conn, s http.ConnState) {
	if tc, ok := c.(*tls.Conn); ok { // -tls-domains, -tls-cert
		c = tc.NetConn()
	}
	if gc, ok := c.(*gateConn); ok {
		gc.idle.Store(s == http.StateIdle)
	}
}

// Close stops accepting and wakes the Accept waiting for a slot.
func (g *connGate) Close() error {
	err := g.Listener.Close()
	g.closeOnce.Do(func() { close(g.done) })
	return err
}

// Refused returns how many connections were refused by the bound per
// client.
func (g *connGate) Refused() uint64 { return g.refused.Load() }

// Open returns how many connections are open.
func (g *connGate) Open() int64 { return g.open.Load() }

// gateConn is a connection the gate admitted.
type gateConn struct {
	net.Conn
	g         *connGate
	id        netip.Addr // the client, if counted
	counted   bool       // id's count holds this connection
	idle      atomic.Bool
	closeOnce sync.Once
}

// SetReadDeadline sets c's read deadline, no later than CrowdedIdle from
// now if c is idle and the listener crowded: net/http sets the idle
// timeout this way when a connection turns idle.
func (c *gateConn) SetReadDeadline(t time.Time) error {
	if c.idle.Load() && c.g.crowded() {
		if short := time.Now().Add(CrowdedIdle); t.IsZero() || t.After(short) {
			t = short
		}
	}
	return c.Conn.SetReadDeadline(t)
}

// Close closes c and gives back its slot and its client's count, once.
func (c *gateConn) Close() error {
	err := c.Conn.Close()
	c.closeOnce.Do(func() {
		g := c.g
		g.mu.Lock()
		if c.counted {
			if n := g.clients[c.id]; n <= 1 {
				delete(g.clients, c.id)
			} else {
				g.clients[c.id] = n - 1
			}
		}
		delete(g.conns, c)
		g.open.Add(-1)
		g.mu.Unlock()
		g.release()
	})
	return err
}
