package main

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"visitors/internal/servertest"
	"visitors/internal/webtest"
)

// bin is the real visitors binary, built once by TestMain.
var bin string

// rulesOff is the environment that turns the fairness rules off: the
// tests that start the binary with it test something else (durability,
// crashes, a full disk) with Go's HTTP client, which the bot list names,
// from one address. fair_test.go tests the rules, with their defaults.
var rulesOff = []string{"VISITORS_COUNT_BOTS=true", "VISITORS_CLIENT_RATE=0", "VISITORS_CLIENT_NEW_KEYS=0", "VISITORS_REPEAT_WINDOW=0"}

func TestMain(m *testing.M) { servertest.Main(m, "visitors-e2e", &bin, stopRedis, stopChromium) }

// command is exec.Command for a run of the binary (or a wrapper of it)
// that is expected to exit: a process still running after
// webtest.Deadline is killed and fails tb with its name, so that a
// binary that serves, or waits for a lock, where it should have exited
// fails the test instead of hanging it.
func command(tb testing.TB, name string, args ...string) *exec.Cmd {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), webtest.Deadline)
	tb.Cleanup(cancel)
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Cancel = func() error {
		if ctx.Err() == context.DeadlineExceeded {
			tb.Errorf("%s %s did not exit within %v: killed", name, strings.Join(args, " "), webtest.Deadline)
		}
		return cmd.Process.Kill()
	}
	cmd.WaitDelay = 5 * time.Second // a child left holding the output does not hold the test
	return cmd
}

