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
	"visitors/internal/coarse"
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
	write          time.Duration // the longest a Write may block (0: no bound); see gateConn.Write
	clock          *coarse.Clock // what the deadlines below are judged by; required if write > 0 or watching

	// Set by watch, before the gate accepts: each connection's phase is
	// kept, and one goroutine cuts those too long in one (see watch).
	watching  bool
	header    time.Duration // the longest from a request's first byte (or the accept) to its whole header
	idleFor   time.Duration // the longest between requests (0: no bound)
	sem       chan struct{} // a token per open connection; nil: no max
	done      chan struct{} // closed by Close
	closeOnce sync.Once
	refused   atomic.Uint64 // connections refused by perClient

	mu      sync.Mutex // guards clients, conns and swept
	clients map[netip.Addr]int
	conns   map[*gateConn]struct{}
	swept   time.Time // when the idle connections were last cut short
	open    atomic.Int64
	fresh   atomic.Int64 // connections whose first request has not begun (see drain.go)
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
	if g.watching {
		gc.phase.Store(since(g.clock.Now(), phaseNew))
	}
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
	gc.fresh.Store(true)
	g.fresh.Add(1)
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
		if s != http.StateNew {
			gc.begun()
		}
		gc.idle.Store(s == http.StateIdle)
		if g.watching {
			switch s {
			case http.StateActive:
				gc.phase.Store(phaseActive)
			case http.StateIdle:
				gc.phase.Store(since(g.clock.Now(), phaseIdle))
			}
		}
	}
}

// The phases of a connection the gate watches, in the low two bits of
// gateConn.phase; the rest is when it began, on the gate's clock.
const (
	phaseNew    = iota // accepted: its first request's header not yet read whole
	phaseIdle          // between requests: the last answered, no byte of the next
	phaseHeader        // the next request's first bytes came; its header not yet whole
	phaseActive        // a request's header is read: its handler runs (it may read a body)
)

// since packs a phase and when it began.
func since(now int64, phase int64) int64 { return now<<2 | phase }

// aLongTimeAgo is a read deadline that has passed: set, it ends a read
// at once.
var aLongTimeAgo = time.Unix(1, 0)

// watch keeps each connection's phase from now on, and, every tick until
// the gate closes, cuts a connection that has not sent a request's whole
// header within header of its first byte (of the accept, for the first
// request), or that has been idle for idle since its last answer
// (CrowdedIdle while the listener is crowded; 0: no bound). A cut sets
// a read deadline that has passed: net/http's read fails and it closes
// the connection, as after a deadline of its own. A cut comes at most a
// tick late. watch must be called before the gate accepts.
//
// This is ReadHeaderTimeout and IdleTimeout of http.Server without
// their price: each sets a read deadline per request, which net/http
// then clears, runtime timer updates and time.Now calls that bare
// net/http does not pay (docs/performance.md, issue 26). Here a request
// costs an atomic load per read and two stores of the coarse clock's
// reading, and the gate one goroutine that wakes every tick.
func (g *connGate) watch(header, idle, tick time.Duration, clock *coarse.Clock) {
	g.watching, g.header, g.idleFor, g.clock = true, header, idle, clock
	go func() {
		t := time.NewTicker(tick)
		defer t.Stop()
		for {
			select {
			case <-t.C:
				g.cutLate()
			case <-g.done:
				return
			}
		}
	}()
}

// cutLate cuts the connections past their phase's bound; see watch.
func (g *connGate) cutLate() {
	idle := g.idleFor
	if g.crowded() && (idle == 0 || idle > CrowdedIdle) {
		idle = CrowdedIdle
	}
	now := g.clock.Now()
	g.mu.Lock()
	defer g.mu.Unlock()
	for c := range g.conns {
		p := c.phase.Load()
		var bound time.Duration
		switch p & 3 {
		case phaseNew, phaseHeader:
			bound = g.header
		case phaseIdle:
			bound = idle
		default:
			continue // a handler's, however long: a live stream, an export
		}
		if bound > 0 && now-p>>2 >= int64(bound) {
			c.Conn.SetReadDeadline(aLongTimeAgo)
		}
	}
}

