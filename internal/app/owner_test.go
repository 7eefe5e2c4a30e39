package app

import (
	"context"
	"crypto/sha256"
	"io"
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"visitors/internal/servertest"
	"visitors/internal/webtest"
)

// apiCall sends method path with the Bearer token (none if "") and a
// JSON body, and returns the status, Content-Type and body.
func apiCall(t *testing.T, addr, method, path, token, body string) (int, string, string) {
	t.Helper()
	resp, err := webtest.Client.Do(webtest.NewAPIRequest(t, method, "http://"+addr+path, token, body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header.Get("Content-Type"), string(b)
}

// TestAPIOffWithoutRootToken: without a root token every /api/ path is
// the plain 404 of any unknown path, whatever the method; with one, the
// API answers in JSON and a locked key counts nothing.
func TestAPIOffWithoutRootToken(t *testing.T) {
	r := mustStart(t, testConfig(), DefaultTimeouts, io.Discard)
	for _, m := range []string{"GET", "PUT", "POST", "DELETE"} {
		for _, p := range []string{"/api/v1/counters", "/api/v1/counters/a", "/api/v1/tokens", "/api/v1/export", "/api/"} {
			code, ct, body := apiCall(t, r.addr, m, p, testRoot, `{"total":1}`)
			if code != 404 || ct != "text/plain; charset=utf-8" || body != "404 page not found" {
				t.Errorf("%s %s without a root token = %d %q %q, want the plain 404", m, p, code, ct, body)
			}
		}
	}

	cfg := testConfig()
	sum := sha256.Sum256([]byte(testRoot))
	cfg.API = APIConfig{RootHash: &sum, ImportMaxBytes: 1 << 20}
	var out servertest.Buffer
	r = mustStart(t, cfg, DefaultTimeouts, &out)
	if code, ct, body := apiCall(t, r.addr, "PUT", "/api/v1/counters/k", testRoot, `{"total":41,"locked":true}`); code != 200 || ct != "application/json" || !strings.Contains(body, `"locked": true`) {
		t.Fatalf("PUT = %d %q %s", code, ct, body)
	}
	resp, err := webtest.Client.Get("http://" + r.addr + "/counter/k.json")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(b), `"total":41`) || resp.Header.Get("Visitors-Counted") != "false" {
		t.Errorf("a locked key's JSON = %s, Visitors-Counted %q; want total 41, not counted", b, resp.Header.Get("Visitors-Counted"))
	}
	if code, _, body := apiCall(t, r.addr, "GET", "/api/v1/counters/k", "", ""); code != 401 || !strings.Contains(body, `"error"`) {
		t.Errorf("GET without a token = %d %s, want a JSON 401", code, body)
	}
	if err := r.stop(); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), `"message":"owner API on"`) || strings.Contains(out.String(), testRoot) {
		t.Errorf("the log does not say the API is on, or holds the root token:\n%s", out.String())
	}
}

func TestNotLoopback(t *testing.T) {
	tests := []struct {
		addr net.Addr
		want string
	}{
		{&net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 6060}, ""},
		{&net.TCPAddr{IP: net.IPv4(127, 1, 2, 3), Port: 6060}, ""},
		{&net.TCPAddr{IP: net.IPv6loopback, Port: 6060}, ""},
		{&net.TCPAddr{IP: net.ParseIP("::ffff:127.0.0.1"), Port: 6060}, ""},
		{&net.TCPAddr{IP: net.IPv4zero, Port: 6060}, "0.0.0.0:6060"},
		{&net.TCPAddr{IP: net.IPv6unspecified, Port: 6060}, "[::]:6060"},
		{&net.TCPAddr{IP: net.IPv4(10, 0, 0, 5), Port: 6060}, "10.0.0.5:6060"},
		{&net.UnixAddr{Name: "/run/visitors.sock", Net: "unix"}, ""},
	}
	for _, tt := range tests {
		if got := notLoopback(tt.addr); got != tt.want {
			t.Errorf("notLoopback(%v) = %q, want %q", tt.addr, got, tt.want)
		}
	}
}