func mustGet(tb testing.TB, url string, hdr ...string) (int, http.Header, string) {
	tb.Helper()
	req, err := http.NewRequest("GET", url, nil)
	if err != nil {
		tb.Fatal(err)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := webtest.Client.Do(req)
	if err != nil {
		tb.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if ne := net.Error(nil); errors.As(err, &ne) && ne.Timeout() {
		tb.Fatalf("GET %s: the body did not end within %v (a stream where an answer was expected?): %v", url, webtest.Deadline, err)
	} else if err != nil {
		tb.Fatalf("GET %s: read body: %v", url, err)
	}
	return resp.StatusCode, resp.Header, string(b)
}

func TestBinaryServesAndShutsDownCleanly(t *testing.T) {
	p := servertest.Start(t, bin, rulesOff, "-data", t.TempDir())
	tests := []struct {
		url      string
		wantCode int
		wantBody string
	}{
		{p.URL("/hi"), 200, "<h1 style='color: '>Welcome!</h1>You are visitor number 1!"},
		{p.URL("/hi?color=red"), 200, "<h1 style='color: red'>Welcome!</h1>You are visitor number 2!"},
		{p.URL("/hi?color=%3Cscript%3E"), 400, "Optional color is invalid"},
		{p.URL("/hi"), 200, "<h1 style='color: '>Welcome!</h1>You are visitor number 3!"},
		{p.URL("/hello?name=%3Cb%3Eada"), 200, "<h1 style='color: '>Welcome!</h1> <p>Name: &lt;b&gt;ada</p> <p>Count: 1</p>"},
		{p.URL("/hello?name=%3Cb%3Eada"), 200, "<h1 style='color: '>Welcome!</h1> <p>Name: &lt;b&gt;ada</p> <p>Count: 2</p>"},
		{p.URL("/nope"), 404, "404 page not found"},
		{p.URL("/debug/pprof/"), 404, "404 page not found"}, // never on the public listener
		{p.URL("/healthz"), 404, "404 page not found"},
		{p.AdminURL("/healthz"), 200, "ok\n"},
	}
	for _, tt := range tests {
		code, hdr, body := mustGet(t, tt.url)
		if code != tt.wantCode || body != tt.wantBody {
			t.Errorf("GET %s = %d %q, want %d %q", tt.url, code, body, tt.wantCode, tt.wantBody)
		}
		wantCT := "text/plain; charset=utf-8"
		if code == 200 && strings.HasPrefix(body, "<h1") {
			wantCT = "text/html; charset=utf-8" // sniffed by net/http, on the wire
		}
		if got := hdr.Get("Content-Type"); got != wantCT {
			t.Errorf("GET %s: Content-Type %q, want %q", tt.url, got, wantCT)
		}
	}

	code, hdr, body := mustGet(t, p.URL("/whoami?format=json"), "User-Agent", "e2e/1.0")
	var who struct {
		UserAgent string `json:"user_agent"`
		Hostname  string
		LatencyNS int64 `json:"latency_ns"`
	}
	if err := json.Unmarshal([]byte(body), &who); code != 200 || err != nil || hdr.Get("Content-Type") != "application/json" {
		t.Fatalf("GET /whoami?format=json = %d %q %q (%v)", code, hdr.Get("Content-Type"), body, err)
	}
	host, _ := os.Hostname()
	if who.UserAgent != "e2e/1.0" || who.Hostname != host || who.LatencyNS <= 0 {
		t.Errorf("whoami = %+v, want user agent e2e/1.0, hostname %q, a positive latency", who, host)
	}

	if code, _, body := mustGet(t, p.AdminURL("/debug/pprof/heap?debug=1")); code != 200 || !strings.Contains(body, "heap profile") {
		t.Errorf("admin heap profile = %d %.80q", code, body)
	}

	if err := p.Stop(syscall.SIGTERM, 15*time.Second); err != nil {
		t.Fatalf("after SIGTERM: %v (want exit 0)\nstderr: %s", err, p.Stderr())
	}
	out := p.Stdout()
	if got := strings.Count(out, `"message":"visited"`); got != 2 {
		t.Errorf("stdout has %d visit lines, want 2 (the log must be flushed at shutdown):\n%s", got, out)
	}
	if !strings.Contains(out, `"name":"<b>ada","count":2`) {
		t.Errorf("stdout lacks the second visit of <b>ada:\n%s", out)
	}
	if !strings.Contains(out, `"message":"stopped"`) {
		t.Errorf("stdout lacks the shutdown line:\n%s", out)
	}
}

func TestBinaryTakesConfigFromEnvironment(t *testing.T) {
	p := servertest.Start(t, bin, append(rulesOff, "VISITORS_MAX_KEYS=1", "VISITORS_LOG_LEVEL=off", "VISITORS_STORE=memory"))
	if code, _, _ := mustGet(t, p.URL("/hello?name=first")); code != 200 {
		t.Fatalf("first name = %d, want 200", code)
	}
	code, _, body := mustGet(t, p.URL("/hello?name=second"))
	if code != 503 || !strings.Contains(body, "Too many distinct names") {
		t.Errorf("second name with VISITORS_MAX_KEYS=1 = %d %q, want 503", code, body)
	}
	if err := p.Stop(syscall.SIGINT, 15*time.Second); err != nil {
		t.Fatalf("after SIGINT: %v (want exit 0)", err)
	}
	if out := p.Stdout(); strings.Contains(out, `"visited"`) {
		t.Errorf("VISITORS_LOG_LEVEL=off still logged visits:\n%s", out)
	}
}

func TestBinaryHelpListsEveryFlag(t *testing.T) {
	out, err := command(t, bin, "-h").Output() // stdout: see TestBinaryHelpGoesToStdout
	if err != nil {
		t.Fatalf("visitors -h: %v (want exit 0)\n%s", err, out)
	}
	for _, f := range []string{"-addr", "-admin-addr", "-log-level", "-max-keys", "-shutdown-timeout", "-block-profile-rate", "-mutex-profile-fraction",
		"-store", "-data", "-durability", "-flush-interval", "VISITORS_ADDR", "VISITORS_MAX_KEYS", "VISITORS_DATA", "visitors export", "visitors import", "visitors -version"} {
		if !strings.Contains(string(out), f) {
			t.Errorf("visitors -h does not mention %s:\n%s", f, out)
		}
	}
}

// TestBinaryRejectsBadConfig: what the service cannot do once started,
// such as listen, is a fatal error, exit status 1. A refused command
// line is status 2: see TestBinaryRefusesBadCommandLine.
func TestBinaryRejectsBadConfig(t *testing.T) {
	tests := []struct {
		name string
		args []string
		env  []string
		want string
	}{
		{"port taken", []string{"-addr", "256.0.0.1:1"}, nil, "listen on -addr"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cmd := command(t, bin, append([]string{"-admin-addr", "", "-data", t.TempDir()}, tt.args...)...)
			cmd.Env = append(os.Environ(), tt.env...)
			out, err := cmd.CombinedOutput()
			if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 {
				t.Fatalf("exit = %v, want status 1\n%s", err, out)
			}
			if !strings.Contains(string(out), tt.want) {
				t.Errorf("output %q does not say %q", out, tt.want)
			}
		})
	}
}