// Close stops accepting and wakes the Accept waiting for a slot.
func (g *connGate) Close() error {
	err := g.Listener.Close()
	g.closeOnce.Do(func() { close(g.done) })
	return err
}

// cutFresh closes the connections whose first request has not begun:
// at a stop, once the fresh wait is over (see drain). net/http's read
// fails and it closes the connection, which gives back its counts.
func (g *connGate) cutFresh() {
	g.mu.Lock()
	defer g.mu.Unlock()
	for c := range g.conns {
		if c.fresh.Load() {
			c.Conn.Close()
		}
	}
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
	fresh     atomic.Bool // no request begun yet; counted in g.fresh
	closeOnce sync.Once

	// The write deadline armed on Conn, on g.clock (0: none), and
	// whether SetWriteDeadline set it rather than the gate.
	writeBy  atomic.Int64
	explicit atomic.Bool

	phase atomic.Int64 // if g.watching: since(when, phase)
}

// Read reads from c; the first bytes of a request after an idle time
// start its header's phase, if the gate watches c.
func (c *gateConn) Read(b []byte) (int, error) {
	n, err := c.Conn.Read(b)
	if n > 0 && c.g.watching && c.phase.Load()&3 == phaseIdle {
		c.phase.Store(since(c.g.clock.Now(), phaseHeader))
	}
	return n, err
}

// Write writes b to c. Unless a deadline set by SetWriteDeadline holds,
// a Write that blocks (a client that reads nothing, once the socket's
// buffers are full) fails after between half of g.write and g.write:
// the gate arms the write deadline again only when the armed one is
// less than half of g.write away, or more than g.write. This is the
// protection of http.Server's WriteTimeout, for every response at once,
// without its price: WriteTimeout sets a deadline after every request
// and clears it after every response, two runtime timer updates and a
// time.Now a request (docs/performance.md, issue 26); here it costs a
// read of the coarse clock, and a timer update every g.write/2 on a
// busy connection.
func (c *gateConn) Write(b []byte) (int, error) {
	if w := int64(c.g.write); w > 0 && !c.explicit.Load() {
		now := c.g.clock.Now()
		if left := c.writeBy.Load() - now; left < w/2 || left > w {
			c.writeBy.Store(now + w)
			c.Conn.SetWriteDeadline(time.Now().Add(c.g.write))
		}
	}
	return c.Conn.Write(b)
}

// SetWriteDeadline sets c's write deadline to t, for the writes until
// the next call: a handler's own deadline, through
// http.ResponseController (a live stream's, an export's). The zero t,
// which net/http sets after every response, hands the deadline back to
// the gate (see Write) if it bounds writes.
func (c *gateConn) SetWriteDeadline(t time.Time) error {
	if c.g.write > 0 {
		if t.IsZero() {
			if c.explicit.Load() {
				c.explicit.Store(false)
			}
			return nil // the next Write judges the armed deadline
		}
		c.explicit.Store(true)
		c.writeBy.Store(c.g.clock.Now() + int64(time.Until(t)))
	}
	return c.Conn.SetWriteDeadline(t)
}

// SetDeadline sets c's read and write deadlines, as SetReadDeadline and
// SetWriteDeadline do.
func (c *gateConn) SetDeadline(t time.Time) error {
	rerr := c.SetReadDeadline(t)
	if err := c.SetWriteDeadline(t); err != nil {
		return err
	}
	return rerr
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

// begun marks c's first request begun (or c closed): no longer fresh.
// After the first, a call costs a load, not a compare-and-swap: it runs
// on every change of the connection's state, twice a request.
func (c *gateConn) begun() {
	if c.fresh.Load() && c.fresh.CompareAndSwap(true, false) {
		c.g.fresh.Add(-1)
	}
}

// Close closes c and gives back its slot and its client's count, once.
func (c *gateConn) Close() error {
	err := c.Conn.Close()
	c.begun()
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
