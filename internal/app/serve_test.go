package app

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"visitors/internal/servertest"
	"visitors/internal/webtest"
)

// slack is how long after a deadline the tests allow for the cut to be
// seen: timers, the scheduler and the race detector on a shared machine.
const slack = time.Second

// running is a [Run] in the background.
type running struct {
	addr, adminAddr string // adminAddr is "" when the admin listener is off
	cancel          context.CancelFunc
	done            chan error
	shutdown        time.Duration // its -shutdown-timeout

	once sync.Once
	err  error
}

// testConfig is a configuration for tests: memory store, info logs, an
// admin listener.
// Its fairness rules are off (the zero Fair) but for bots, which count:
// the tests here use Go's HTTP client, a bot by its User-Agent.
func testConfig() Config {
	return Config{LogLevel: zerolog.InfoLevel, ShutdownTimeout: 5 * time.Second, Store: StoreMemory, AdminAddr: "127.0.0.1:0", Fair: Fair{CountBots: true}}
}

// mustStart starts Run with cfg in the background, on listeners on free
// loopback ports handed over as fd:N: cfg.Addr is replaced, and so is
// cfg.AdminAddr unless it is "", which keeps the admin listener off. It
// returns once the public listener serves HTTP, and the admin listener
// if it is on. The test's end stops it.
func mustStart(t *testing.T, cfg Config, to Timeouts, stdout io.Writer) *running {
	t.Helper()
	fd, addr, err := servertest.ListenFD()
	if err != nil {
		t.Fatal(err)
	}
	r := &running{addr: addr, done: make(chan error, 1), shutdown: cfg.ShutdownTimeout}
	cfg.Addr = fmt.Sprintf("fd:%d", fd)
	if cfg.AdminAddr != "" {
		fd, addr, err := servertest.ListenFD()
		if err != nil {
			t.Fatal(err)
		}
		cfg.AdminAddr, r.adminAddr = fmt.Sprintf("fd:%d", fd), addr
	}
	ctx, cancel := context.WithCancel(context.Background())
	r.cancel = cancel
	go func() { r.done <- Run(ctx, cfg, to, stdout) }()
	t.Cleanup(func() {
		if err := r.stop(); err != nil {
			t.Errorf("Run() = %v at the test's end, want nil", err)
		}
	})
	waitAnswers(t, r.done, "http://"+addr+"/servertest-ready", 30*time.Second, "the public listener") // it opens the store first
	if r.adminAddr != "" {
		waitAnswers(t, r.done, "http://"+r.adminAddr+"/healthz", adminAfterPublic, "the admin listener")
	}
	return r
}

// adminAfterPublic bounds how long after the public listener the admin
// listener may take to answer: Run starts their servers in one step, so
// only a busy machine's scheduler stands between them.
const adminAfterPublic = 10 * time.Second

