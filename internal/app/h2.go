package app

import (
	"fmt"
	"io"
	"net/http"
	"net/netip"
	"sync"
	"time"

	"visitors/internal/client"
)

// MaxStreamsPerConn is how many HTTP/2 streams (requests) one
// connection to the public listener may have open at once: the least
// that HTTP/2's specification recommends, where net/http's default is
// 250. What one client may have in flight over all its connections is
// bounded apart (see streamBound).
const MaxStreamsPerConn = 100

// refuseWrite bounds the write of an HTTP/2 refusal: a client that
// reads nothing (a flow-control window of 0) does not hold the
// handler's goroutine for the write timeout.
const refuseWrite = 100 * time.Millisecond

// Client messages of streamBound.
const (
	msgTooManyInFlight = "Too many requests in flight from your address: at most %d at once (-max-conns-per-client); wait for answers and retry\n"
	msgBusy            = "Too many requests in flight: try again in a moment (-max-conns)\n"
)

// streamBound bounds the HTTP/2 requests in flight on the public listener
// as the gate bounds its connections. Over HTTP/1.1 a connection
// carries one request at a time, so the gate's bounds are the
// requests'; over HTTP/2 a connection carries up to MaxStreamsPerConn
// at once, and the gate, which counts connections, would let one client
// hold -max-conns-per-client times as many answers (each held until the
// write timeout when the client grants no flow-control window). So at
// most perClient HTTP/2 requests from one client address (IPv6 by /64;
// trusted exempt; 0: no limit) and max in all (0: no limit) are in
// flight at once; past perClient a request is answered 429, past max
// 503, each written within refuseWrite. An HTTP/1 request passes
// untouched. It may be used concurrently.
type streamBound struct {
	h              http.Handler
	max, perClient int
	trusted        *client.Proxies

	mu      sync.Mutex // guards clients and total
	clients map[netip.Addr]int
	total   int
}

// newStreamBound returns h behind bounds of max HTTP/2 requests in flight,
// perClient from one client address, trusted exempt.
func newStreamBound(h http.Handler, max, perClient int, trusted *client.Proxies) *streamBound {
	return &streamBound{h: h, max: max, perClient: perClient, trusted: trusted, clients: make(map[netip.Addr]int)}
}

// ServeHTTP serves r if it is within the bounds, or refuses it.
func (f *streamBound) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.ProtoMajor != 2 {
		f.h.ServeHTTP(w, r)
		return
	}
	id, counted, status := f.enter(r.RemoteAddr)
	if status != 0 {
		f.refuse(w, status)
		return
	}
	defer f.leave(id, counted)
	f.h.ServeHTTP(w, r)
	// An answer that fits net/http's buffer is sent after the handler
	// returns, as the client's window allows: it is in flight until
	// then, and holds a goroutine. The flush waits for it to be sent.
	if fl, ok := w.(http.Flusher); ok {
		fl.Flush()
	}
}

// enter counts a request from remoteAddr, and returns its client, if
// counted, or the status of its refusal.
func (f *streamBound) enter(remoteAddr string) (id netip.Addr, counted bool, status int) {
	if ap, err := netip.ParseAddrPort(remoteAddr); err == nil && f.perClient > 0 {
		if peer := ap.Addr().Unmap().WithZone(""); !f.trusted.Contains(peer) {
			id, counted = client.Group(peer), true
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	switch {
	case f.max > 0 && f.total >= f.max:
		return id, false, http.StatusServiceUnavailable
	case counted && f.clients[id] >= f.perClient:
		return id, false, http.StatusTooManyRequests
	}
	f.total++
	if counted {
		f.clients[id]++
	}
	return id, counted, 0
}

// leave gives back what enter counted.
func (f *streamBound) leave(id netip.Addr, counted bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.total--
	if !counted {
		return
	}
	if n := f.clients[id]; n <= 1 {
		delete(f.clients, id)
	} else {
		f.clients[id] = n - 1
	}
}

// refuse answers a request past a bound with status, within refuseWrite.
func (f *streamBound) refuse(w http.ResponseWriter, status int) {
	http.NewResponseController(w).SetWriteDeadline(time.Now().Add(refuseWrite))
	h := w.Header()
	h.Set("Content-Type", "text/plain; charset=utf-8")
	h.Set("Retry-After", "1")
	w.WriteHeader(status)
	if status == http.StatusTooManyRequests {
		fmt.Fprintf(w, msgTooManyInFlight, f.perClient)
		return
	}
	io.WriteString(w, msgBusy)
}

// MaxReceivePerConn is the most request-body bytes the public listener
// buffers for one HTTP/2 connection, all its streams together, and for
// one stream: the flow-control windows it grants. A body its handler
// does not read (a handler stalled on its answer) is held until the
// stream ends; net/http's default of 1 MiB would let the 100
// connections of one client address hold 100 MiB. An upload over
// HTTP/2 (an import) then goes at most this much a round trip.
const MaxReceivePerConn = 256 << 10
