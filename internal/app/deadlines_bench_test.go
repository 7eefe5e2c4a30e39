//go:build unix

package app

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"strconv"
	"syscall"
	"testing"
	"time"

	"visitors/internal/coarse"
)

// benchBody is what the benchmarks' handler answers: about 60 bytes,
// like /hi's.
var benchBody = []byte("<h1 style='color: red'>Welcome!</h1>You are visitor number!")

var benchHandler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write(benchBody) })

// BenchmarkDeadlines is what a request pays for the public listener's
// deadlines: a keep-alive client on a real loopback connection sends a
// GET and reads its answer, one at a time, from a server behind the
// gate whose handler writes 60 bytes. Each case sets the deadlines
// another way:
//
//   - none: no deadline at all, net/http's own ceiling;
//   - http.Server: all four of DefaultTimeouts as http.Server's fields
//     (how the service set them until 2026-11-27);
//   - noWrite: http.Server's ReadHeaderTimeout, ReadTimeout and
//     IdleTimeout, no WriteTimeout;
//   - headerIdle: only ReadHeaderTimeout and IdleTimeout;
//   - default: what publicServer makes of DefaultTimeouts.
//
// cpu-ns/op is the process's CPU time per request, client included.
func BenchmarkDeadlines(b *testing.B) {
	to := DefaultTimeouts
	cases := []struct {
		name string
		srv  func(g *connGate) *http.Server
	}{
		{"none", func(g *connGate) *http.Server {
			g.write = 0
			return &http.Server{ConnState: g.connState}
		}},
		{"http.Server", func(g *connGate) *http.Server {
			g.write = 0
			return &http.Server{ReadHeaderTimeout: to.ReadHeader, ReadTimeout: to.Read, WriteTimeout: to.Write, IdleTimeout: to.Idle, ConnState: g.connState}
		}},
		{"noWrite", func(g *connGate) *http.Server {
			g.write = 0
			return &http.Server{ReadHeaderTimeout: to.ReadHeader, ReadTimeout: to.Read, IdleTimeout: to.Idle, ConnState: g.connState}
		}},
		{"headerIdle", func(g *connGate) *http.Server {
			g.write = 0
			return &http.Server{ReadHeaderTimeout: to.ReadHeader, IdleTimeout: to.Idle, ConnState: g.connState}
		}},
		{"default", func(g *connGate) *http.Server {
			// A clock of 100ms ticks, not the service's 1ms: under
			// valgrind, which runs the benchmark about 50 times
			// slower, a thousand ticks a second would be counted as
			// a tick every other request.
			clock := coarse.Start(100 * time.Millisecond)
			b.Cleanup(clock.Stop)
			return publicServer(benchHandler, g, to, nil, clock)
		}},
	}
	for _, c := range cases {
		b.Run("deadlines="+c.name, func(b *testing.B) {
			l, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				b.Fatal(err)
			}
			g := newGate(l, 0, 0, nil)
			g.write = to.Write
			srv := c.srv(g)
			if srv.Handler == nil {
				srv.Handler = benchHandler
			}
			go srv.Serve(g)
			defer srv.Close()
			conn, err := net.Dial("tcp", l.Addr().String())
			if err != nil {
				b.Fatal(err)
			}
			defer conn.Close()
			req := []byte("GET /hi HTTP/1.1\r\nHost: x\r\n\r\n")
			n := mustResponseLen(b, conn, req)
			buf := make([]byte, n)
			b.ReportAllocs()
			start := processCPU()
			for b.Loop() {
				if _, err := conn.Write(req); err != nil {
					b.Fatal(err)
				}
				if _, err := io.ReadFull(conn, buf); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(processCPU()-start)/float64(b.N), "cpu-ns/op")
		})
	}
}

// mustResponseLen sends req on c and returns the length of its answer,
// header and body: every answer of the benchmark's handler has the same
// (its Date header is of fixed width).
func mustResponseLen(tb testing.TB, c net.Conn, req []byte) int {
	tb.Helper()
	if _, err := c.Write(req); err != nil {
		tb.Fatal(err)
	}
	cr := &countingConn{r: c}
	br := bufio.NewReader(cr)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		tb.Fatal(err)
	}
	body, err := io.ReadAll(resp.Body)
	if err != nil || string(body) != string(benchBody) {
		tb.Fatalf("answer %q (%v), want %q", body, err, benchBody)
	}
	if br.Buffered() != 0 {
		tb.Fatalf("%d bytes past the first answer", br.Buffered())
	}
	if resp.ContentLength != int64(len(benchBody)) {
		tb.Fatalf("Content-Length %s, want %d", strconv.FormatInt(resp.ContentLength, 10), len(benchBody))
	}
	return cr.n
}

type countingConn struct {
	r io.Reader
	n int
}

func (c *countingConn) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += n
	return n, err
}

// processCPU returns the CPU time this process has spent, user and
// system, every thread.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