// waitAnswers returns once url gets an HTTP answer, any answer, and
// fails the test, naming what (a listener), if none comes within
// deadline or if Run returns first (on done, which it refills). Asked
// of the admin listener, it catches a start that skips the admin server
// within seconds, in the first test to start one: mutations
// app.go:160:38, 163:9, 397:10 and 473:19 left the admin socket
// unserved, and timed out, as each test's requests to it waited
// webtest.Deadline for an answer.
func waitAnswers(t *testing.T, done chan error, url string, deadline time.Duration, what string) {
	t.Helper()
	client := &http.Client{Timeout: time.Second}
	end := time.Now().Add(deadline)
	for {
		resp, err := client.Get(url)
		if err == nil {
			resp.Body.Close()
			return
		}
		select {
		case err := <-done:
			done <- err
			t.Fatalf("Run returned before %s served: %v", what, err)
		default:
		}
		if time.Now().After(end) {
			t.Fatalf("%s did not answer %s within %v: %v", what, url, deadline, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// stopSlack is how long past its -shutdown-timeout Run may take to
// return: the store's and the log's close.
const stopSlack = 10 * time.Second

// stop cancels Run's context and waits for it to return, at most its
// -shutdown-timeout and stopSlack. A shutdown that hangs fails the test
// then: mutation conns.go:147:11 (a connection's Close blocked for ever
// giving back a slot of a gate without -max-conns, and the server's
// shutdown in it) timed out while stop waited webtest.Deadline.
func (r *running) stop() error {
	r.once.Do(func() {
		r.cancel()
		wait := r.shutdown + stopSlack
		select {
		case r.err = <-r.done:
		case <-time.After(wait):
			r.err = fmt.Errorf("Run did not return within %v of its context's end (-shutdown-timeout %v)", wait, r.shutdown)
		}
	})
	return r.err
}

// longTimeouts are DefaultTimeouts with every deadline a minute, so that
// a test sees only the one it shortens.
func longTimeouts() Timeouts {
	to := DefaultTimeouts
	to.ReadHeader, to.Read, to.Write, to.Idle = time.Minute, time.Minute, time.Minute, time.Minute
	return to
}

// mustDial connects to addr. Its reads and writes fail once
// webtest.Deadline has passed (a test may set a deadline of its own), so
// that a server that never answers fails the test instead of hanging it.
func mustDial(t *testing.T, addr string) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	c.SetDeadline(time.Now().Add(webtest.Deadline))
	t.Cleanup(func() { c.Close() })
	return c
}

func mustWrite(t *testing.T, c net.Conn, s string) {
	t.Helper()
	if _, err := io.WriteString(c, s); err != nil {
		t.Fatalf("write %q: %v", s, err)
	}
}

// expectCut reads c until the server closes it, and fails if that takes
// longer than within from start.
func expectCut(t *testing.T, c net.Conn, start time.Time, within time.Duration, what string) {
	t.Helper()
	c.SetReadDeadline(start.Add(within))
	_, err := io.Copy(io.Discard, c)
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		t.Fatalf("%s: the connection was still open %v later", what, within)
	}
}

// TestTimeoutsCutSlowClients: a client that is slow to send its header,
// slow to send its body, idle after a response, or that does not read
// its response is cut off within about a second of the matching
// deadline, while every other deadline is a minute.
func TestTimeoutsCutSlowClients(t *testing.T) {
	const short = 200 * time.Millisecond
	tests := []struct {
		name string
		set  func(*Timeouts)
		// client talks to the server and returns when the deadline
		// starts to run.
		client func(t *testing.T, c net.Conn) time.Time
	}{
		{"ReadHeader: a header never finished", func(to *Timeouts) { to.ReadHeader = short }, func(t *testing.T, c net.Conn) time.Time {
			mustWrite(t, c, "GET /hi HTTP/1.1\r\nHost: x\r\nX-Slow: ")
			return time.Now()
		}},
		{"Read: a body never finished", func(to *Timeouts) { to.Read = short }, func(t *testing.T, c net.Conn) time.Time {
			mustWrite(t, c, "GET /whoami HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n\r\nab")
			return time.Now()
		}},
		{"Idle: a connection kept open", func(to *Timeouts) { to.Idle = short }, func(t *testing.T, c net.Conn) time.Time {
			mustWrite(t, c, "GET /whoami HTTP/1.1\r\nHost: x\r\n\r\n")
			resp, err := http.ReadResponse(bufio.NewReader(c), nil)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			return time.Now()
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			to := longTimeouts()
			tt.set(&to)
			r := mustStart(t, testConfig(), to, io.Discard)
			c := mustDial(t, r.addr)
			start := tt.client(t, c)
			expectCut(t, c, start, short+slack, tt.name)
		})
	}
}

// TestWriteTimeoutCutsStalledReader: a client that sends requests but
// never reads the responses holds a connection, and a goroutine, only
// until the write deadline.
func TestWriteTimeoutCutsStalledReader(t *testing.T) {
	to := longTimeouts()
	to.Write = 200 * time.Millisecond
	r := mustStart(t, testConfig(), to, io.Discard)
	// n landing pages are well over the server's send buffer.
	expectStalledReaderCut(t, r.addr, "/", to.Write)
}

// expectStalledReaderCut sends n requests for path to addr over a
// connection with a small receive buffer, reads nothing until the server
// cuts the connection, and then expects fewer than every response: the
// write deadline of the listener at addr is about deadline. The cut is
// an event the test waits for (a write of the client fails once the
// server has closed), not a time: on a busy machine the server may take
// seconds to fill its send buffer (at most 4 MiB, net.ipv4.tcp_wmem),
// which the responses must outgrow, and only then does its deadline
// start to run. A server that never cuts fails the test after a minute.
func expectStalledReaderCut(t *testing.T, addr, path string, deadline time.Duration) {
	t.Helper()
	d := net.Dialer{Control: func(_, _ string, rc syscall.RawConn) error {
		var err error
		if cerr := rc.Control(func(fd uintptr) {
			err = setRcvBuf(fd, 4096)
		}); cerr != nil {
			return cerr
		}
		return err
	}}
	c, err := d.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	const n = 3000
	if _, err := io.WriteString(c, strings.Repeat("GET "+path+" HTTP/1.1\r\nHost: x\r\n\r\n", n)); err != nil {
		t.Fatalf("sending %d requests: %v", n, err) // they fit the sockets' buffers
	}
	// Once the server has closed, a write of ours is refused (the
	// requests it never read make its close a reset).
	start := time.Now()
	for {
		if time.Since(start) > time.Minute {
			t.Fatalf("the server did not cut a client that read nothing for a minute; its write deadline is %v", deadline)
		}
		time.Sleep(20 * time.Millisecond)
		if _, err := c.Write([]byte("\r\n")); err != nil {
			t.Logf("cut after %v: %v", time.Since(start).Round(time.Millisecond), err)
			break
		}
	}
	c.SetReadDeadline(time.Now().Add(30 * time.Second))
	br := bufio.NewReader(c)
	got := 0
	for ; got < n; got++ {
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				t.Fatalf("after %d responses the connection stalled instead of closing: %v", got, err)
			}
			break
		}
		if _, err := io.Copy(io.Discard, resp.Body); err != nil {
			break
		}
		resp.Body.Close()
	}
	if got == n {
		t.Errorf("a client that read nothing got all %d responses of %s; the write deadline is %v", n, path, deadline)
	}
	t.Logf("%d responses before the cut", got)
}

