package app

import (
	"time"
)

// freshWait bounds how long a stop waits for the connections accepted
// but not yet sending a request: a client sends its request as soon as
// it has connected, and one that sends nothing (a TCP health check)
// should not hold up every restart by the whole header timeout.
const freshWait = time.Second

// drain stops the servers within timeout without dropping a request a
// client has already sent. net/http's Shutdown closes, without an
// answer, a connection whose request it reads once Shutdown has begun:
// a connection accepted just before the stop, its request still on the
// way, got EOF (TestRestartRefusesNoConnection saw it on up to 8
// visits of about 5,000 at a restart). So drain first closes the
// listeners (what is not accepted waits in the socket's backlog: under
// socket activation, for the next process), waits for each Serve to
// return (a connection Accept got as the listener closed is counted
// once Accept returns it), then waits, at most freshWait in all, until
// every connection accepted (on the public, redirect and admin
// listeners) has begun its request, and only then shuts the servers
// down, which waits for the requests in flight and closes the idle
// connections. A connection still without a request after the wait is
// closed: Shutdown would wait for it until it is 5 seconds old
// (net/http's issue 22682), and the gate's header timeout no longer
// watches it once the gate is closed.
//
// Keep-alives are not turned off first (SetKeepAlivesEnabled(false)):
// that closes the idle connections without Shutdown's guard, so a
// request read from one just as it closed was counted and its answer
// lost, and the client, which read nothing, sent it again: counted
// twice (seen: 913 visits stored for 911 acknowledged). Shutdown
// closes an idle connection only after it is marked shutting down, and
// a request read then is dropped before its handler: the client sends
// it again on a new connection, counted once.
func (s *service) drain(timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for _, l := range s.listeners {
		l.Close() // Serve returns; its connections are served on
	}
	fresh := freshWait
	if h := s.to.ReadHeader; h > 0 && h < fresh {
		fresh = h
	}
	until := time.Now().Add(fresh)
	if deadline.Before(until) {
		until = deadline
	}
	// A connection the kernel gave Accept as the listener closed is
	// counted fresh only once Accept returns it: wait for each Serve to
	// return (its Accept failed), so that none is counted late.
	late := time.NewTimer(time.Until(until))
	defer late.Stop()
wait:
	for range s.servers {
		select {
		case <-s.served:
		case <-late.C:
			break wait
		}
	}
	var gates []*connGate
	for _, l := range s.listeners {
		if g, ok := l.(*connGate); ok {
			gates = append(gates, g)
		}
	}
	for _, g := range gates {
		for g.fresh.Load() > 0 && time.Now().Before(until) {
			time.Sleep(5 * time.Millisecond)
		}
	}
	for _, g := range gates {
		g.cutFresh() // else Shutdown waits for them until they are 5s old
	}
	return shutdown(s.servers, time.Until(deadline))
}
