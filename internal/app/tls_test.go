package app

import (
	"bufio"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"io"
	"math/big"
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

// TestTLSAddrDefault: -addr is :443 when HTTPS is on and -addr is not
// given, by flag or environment, and :8080 otherwise. It catches HTTPS
// on :8080 by default, and a given -addr overridden.
func TestTLSAddrDefault(t *testing.T) {
	tests := []struct {
		name string
		args []string
		env  map[string]string
		want string
	}{
		{"plain", nil, nil, ":8080"},
		{"acme", []string{"-tls-domains", "a.example"}, nil, ":443"},
		{"files", []string{"-tls-cert", "c.pem", "-tls-key", "k.pem"}, nil, ":443"},
		{"acme and -addr", []string{"-tls-domains", "a.example", "-addr", ":8443"}, nil, ":8443"},
		{"acme and env", []string{"-tls-domains", "a.example"}, map[string]string{"VISITORS_ADDR": "fd:3"}, "fd:3"},
		{"acme by env", nil, map[string]string{"VISITORS_TLS_DOMAINS": "a.example"}, ":443"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			args := append([]string{"-data", t.TempDir()}, tt.args...)
			c, err := ParseFlags(args, func(k string) string { return tt.env[k] }, t.Output())
			if err != nil {
				t.Fatalf("ParseFlags(%q) = %v", args, err)
			}
			if c.Addr != tt.want {
				t.Errorf("ParseFlags(%q, %v).Addr = %q, want %q", args, tt.env, c.Addr, tt.want)
			}
		})
	}
}

// TestGateSeesTLSConnsIdle: behind HTTPS, the server's ConnState gets a
// *tls.Conn, not the gate's connection; the gate must still learn that
// a keep-alive connection is idle, or a crowded listener never cuts its
// idle time short. It catches a connState that does not unwrap
// *tls.Conn.
func TestGateSeesTLSConnsIdle(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	g := newGate(l, 0, 0, nil)
	cert := mustTLSCert(t)
	srv := &http.Server{
		Handler:   http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "hi") }),
		ConnState: g.connState,
		TLSConfig: &tls.Config{Certificates: []tls.Certificate{cert}},
	}
	done := make(chan error, 1)
	go func() { done <- serve(srv, g) }()
	defer func() {
		srv.Close()
		<-done
	}()
	c, err := tls.Dial("tcp", l.Addr().String(), &tls.Config{InsecureSkipVerify: true, NextProtos: []string{"http/1.1"}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	io.WriteString(c, "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	deadline := time.Now().Add(10 * time.Second)
	for !anyIdle(g) {
		if time.Now().After(deadline) {
			t.Fatal("after its answer, the TLS connection is not idle to the gate within 10s")
		}
		time.Sleep(time.Millisecond)
	}
}

// TestCrowdedSweepCutsIdleTLSConns: behind HTTPS the gate does not
// watch connections (the http.Server keeps their deadlines), so when
// the listener becomes crowded its sweep is what cuts short the idle
// time of a keep-alive connection that went idle before: within
// CrowdedIdle, not at the idle timeout of a minute. Mutation survivor
// conns.go:164:22 (the sweep's once-per-CrowdedIdle test negated: it
// never swept) left it its minute.
func TestCrowdedSweepCutsIdleTLSConns(t *testing.T) {
	g := newGate(mustListen(t), 4, 0, nil) // crowded from 3 open
	tlsConf := &tls.Config{Certificates: []tls.Certificate{mustTLSCert(t)}}
	serveHi(t, g, longTimeouts(), tlsConf)
	get := func() net.Conn {
		t.Helper()
		c, err := tls.Dial("tcp", g.Addr().String(), &tls.Config{InsecureSkipVerify: true, NextProtos: []string{"http/1.1"}})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		c.SetDeadline(time.Now().Add(webtest.Deadline))
		io.WriteString(c, "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		return c
	}
	idle := get()
	start := time.Now()
	get()
	get() // the third of 4: crowded
	expectCut(t, idle, start, CrowdedIdle+slack, "a TLS connection idle when the listener became crowded")
}

// anyIdle reports whether the gate counts a connection idle.
func anyIdle(g *connGate) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	for c := range g.conns {
		if c.idle.Load() {
			return true
		}
	}
	return false
}

// mustTLSCert returns a self-signed certificate valid from an hour ago.
func mustTLSCert(t *testing.T) tls.Certificate {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), DNSNames: []string{"x"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour)}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}