// inflight sends a /hello request whose body never ends, so that it stays
// in flight, and waits until its visit is logged.
func inflight(t *testing.T, r *running, out *servertest.Buffer) net.Conn {
	t.Helper()
	c := mustDial(t, r.addr)
	mustWrite(t, c, "GET /hello?name=inflight HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nab")
	waitFor(t, out, `"name":"inflight","count":1`)
	return c
}

// waitFor waits until out holds want.
func waitFor(t *testing.T, out *servertest.Buffer, want string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(out.String(), want) {
		if time.Now().After(deadline) {
			t.Fatalf("the log lacks %s after 10s:\n%s", want, out.String())
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestShutdownLetsInFlightFinish: at shutdown the service stops
// accepting, but a request in flight is answered in full and Run waits
// for it.
func TestShutdownLetsInFlightFinish(t *testing.T) {
	cfg := testConfig()
	cfg.ShutdownTimeout = time.Minute
	var out servertest.Buffer
	r := mustStart(t, cfg, longTimeouts(), &out)
	c := inflight(t, r, &out)
	r.cancel()
	waitFor(t, &out, `"message":"shutting down"`)
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		nc, err := net.DialTimeout("tcp", r.addr, time.Second)
		if err != nil {
			break // no longer accepting
		}
		nc.Close()
		if time.Now().After(deadline) {
			t.Fatal("still accepting connections 10s after shutdown began")
		}
	}
	time.Sleep(100 * time.Millisecond)
	select {
	case err := <-r.done:
		r.done <- err
		t.Fatalf("Run returned %v with a request in flight and a minute to finish it", err)
	default:
	}
	mustWrite(t, c, "cde")
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("the in-flight request got no response: %v", err)
	}
	body, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != 200 || !strings.HasSuffix(string(body), "<p>Count: 1</p>") {
		t.Errorf("in-flight response = %d %q (%v), want 200 with count 1", resp.StatusCode, body, err)
	}
	if err := r.stop(); err != nil {
		t.Fatalf("Run() = %v, want nil", err)
	}
	if strings.Contains(out.String(), "did not finish in time") {
		t.Errorf("the log says requests did not finish:\n%s", out.String())
	}
}

// TestShutdownTimeoutCutsInFlight: a request still in flight when
// -shutdown-timeout runs out is given up on, and Run returns then.
func TestShutdownTimeoutCutsInFlight(t *testing.T) {
	cfg := testConfig()
	cfg.ShutdownTimeout = 300 * time.Millisecond
	var out servertest.Buffer
	r := mustStart(t, cfg, longTimeouts(), &out)
	inflight(t, r, &out)
	start := time.Now()
	r.cancel()
	select {
	case err := <-r.done:
		r.done <- err
		if elapsed := time.Since(start); elapsed < cfg.ShutdownTimeout {
			t.Errorf("Run returned %v after the cancel, before the shutdown timeout of %v", elapsed, cfg.ShutdownTimeout)
		}
		if err != nil {
			t.Errorf("Run() = %v, want nil: an overrun shutdown is logged, not failed", err)
		}
	case <-time.After(cfg.ShutdownTimeout + slack):
		t.Fatalf("Run did not return within %v of the cancel; -shutdown-timeout is %v", cfg.ShutdownTimeout+slack, cfg.ShutdownTimeout)
	}
	if log := out.String(); !strings.Contains(log, "in-flight requests did not finish in time") {
		t.Errorf("the log does not say the in-flight request was given up:\n%s", log)
	}
}

// listeningSockets counts the TCP sockets of this process that listen.
func listeningSockets(t *testing.T) int {
	t.Helper()
	listening := map[string]bool{}
	for _, f := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatalf("counting listeners needs %s: %v", f, err)
		}
		for _, l := range strings.Split(string(b), "\n")[1:] {
			if f := strings.Fields(l); len(f) > 9 && f[3] == "0A" { // TCP_LISTEN
				listening[f[9]] = true // inode
			}
		}
	}
	fds, err := filepath.Glob("/proc/self/fd/*")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, fd := range fds {
		if l, err := os.Readlink(fd); err == nil && strings.HasPrefix(l, "socket:[") && listening[strings.Trim(l[len("socket:"):], "[]")] {
			n++
		}
	}
	return n
}