// TestAdminAddrNotLoopback: an admin listener on every interface is
// refused at start with a message that says why and what to do; with
// -admin-allow-remote it serves, and a warning is logged.
func TestAdminAddrNotLoopback(t *testing.T) {
	cfg := testConfig()
	cfg.Addr, cfg.AdminAddr = "127.0.0.1:0", ":0"
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	err := Run(ctx, cfg, DefaultTimeouts, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "-admin-addr :0 listens on") || !strings.Contains(err.Error(), "-admin-allow-remote") {
		t.Fatalf("Run with -admin-addr :0 = %v, want a refusal naming -admin-allow-remote", err)
	}

	fd, addr, err := servertest.ListenFD()
	if err != nil {
		t.Fatal(err)
	}
	cfg = testConfig()
	cfg.AdminAllowRemote = true
	cfg.AdminAddr = "0.0.0.0:0"
	cfg.Addr = "fd:" + strconv.Itoa(fd)
	var out servertest.Buffer
	done := make(chan error, 1)
	ctx, cancel = context.WithCancel(context.Background())
	go func() { done <- Run(ctx, cfg, DefaultTimeouts, &out) }()
	deadline := time.Now().Add(30 * time.Second)
	for !strings.Contains(out.String(), `"message":"admin listening"`) {
		if time.Now().After(deadline) {
			t.Fatalf("no admin listener within 30s:\n%s", out.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	if code, _, _ := apiCall(t, addr, "GET", "/hi", "", ""); code != 200 {
		t.Errorf("GET /hi = %d, want 200", code)
	}
	cancel()
	if err := webtest.Receive(t, done, "return of Run after its context's end"); err != nil {
		t.Fatalf("Run with -admin-allow-remote = %v", err)
	}
	if !strings.Contains(out.String(), `"level":"warn"`) || !strings.Contains(out.String(), "not on loopback") {
		t.Errorf("no warning of a remote admin listener:\n%s", out.String())
	}
}

// stalledOut is a log destination that holds every Write until opened,
// as a stalled pipe or disk would.
type stalledOut struct {
	open chan struct{}
	out  servertest.Buffer
}

func (s *stalledOut) Write(p []byte) (int, error) {
	<-s.open
	return s.out.Write(p)
}

// TestAuditLinesSurviveAHelloFlood: a /hello flood fills the log's ring
// while its destination is stalled, and /hello's lines are dropped; the
// owner changes made then wait for room, and once the destination moves
// every one of their audit lines is written. Before, the audit lines
// went through the same dropping ring: a hostile review saw 3 of 5 owner
// changes leave no audit line.
func TestAuditLinesSurviveAHelloFlood(t *testing.T) {
	cfg := testConfig()
	sum := sha256.Sum256([]byte(testRoot))
	cfg.API = APIConfig{RootHash: &sum, ImportMaxBytes: 1 << 20}
	out := &stalledOut{open: make(chan struct{})}
	r := mustStart(t, cfg, DefaultTimeouts, out)
	// More /hello lines than the ring's 8192 slots and the 64 KiB
	// buffer in front of the destination hold.
	const flood, workers = 9000, 8
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := w; i < flood; i += workers {
				resp, err := webtest.Client.Get("http://" + r.addr + "/hello?name=flood")
				if err != nil {
					t.Error(err)
					return
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
		})
	}
	wg.Wait()
	const changes = 5
	codes := make(chan int, changes)
	for i := range changes {
		go func() {
			code, _, _ := apiCall(t, r.addr, "PUT", "/api/v1/counters/audited-"+strconv.Itoa(i), testRoot, `{"total":1}`)
			codes <- code
		}()
	}
	time.Sleep(200 * time.Millisecond) // the changes wait for room in the ring
	close(out.open)
	for range changes {
		if code := <-codes; code != 200 {
			t.Errorf("PUT = %d, want 200", code)
		}
	}
	if err := r.stop(); err != nil {
		t.Fatal(err)
	}
	log := out.out.String()
	if !strings.Contains(log, "log lines dropped") {
		t.Fatalf("the flood dropped no log line: the ring was not full, and the test proves nothing")
	}
	for i := range changes {
		if want := `"call":"PUT /api/v1/counters/audited-` + strconv.Itoa(i) + `"`; !strings.Contains(log, want) {
			t.Errorf("no audit line for change %d (%s)", i, want)
		}
	}
}
