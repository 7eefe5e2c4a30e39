package app

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"visitors/internal/servertest"
	"visitors/internal/webtest"
)

// startRedirect starts the service with -tls-cert (a certificate for
// a.example and *.b.example) and -http-addr on free ports, with cfg's
// other settings, and returns it and -http-addr's address.
func startRedirect(t *testing.T, cfg Config, to Timeouts) (*running, string) {
	t.Helper()
	dir := t.TempDir()
	certFile, keyFile := filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	c := servertest.SelfSigned(t, "a.example", "*.b.example")
	if err := os.WriteFile(certFile, c.Cert, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, c.Key, 0o600); err != nil {
		t.Fatal(err)
	}
	fd, httpAddr, err := servertest.ListenFD()
	if err != nil {
		t.Fatal(err)
	}
	cfg.TLS.CertFile, cfg.TLS.KeyFile, cfg.TLS.HTTPAddr = certFile, keyFile, fmt.Sprintf("fd:%d", fd)
	r := mustStart(t, cfg, to, io.Discard)
	return r, httpAddr
}

// TestRedirectHosts: with -tls-cert, -http-addr redirects a GET or HEAD
// to HTTPS only for a name the certificate covers, on the public
// listener's port (not 443 here: it is in the URL); another name, or an
// IP address it does not cover, gets 421, and a Host that is no name
// 400. It catches a redirect to any name the client sends (an open
// redirect through this server's name), and a Location without the
// port HTTPS listens on.
func TestRedirectHosts(t *testing.T) {
	r, httpAddr := startRedirect(t, testConfig(), longTimeouts())
	_, port, err := net.SplitHostPort(r.addr)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		method, host string
		wantCode     int
		wantLocation string // "" when none
	}{
		{"GET", "a.example", 308, "https://a.example:" + port + "/counter/a.svg?x=1"},
		{"HEAD", "A.Example.:80", 308, "https://a.example:" + port + "/counter/a.svg?x=1"},
		{"GET", "c.b.example", 308, "https://c.b.example:" + port + "/counter/a.svg?x=1"},
		{"GET", "evil.example", 421, ""},
		{"GET", "b.example", 421, ""}, // *.b.example does not cover b.example
		{"GET", "127.0.0.1", 421, ""},
		{"GET", "[::1]:80", 421, ""},
		{"GET", "a_b.example", 400, ""},
		{"POST", "a.example", 400, ""},
	}
	for _, tt := range tests {
		t.Run(tt.method+" "+tt.host, func(t *testing.T) {
			c := mustDial(t, httpAddr)
			mustWrite(t, c, tt.method+" /counter/a.svg?x=1 HTTP/1.1\r\nHost: "+tt.host+"\r\nContent-Length: 0\r\n\r\n")
			resp, err := http.ReadResponse(bufio.NewReader(c), &http.Request{Method: tt.method})
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != tt.wantCode || resp.Header.Get("Location") != tt.wantLocation {
				t.Errorf("%s with Host %q = %d to %q, want %d to %q", tt.method, tt.host, resp.StatusCode, resp.Header.Get("Location"), tt.wantCode, tt.wantLocation)
			}
			if strings.Contains(string(body), "evil") {
				t.Errorf("the answer reflects the Host: %q", body)
			}
		})
	}
}