// TestAdminListener: the admin endpoints are served on -admin-addr only,
// and an empty -admin-addr opens no listener at all.
func TestAdminListener(t *testing.T) {
	for _, admin := range []bool{true, false} {
		t.Run(fmt.Sprintf("admin=%v", admin), func(t *testing.T) {
			before := listeningSockets(t)
			cfg := testConfig()
			if !admin {
				cfg.AdminAddr = ""
			}
			var out servertest.Buffer
			r := mustStart(t, cfg, DefaultTimeouts, &out)
			want := 1
			if admin {
				want = 2
			}
			if got := listeningSockets(t) - before; got != want {
				t.Errorf("the service listens on %d sockets, want %d", got, want)
			}
			for _, path := range []string{"/healthz", "/debug/vars", "/debug/pprof/"} {
				if code, _ := mustGetBody(t, "http://"+r.addr+path); code != 404 {
					t.Errorf("public GET %s = %d, want 404", path, code)
				}
				if admin {
					if code, _ := mustGetBody(t, "http://"+r.adminAddr+path); code != 200 {
						t.Errorf("admin GET %s = %d, want 200", path, code)
					}
				}
			}
			if err := r.stop(); err != nil {
				t.Fatal(err)
			}
			if got := strings.Contains(out.String(), `"message":"admin listening"`); got != admin {
				t.Errorf("log says admin listening: %v, want %v", got, admin)
			}
		})
	}
}