// TestHTTPSWithAdminAndRedirect: with -tls-cert, -http-addr and the
// admin listener all on, the service serves HTTPS on -addr, redirects
// plain HTTP on -http-addr to HTTPS, serves the admin listener, and
// logs that -addr is HTTPS. It catches a start that stops after the
// admin listener, a redirect listener left out, and a log that calls
// HTTPS plain HTTP.
func TestHTTPSWithAdminAndRedirect(t *testing.T) {
	cert := mustTLSCert(t)
	dir := t.TempDir()
	certFile, keyFile := filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	der, err := x509.MarshalECPrivateKey(cert.PrivateKey.(*ecdsa.PrivateKey))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: cert.Certificate[0]}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	fd, httpAddr, err := servertest.ListenFD()
	if err != nil {
		t.Fatal(err)
	}
	cfg := testConfig()
	cfg.TLS = TLSConfig{CertFile: certFile, KeyFile: keyFile, HTTPAddr: fmt.Sprintf("fd:%d", fd)}
	out := new(servertest.Buffer)
	r := mustStart(t, cfg, DefaultTimeouts, out)

	client := &http.Client{
		Timeout:       webtest.Deadline,
		Transport:     &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}, // the test's own certificate
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	defer client.CloseIdleConnections()
	resp, err := client.Get("https://" + r.addr + "/hi")
	if err != nil {
		t.Fatalf("GET /hi over HTTPS: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 || resp.TLS == nil {
		t.Errorf("GET /hi over HTTPS = %d (TLS %v), want 200 over TLS", resp.StatusCode, resp.TLS != nil)
	}
	// The socket of -http-addr is made here, so with nothing serving it
	// a request is accepted by the kernel and never answered: a redirect
	// takes milliseconds, and ten seconds is the wait for none.
	plain := &http.Client{Timeout: 10 * time.Second, CheckRedirect: client.CheckRedirect}
	req, err := http.NewRequest("GET", "http://"+httpAddr+"/counter/a.svg?x=1", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Host = "x" // the certificate's name
	resp, err = plain.Do(req)
	if err != nil {
		t.Fatalf("GET on -http-addr: %v", err)
	}
	resp.Body.Close()
	_, port, _ := net.SplitHostPort(r.addr)
	if want := "https://x:" + port + "/counter/a.svg?x=1"; resp.StatusCode != http.StatusPermanentRedirect || resp.Header.Get("Location") != want {
		t.Errorf("GET on -http-addr = %d to %q, want %d to %q", resp.StatusCode, resp.Header.Get("Location"), http.StatusPermanentRedirect, want)
	}
	if code, _ := mustGetBody(t, "http://"+r.adminAddr+"/healthz"); code != 200 {
		t.Errorf("GET /healthz on the admin listener = %d, want 200", code)
	}
	var listening, plainHTTP string // the log is written in the background
	for deadline := time.Now().Add(webtest.Deadline); (listening == "" || plainHTTP == "") && time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		for line := range strings.Lines(out.String()) {
			if strings.Contains(line, `"message":"listening"`) {
				listening = line
			}
			if strings.Contains(line, `"message":"plain HTTP listening`) {
				plainHTTP = line
			}
		}
	}
	if !strings.Contains(listening, `"https":true`) {
		t.Errorf("the public listener's log line %q does not say https:true", listening)
	}
	if !strings.Contains(plainHTTP, `"acme_http_01":false`) { // certificates from files: no ACME challenge to answer
		t.Errorf("the plain HTTP listener's log line %q does not say acme_http_01:false", plainHTTP)
	}
}
