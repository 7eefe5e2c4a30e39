package main

import (
	"io"
	"net"
	"syscall"
	"testing"
	"time"

	"visitors/internal/servertest"
	"visitors/internal/webtest"
)

// TestStopNotHeldBySilentConnection: a connection accepted before
// SIGTERM, on the public or the admin listener, that sends no request,
// or half a header, holds the stop for
// at most the fresh wait (one second), not until net/http gives up on
// a new connection (five seconds) or the header timeout. The binary
// exits 0 within three seconds of the signal, and the silent
// connections are closed.
func TestStopNotHeldBySilentConnection(t *testing.T) {
	p := servertest.Start(t, bin, rulesOff, "-store", "memory")
	var conns []net.Conn
	for _, d := range []struct{ addr, first string }{
		{p.Addr, ""},
		{p.Addr, "GET /counter/x.json HT"},
		{p.AdminAddr, ""},
	} {
		first := d.first
		c, err := net.Dial("tcp", d.addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		if first != "" {
			if _, err := io.WriteString(c, first); err != nil {
				t.Fatal(err)
			}
		}
		conns = append(conns, c)
	}
	time.Sleep(100 * time.Millisecond) // accepted
	began := time.Now()
	if err := p.Stop(syscall.SIGTERM, webtest.Deadline); err != nil {
		t.Fatalf("the binary after SIGTERM: %v, want exit status 0\n%s", err, p.Stdout())
	}
	if took := time.Since(began); took > 3*time.Second {
		t.Errorf("SIGTERM with a silent connection open took %v to stop, want the fresh wait of 1s and little more", took)
	}
	for _, c := range conns {
		c.SetReadDeadline(time.Now().Add(time.Second))
		if _, err := c.Read(make([]byte, 1)); err == nil {
			t.Errorf("a silent connection read a byte after the stop, want it closed")
		}
	}
}