// TestProfileRateFlags: -mutex-profile-fraction and -block-profile-rate
// turn the mutex and block profiles on.
func TestProfileRateFlags(t *testing.T) {
	t.Cleanup(func() {
		runtime.SetBlockProfileRate(0)
		runtime.SetMutexProfileFraction(0)
	})
	cfg := testConfig()
	cfg.BlockProfileRate, cfg.MutexProfileFraction = 1, 7
	r := mustStart(t, cfg, DefaultTimeouts, io.Discard)
	if got := runtime.SetMutexProfileFraction(-1); got != 7 {
		t.Errorf("mutex profile fraction = %d, want 7", got)
	}
	// Block on a channel for a moment: with the block profile on, that
	// is a sample.
	ch := make(chan struct{})
	go func() { time.Sleep(20 * time.Millisecond); close(ch) }()
	<-ch
	_, body := mustGetBody(t, "http://"+r.adminAddr+"/debug/pprof/block?debug=1")
	if !regexp.MustCompile(`(?m)^\d+ \d+ @ `).MatchString(body) || !strings.Contains(body, "TestProfileRateFlags") {
		t.Errorf("block profile has no sample of this test's wait:\n%.2000s", body)
	}
}

// gate is a log destination that holds every write until it is opened,
// as a stalled terminal or pipe would.
type gate struct {
	open chan struct{}
	out  servertest.Buffer
}

func (g *gate) Write(p []byte) (int, error) {
	<-g.open
	return g.out.Write(p)
}

// TestVars: /debug/vars reports the log lines the service dropped and
// the keys it holds, through the real wiring: a stalled log destination
// and more /hello visits than the log's ring holds.
func TestVars(t *testing.T) {
	log := &gate{open: make(chan struct{})}
	r := mustStart(t, testConfig(), DefaultTimeouts, log)
	defer func() {
		select {
		case <-log.open:
		default:
			close(log.open)
		}
	}()

	// More visits than the ring (8192 lines) and its 64 KiB buffer hold,
	// pipelined on one connection.
	const n = 12000
	c := mustDial(t, r.addr)
	read := make(chan error, 1)
	go func() {
		br := bufio.NewReader(c)
		for range n {
			resp, err := http.ReadResponse(br, nil)
			if err != nil {
				read <- err
				return
			}
			_, err = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if err != nil {
				read <- err
				return
			}
			if resp.StatusCode != 200 {
				read <- fmt.Errorf("status %d", resp.StatusCode)
				return
			}
		}
		read <- nil
	}()
	mustWrite(t, c, strings.Repeat("GET /hello?name=v HTTP/1.1\r\nHost: x\r\n\r\n", n))
	if err := webtest.Receive(t, read, "end of the pipelined visits' responses"); err != nil {
		t.Fatalf("pipelined visits: %v", err)
	}

	resp, err := webtest.Client.Get("http://" + r.adminAddr + "/debug/vars")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var vars struct {
		Visitors struct {
			LogLinesDropped *uint64 `json:"log_lines_dropped"`
			Keys            *int
		}
		Goroutines int
		Memstats   struct{ HeapAlloc uint64 }
	}
	if err := json.NewDecoder(resp.Body).Decode(&vars); err != nil {
		t.Fatalf("/debug/vars: %v", err)
	}
	const maxHeld = 8192 + 64<<10/64 // ring lines, and what a 64 KiB buffer holds of lines longer than 64 bytes
	if d := vars.Visitors.LogLinesDropped; d == nil || *d < n-maxHeld || *d > n {
		t.Errorf("/debug/vars log_lines_dropped = %s after %d visits into a stalled log, want %d to %d", show(d), n, n-maxHeld, n)
	}
	if k := vars.Visitors.Keys; k == nil || *k != 1 {
		t.Errorf("/debug/vars keys = %s, want 1", show(k))
	}
	if vars.Goroutines <= 0 || vars.Memstats.HeapAlloc == 0 {
		t.Errorf("/debug/vars goroutines = %d, memstats.HeapAlloc = %d; want both positive", vars.Goroutines, vars.Memstats.HeapAlloc)
	}

	close(log.open)
	if err := r.stop(); err != nil {
		t.Fatal(err)
	}
	if d := vars.Visitors.LogLinesDropped; d != nil && !strings.Contains(log.out.String(), `"dropped_total":`) {
		t.Errorf("the log has no drop report after %d drops", *d)
	}
}

