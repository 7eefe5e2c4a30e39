//go:build linux

package main

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"testing"
	"time"

	"visitors/internal/servertest"
)

// TestBinarySlowloris: on the real binary over plain HTTP, where the
// listener's gate, not http.Server, keeps the header bound (5s, cut up
// to a watcher's tick of 0.5s late), slowloris clients that fill
// -max-conns, from a trusted proxy (not counted per client) and from
// two addresses up to -max-conns-per-client each, trickling a header a
// byte every 100ms, are every one cut within the bound; the address
// past its bound is answered 429 at once; and once they are cut, a
// client waiting in the accept queue is served.
func TestBinarySlowloris(t *testing.T) {
	const (
		header = 5 * time.Second // DefaultTimeouts.ReadHeader
		tick   = header / 10     // the watcher looks every 0.5s
		slack  = 2 * time.Second
	)
	p := servertest.Start(t, bin, nil, "-store", "memory", "-log-level", "off",
		"-max-conns", "20", "-max-conns-per-client", "3", "-trusted-proxies", "127.0.0.1")
	type loris struct {
		c      net.Conn
		dialed time.Time
	}
	var lorises []loris
	refused := func() {
		// Past its address's bound: refused at once, holding no slot.
		c, err := dialFrom("127.0.0.2").Dial("tcp", p.Addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(time.Second))
		if resp, err := http.ReadResponse(bufio.NewReader(c), nil); err != nil || resp.StatusCode != http.StatusTooManyRequests {
			t.Errorf("a 4th connection from 127.0.0.2 = %v, %v; want 429 at once", resp, err)
		}
	}
	froms := []string{"127.0.0.2", "127.0.0.2", "127.0.0.2", "127.0.0.3", "127.0.0.3", "127.0.0.3"}
	for len(froms) < 20 {
		froms = append(froms, "127.0.0.1")
	}
	for i, from := range froms {
		if i == len(froms)-1 {
			refused() // while a slot of -max-conns is free
		}
		dialed := time.Now()
		c, err := dialFrom(from).Dial("tcp", p.Addr)
		if err != nil {
			t.Fatalf("loris %d from %s: %v", i, from, err)
		}
		defer c.Close()
		io.WriteString(c, "GET /hi HTTP/1.1\r\nHost: x\r\nX-Slow: ")
		go func() {
			for {
				time.Sleep(100 * time.Millisecond)
				if _, err := c.Write([]byte("a")); err != nil {
					return
				}
			}
		}()
		lorises = append(lorises, loris{c, dialed})
	}

	// Every slot is held: a client waits in the accept queue until the
	// lorises are cut, then is served.
	waiting := make(chan error, 1)
	waitStart := time.Now()
	go func() {
		c, err := dialFrom("127.0.0.4").Dial("tcp", p.Addr)
		if err != nil {
			waiting <- err
			return
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(header + tick + slack))
		io.WriteString(c, "GET /hi HTTP/1.1\r\nHost: x\r\n\r\n")
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err == nil && resp.StatusCode != http.StatusOK {
			err = fmt.Errorf("answered %s, want 200", resp.Status)
		}
		waiting <- err
	}()

	var wg sync.WaitGroup
	var mu sync.Mutex
	var latest time.Duration
	for i, l := range lorises {
		wg.Go(func() {
			l.c.SetReadDeadline(l.dialed.Add(header + tick + slack))
			_, err := io.Copy(io.Discard, l.c)
			took := time.Since(l.dialed)
			if ne, ok := err.(net.Error); ok && ne.Timeout() {
				t.Errorf("loris %d still open %v after it connected, want cut within %v", i, took.Round(time.Millisecond), header+tick)
				return
			}
			if took < header-tick {
				t.Errorf("loris %d cut %v after it connected, before the header bound %v", i, took.Round(time.Millisecond), header)
			}
			mu.Lock()
			latest = max(latest, took-header)
			mu.Unlock()
		})
	}
	wg.Wait()
	t.Logf("every loris cut, the latest %v past the header bound", latest.Round(time.Millisecond))
	if err := <-waiting; err != nil {
		t.Errorf("the client waiting for a slot: %v", err)
	}
	t.Logf("the waiting client served %v after it connected", time.Since(waitStart).Round(time.Millisecond))
}
