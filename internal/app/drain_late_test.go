package app

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"sync"
	"testing"
	"time"
)

// lateListener hands its one connection to Accept only after Close, as
// the kernel does with a connection that accept(2) returned as the
// listener closed: Accept has it, its gate has not yet counted it.
type lateListener struct {
	conn      net.Conn
	closed    chan struct{}
	closeOnce sync.Once
	handed    bool
}

func (l *lateListener) Accept() (net.Conn, error) {
	<-l.closed
	if l.handed {
		return nil, net.ErrClosed
	}
	l.handed = true
	time.Sleep(50 * time.Millisecond)
	return l.conn, nil
}

func (l *lateListener) Close() error {
	l.closeOnce.Do(func() { close(l.closed) })
	return nil
}

func (l *lateListener) Addr() net.Addr { return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)} }

// TestDrainCountsConnectionAcceptedAsListenerCloses: a connection that
// Accept returns just after the stop closed the listener, its request
// sent at once, is answered, not closed unanswered. Before, drain read
// the gate's count of fresh connections right after the close, found
// none, and shut the server down; net/http then read the request and
// dropped it (TestRestartRefusesNoConnection saw that EOF once in 10
// runs).
func TestDrainCountsConnectionAcceptedAsListenerCloses(t *testing.T) {
	server, client := net.Pipe()
	defer client.Close()
	ll := &lateListener{conn: server, closed: make(chan struct{})}
	g := newGate(ll, 0, 0, nil)
	srv := &http.Server{
		Handler:   http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") }),
		ConnState: g.connState,
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(g) }()
	s := &service{to: DefaultTimeouts, servers: []*http.Server{srv}, listeners: []net.Listener{g}, served: errc}

	answered := make(chan error, 1)
	go func() {
		if _, err := io.WriteString(client, "GET / HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
			answered <- err
			return
		}
		resp, err := http.ReadResponse(bufio.NewReader(client), nil)
		if err == nil {
			resp.Body.Close()
		}
		answered <- err
	}()
	if err := s.drain(5 * time.Second); err != nil {
		t.Errorf("drain = %v", err)
	}
	select {
	case err := <-answered:
		if err != nil {
			t.Errorf("the request on a connection accepted as the listener closed: %v, want an answer", err)
		}
	case <-time.After(5 * time.Second):
		t.Error("the request on a connection accepted as the listener closed got nothing within 5s")
	}
}