// show formats a value read from JSON, or says it was missing.
func show[T any](p *T) string {
	if p == nil {
		return "missing"
	}
	return fmt.Sprint(*p)
}

// captureStderr points os.Stderr at a pipe until the returned function
// is called, which restores it and returns what was written. Run writes
// there only what it cannot log.
func captureStderr(t *testing.T) func() string {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	saved := os.Stderr
	os.Stderr = w
	got := make(chan string, 1)
	go func() {
		b, err := io.ReadAll(r)
		if err != nil {
			b = fmt.Appendf(b, "(reading stderr: %v)", err)
		}
		got <- string(b)
	}()
	return func() string {
		os.Stderr = saved
		w.Close()
		return <-got
	}
}

// TestRunStartsAndStopsQuietly: a start and a clean stop log no error
// and write nothing to stderr, and /whoami names this host.
func TestRunStartsAndStopsQuietly(t *testing.T) {
	stderr := captureStderr(t)
	var out servertest.Buffer
	r := mustStart(t, testConfig(), DefaultTimeouts, &out)
	resp, err := webtest.Client.Get("http://" + r.addr + "/whoami?format=json")
	if err != nil {
		t.Fatal(err)
	}
	var who struct{ Hostname string }
	err = json.NewDecoder(resp.Body).Decode(&who)
	resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	if host, err := os.Hostname(); err != nil || who.Hostname != host {
		t.Errorf("/whoami hostname = %q, want %q (%v)", who.Hostname, host, err)
	}
	err = r.stop()
	if got := stderr(); err != nil || got != "" {
		t.Errorf("Run() = %v with stderr %q, want nil and nothing", err, got)
	}
	for _, l := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		if !strings.Contains(l, `"level":"info"`) {
			t.Errorf("a clean start and stop logged %s", l)
		}
	}
}

// TestListen: -addr takes a TCP address or fd:N for an inherited
// listening socket, and refuses any other fd:N with a message.
func TestListen(t *testing.T) {
	fd, addr, err := servertest.ListenFD()
	if err != nil {
		t.Fatal(err)
	}
	l, err := Listen(fmt.Sprintf("fd:%d", fd))
	if err != nil {
		t.Fatalf("Listen(fd:%d) = %v", fd, err)
	}
	if got := l.Addr().String(); got != addr {
		t.Errorf("Listen(fd:%d) listens on %s, want %s", fd, got, addr)
	}
	l.Close()
	l, err = Listen("127.0.0.1:0")
	if err != nil {
		t.Fatalf("Listen(127.0.0.1:0) = %v", err)
	}
	l.Close()

	f, err := os.CreateTemp(t.TempDir(), "not-a-socket")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	tests := []struct{ addr, want string }{
		{"fd:", "3 or more"},
		{"fd:x", "3 or more"},
		{"fd:-1", "3 or more"},
		{"fd:0", "3 or more"}, // stdin, stdout and stderr are never taken
		{"fd:2", "3 or more"},
		{fmt.Sprintf("fd:%d", f.Fd()), "not a listening socket"},
		{"256.0.0.1:1", "256.0.0.1"},
	}
	for _, tt := range tests {
		if l, err := Listen(tt.addr); err == nil {
			l.Close()
			t.Errorf("Listen(%q) succeeded, want an error", tt.addr)
		} else if !strings.Contains(err.Error(), tt.want) {
			t.Errorf("Listen(%q) = %v, want an error saying %q", tt.addr, err, tt.want)
		}
	}
}