// TestRedirectListenerGate: -http-addr's listener has the public
// listener's bounds. With -max-conns-per-client 3, a client's fourth
// open connection is answered 429 and closed at once; with -max-conns 3,
// a fourth connection waits unanswered until one of the three closes.
// Without them, 320 connections from one address took every file
// descriptor of the process and stopped the HTTPS and admin listeners.
func TestRedirectListenerGate(t *testing.T) {
	const get = "GET /counter/a.svg HTTP/1.1\r\nHost: a.example\r\n\r\n"
	t.Run("per client", func(t *testing.T) {
		cfg := testConfig()
		cfg.Fair.MaxConnsPerClient = 3
		_, httpAddr := startRedirect(t, cfg, longTimeouts())
		for range 3 {
			c := mustDial(t, httpAddr)
			mustWrite(t, c, "GET /") // held open, its header unfinished
		}
		c := mustDial(t, httpAddr)
		c.SetReadDeadline(time.Now().Add(5 * time.Second))
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			t.Fatalf("a fourth connection from one client: %v, want a 429 at once", err)
		}
		if resp.StatusCode != http.StatusTooManyRequests {
			t.Errorf("a fourth connection from one client = %d, want 429", resp.StatusCode)
		}
	})
	t.Run("total", func(t *testing.T) {
		cfg := testConfig()
		cfg.Fair.MaxConns = 3
		_, httpAddr := startRedirect(t, cfg, longTimeouts())
		var held []net.Conn
		for range 3 {
			c := mustDial(t, httpAddr)
			mustWrite(t, c, "GET /")
			held = append(held, c)
		}
		time.Sleep(100 * time.Millisecond) // the three are accepted
		c := mustDial(t, httpAddr)
		mustWrite(t, c, get)
		br := bufio.NewReader(c)
		c.SetReadDeadline(time.Now().Add(time.Second))
		if resp, err := http.ReadResponse(br, nil); err == nil {
			t.Fatalf("a fourth connection past -max-conns 3 was answered %d at once, want it to wait", resp.StatusCode)
		}
		held[0].Close()
		c.SetReadDeadline(time.Now().Add(webtest.Deadline))
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatalf("the fourth connection, once one of three closed: %v, want an answer", err)
		}
		if resp.StatusCode != http.StatusPermanentRedirect {
			t.Errorf("the fourth connection, once one of three closed = %d, want 308", resp.StatusCode)
		}
	})
}

// TestRedirectHTTPSPort: -https-port names the port of HTTPS in the
// redirects, when a port forwarding puts HTTPS elsewhere than -addr's
// port; 443 is left out of the URL.
func TestRedirectHTTPSPort(t *testing.T) {
	tests := []struct {
		port int
		want string
	}{
		{443, "https://a.example/hi"},
		{8443, "https://a.example:8443/hi"},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprint(tt.port), func(t *testing.T) {
			cfg := testConfig()
			cfg.TLS.HTTPSPort = tt.port
			_, httpAddr := startRedirect(t, cfg, longTimeouts())
			c := mustDial(t, httpAddr)
			mustWrite(t, c, "GET /hi HTTP/1.1\r\nHost: a.example\r\n\r\n")
			resp, err := http.ReadResponse(bufio.NewReader(c), nil)
			if err != nil {
				t.Fatal(err)
			}
			if got := resp.Header.Get("Location"); resp.StatusCode != http.StatusPermanentRedirect || got != tt.want {
				t.Errorf("-https-port %d: GET = %d to %q, want 308 to %q", tt.port, resp.StatusCode, got, tt.want)
			}
		})
	}
}

// TestRedirectRequestTarget: -http-addr redirects only to a path of the
// name asked for. A request-target that is not a path (an opaque URI
// such as http:@evil.example/, or *) is answered 400: pasted after
// https://a.example:port it named another host, evil.example, with
// a.example:port as its user information: an open redirect.
func TestRedirectRequestTarget(t *testing.T) {
	r, httpAddr := startRedirect(t, testConfig(), longTimeouts())
	_, port, err := net.SplitHostPort(r.addr)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		target       string
		wantCode     int
		wantLocation string // "" when none
	}{
		{"/a?b=1", 308, "https://a.example:" + port + "/a?b=1"},
		{"//evil.example/p", 308, "https://a.example:" + port + "//evil.example/p"},
		{"http://a.example/p?q=1", 308, "https://a.example:" + port + "/p?q=1"},
		{"http:@evil.example/", 400, ""},
		{"https:@evil.example", 400, ""},
		{"http:.evil.example/", 400, ""},
		{"*", 400, ""},
	}
	for _, tt := range tests {
		t.Run(tt.target, func(t *testing.T) {
			c := mustDial(t, httpAddr)
			mustWrite(t, c, "GET "+tt.target+" HTTP/1.1\r\nHost: a.example\r\n\r\n")
			resp, err := http.ReadResponse(bufio.NewReader(c), nil)
			if err != nil {
				t.Fatal(err)
			}
			if got := resp.Header.Get("Location"); resp.StatusCode != tt.wantCode || got != tt.wantLocation {
				t.Errorf("GET %s = %d to %q, want %d to %q", tt.target, resp.StatusCode, got, tt.wantCode, tt.wantLocation)
			}
		})
	}
}
