package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"visitors/internal/servertest"
)

// testDomain is the name the HTTPS tests serve. The test's DNS server
// (pebble-challtestsrv) resolves it to 127.0.0.1 for pebble; the test's
// client dials 127.0.0.1 and asks for it by SNI.
const testDomain = "visitors.test"

// pebbleValidity is the lifetime, in seconds, of the certificates the
// test CA issues: short, so that a renewal (at a third of the lifetime
// left) comes within the test.
const pebbleValidity = 30

// TestHTTPSFromACME runs the binary with -tls-domains against pebble, a
// real ACME server, and a DNS server that sends pebble's validation to
// the binary's -http-addr. pebble's TLS-ALPN-01 port is one where nothing
// listens, so a certificate is only issued if the HTTP-01 challenge is
// answered on -http-addr. It catches: no HTTPS on -addr, no HTTP/2, no
// redirect (or a redirect elsewhere than https://) on -http-addr, a
// challenge not answered, and a certificate not renewed without a
// restart.
func TestHTTPSFromACME(t *testing.T) {
	// Not parallel: the two ACME tests each run a pebble, and a build of
	// it, which a machine this size does not need twice at once.
	httpFile, httpAddr, err := servertest.ListenFile()
	if err != nil {
		t.Fatal(err)
	}
	defer httpFile.Close()
	ca := newPebble(t)
	ca.start(t, mustPort(t, httpAddr), deadPort(t)) // the TLS-ALPN-01 port closes every connection: only HTTP-01 can pass
	data := t.TempDir()
	p := servertest.StartFiles(t, bin, rulesOff, []*os.File{httpFile},
		"-data", data, "-store", "memory", "-tls-domains", testDomain, "-http-addr", "fd:5",
		"-acme-ca", ca.dir, "-acme-ca-root", ca.serverRoot, "-acme-email", "ops@visitors.test")
	httpFile.Close()

	client := tlsClient(p.Addr, ca.issuerRoots)
	t.Run("badge over HTTP/2", func(t *testing.T) {
		resp, err := client.Get("https://" + testDomain + "/counter/tls.svg")
		if err != nil {
			t.Fatalf("GET over HTTPS: %v\nlog:\n%s\nstderr:\n%s", err, p.Stdout(), p.Stderr())
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), "<svg") {
			t.Errorf("GET /counter/tls.svg over HTTPS = %d %q, want 200 and a badge", resp.StatusCode, body)
		}
		if resp.Proto != "HTTP/2.0" {
			t.Errorf("protocol = %s, want HTTP/2.0", resp.Proto)
		}
	})
	t.Run("plain HTTP redirects", func(t *testing.T) {
		noFollow := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
		req, _ := http.NewRequest("GET", "http://"+httpAddr+"/counter/tls.svg?label=a", nil)
		req.Host = testDomain
		resp, err := noFollow.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		want := fmt.Sprintf("https://%s:%d/counter/tls.svg?label=a", testDomain, mustPort(t, p.Addr)) // HTTPS's port, not 443 here
		if got := resp.Header.Get("Location"); resp.StatusCode != http.StatusPermanentRedirect || got != want {
			t.Errorf("GET http://%s/counter/tls.svg = %d to %q, want %d to %q", testDomain, resp.StatusCode, got, http.StatusPermanentRedirect, want)
		}
	})
	t.Run("storage", func(t *testing.T) {
		fi, err := os.Stat(filepath.Join(data, "acme"))
		if err != nil {
			t.Fatal(err)
		}
		if got := fi.Mode().Perm(); got != 0o700 {
			t.Errorf("<-data>/acme mode = %v, want 0700", got)
		}
		found, _ := filepath.Glob(filepath.Join(data, "acme", "*", testDomain))
		if len(found) != 1 {
			t.Errorf("no certificate file %s under %s/acme/<CA>/", testDomain, data)
		}
	})
	t.Run("renewal without a restart", func(t *testing.T) {
		first := mustServedCert(t, p.Addr, ca.issuerRoots)
		if life := first.NotAfter.Sub(first.NotBefore); life > time.Minute {
			t.Fatalf("served certificate lives %v: pebble's short validity was not applied", life)
		}
		deadline := time.Now().Add(3 * pebbleValidity * time.Second)
		for {
			got := mustServedCert(t, p.Addr, ca.issuerRoots)
			if got.SerialNumber.Cmp(first.SerialNumber) != 0 {
				if !got.NotAfter.After(first.NotAfter) {
					t.Errorf("renewed certificate expires %v, not after the first's %v", got.NotAfter, first.NotAfter)
				}
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("certificate %v (valid until %v) not renewed within %ds\nlog:\n%s", first.SerialNumber, first.NotAfter, 3*pebbleValidity, p.Stdout())
			}
			time.Sleep(200 * time.Millisecond)
		}
	})
	if err := p.Stop(syscall.SIGINT, 15*time.Second); err != nil {
		t.Errorf("stop: %v", err)
	}
}

// TestHTTPSFromACMEOverTLSALPN runs the binary with -tls-domains and no
// -http-addr: pebble can only validate TLS-ALPN-01, on the HTTPS port.
// It catches a TLS configuration that does not answer the acme-tls/1
// protocol, so that no certificate is issued without port 80.
func TestHTTPSFromACMEOverTLSALPN(t *testing.T) {
	// Not parallel: see TestHTTPSFromACME.
	ca := newPebble(t)
	p := servertest.Start(t, bin, rulesOff, "-data", t.TempDir(), "-store", "memory", "-tls-domains", testDomain, "-http-addr", "",
		"-acme-ca", ca.dir, "-acme-ca-root", ca.serverRoot)
	ca.start(t, deadPort(t), mustPort(t, p.Addr)) // the HTTP-01 port closes every connection
	resp, err := tlsClient(p.Addr, ca.issuerRoots).Get("https://" + testDomain + "/hi")
	if err != nil {
		t.Fatalf("GET over HTTPS: %v\nlog:\n%s", err, p.Stdout())
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("GET /hi over HTTPS = %d, want 200", resp.StatusCode)
	}
}

// TestHTTPSCertFilesReload serves a self-signed pair with -tls-cert and
// -tls-key, replaces it, and sees the new certificate served without a
// restart; then writes a pair whose key does not match, and sees the
// error logged and the last good certificate still served. It catches
// files read only at start, and a broken pair served or crashing.
func TestHTTPSCertFilesReload(t *testing.T) {
	t.Parallel() // most of it waits for the files to be looked at again
	dir := t.TempDir()
	certFile, keyFile := filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	a := mustSelfSigned(t, testDomain)
	a.write(t, certFile, keyFile)
	p := servertest.Start(t, bin, rulesOff, "-data", dir, "-store", "memory", "-tls-cert", certFile, "-tls-key", keyFile, "-http-addr", "")
	roots := x509.NewCertPool()
	roots.AddCert(a.leaf)

	if got := mustServedCert(t, p.Addr, roots); got.SerialNumber.Cmp(a.leaf.SerialNumber) != 0 {
		t.Fatalf("served serial %v, want the first pair's %v", got.SerialNumber, a.leaf.SerialNumber)
	}
	resp, err := tlsClient(p.Addr, roots).Get("https://" + testDomain + "/hi")
	if err != nil {
		t.Fatalf("GET /hi over HTTPS: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || resp.Proto != "HTTP/2.0" {
		t.Errorf("GET /hi over HTTPS = %d %s, want 200 HTTP/2.0", resp.StatusCode, resp.Proto)
	}

	b := mustSelfSigned(t, testDomain)
	b.write(t, certFile, keyFile)
	roots.AddCert(b.leaf)
	waitServed(t, p, roots, b.leaf, "the replaced pair")

	logged := strings.Count(p.Stdout(), "do not load") // a check between the two renames may have seen a half-replaced pair
	c, d := mustSelfSigned(t, testDomain), mustSelfSigned(t, testDomain)
	c.key = d.key // a certificate with another's key
	c.write(t, certFile, keyFile)
	roots.AddCert(c.leaf)
	deadline := time.Now().Add(30 * time.Second)
	for strings.Count(p.Stdout(), "do not load") == logged {
		mustServedCert(t, p.Addr, roots) // the served pair stays good while the files are looked at
		if time.Now().After(deadline) {
			t.Fatalf("no error logged within 30s of a mismatched pair; log:\n%s", p.Stdout())
		}
		time.Sleep(100 * time.Millisecond)
	}
	if got := mustServedCert(t, p.Addr, roots); got.SerialNumber.Cmp(b.leaf.SerialNumber) != 0 {
		t.Errorf("after a broken pair, served serial %v, want the last good pair's %v", got.SerialNumber, b.leaf.SerialNumber)
	}
	if p.Cmd.ProcessState != nil {
		t.Fatalf("the process exited: %s", p.Stderr())
	}
}

// TestTLSFlagsRefused gives bad TLS flags, and wants one line on stderr
// that names the problem, exit status 2, and no panic.
func TestTLSFlagsRefused(t *testing.T) {
	dir := t.TempDir()
	garbage := filepath.Join(dir, "garbage.pem")
	if err := os.WriteFile(garbage, []byte("not a certificate\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"empty name", []string{"-tls-domains", "a.example,,b.example"}, "an empty name"},
		{"empty list", []string{"-tls-domains", ""}, "an empty name"},
		{"wildcard", []string{"-tls-domains", "*.a.example"}, "wildcard needs the DNS-01 challenge"},
		{"ipv4", []string{"-tls-domains", "a.example,192.0.2.1"}, "an IP address"},
		{"ipv6", []string{"-tls-domains", "2001:db8::1"}, "an IP address"},
		{"not a name", []string{"-tls-domains", "a_b.example"}, "not a DNS name"},
		{"cert without key", []string{"-tls-cert", garbage}, "-tls-cert needs -tls-key"},
		{"key without cert", []string{"-tls-key", garbage}, "-tls-key needs -tls-cert"},
		{"both ways", []string{"-tls-domains", "a.example", "-tls-cert", garbage, "-tls-key", garbage}, "choose one"},
		{"missing files", []string{"-tls-cert", filepath.Join(dir, "no.pem"), "-tls-key", filepath.Join(dir, "no.key")}, "no such file"},
		{"not PEM", []string{"-tls-cert", garbage, "-tls-key", garbage}, "-tls-cert"},
		{"missing CA root", []string{"-tls-domains", "a.example", "-acme-ca-root", filepath.Join(dir, "no-root.pem")}, "-acme-ca-root"},
		{"CA root not PEM", []string{"-tls-domains", "a.example", "-acme-ca-root", garbage}, "no PEM certificate"},
		{"ACME flag without names", []string{"-acme-email", "ops@a.example"}, "need -tls-domains"},
		{"CA without names", []string{"-acme-ca", "https://ca.example/dir"}, "need -tls-domains"},
		{"CA not https", []string{"-tls-domains", "a.example", "-acme-ca", "http://ca.example/dir"}, "-acme-ca"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second) // a flag taken for good starts the server
			defer cancel()
			cmd := exec.CommandContext(ctx, bin, append([]string{"-admin-addr", "", "-addr", "127.0.0.1:0", "-http-addr", "127.0.0.1:0", "-data", t.TempDir()}, tt.args...)...)
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			err := cmd.Run()
			if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 2 {
				t.Fatalf("visitors %s: exit = %v, want status 2\nstderr:\n%s", strings.Join(tt.args, " "), err, stderr.String())
			}
			got := stderr.String()
			if !strings.Contains(got, tt.want) || strings.Count(got, "\n") != 1 || strings.Contains(got, "panic") {
				t.Errorf("visitors %s: stderr %q, want one line that says %q", strings.Join(tt.args, " "), got, tt.want)
			}
		})
	}
}

// pebble is a test ACME server, on ports chosen before it starts, so
// that the server under test can be told its URL first.
type pebble struct {
	dir         string         // ACME directory URL
	serverRoot  string         // PEM file of the root of pebble's own HTTPS certificate
	issuerRoots *x509.CertPool // the roots of the certificates pebble issues; set by start

	tmp                string
	self               pair // pebble's own HTTPS certificate
	acmePort, mgmtPort int
}

// newPebble chooses pebble's ports and writes its HTTPS certificate.
func newPebble(t *testing.T) *pebble {
	t.Helper()
	p := &pebble{tmp: t.TempDir(), self: mustSelfSigned(t, "localhost", "127.0.0.1")}
	p.serverRoot = filepath.Join(p.tmp, "pebble-cert.pem")
	p.self.write(t, p.serverRoot, filepath.Join(p.tmp, "pebble-key.pem"))
	p.acmePort, p.mgmtPort = mustFreePort(t), mustFreePort(t)
	p.dir = fmt.Sprintf("https://127.0.0.1:%d/dir", p.acmePort)
	return p
}

// start starts pebble-challtestsrv as a DNS server that answers
// 127.0.0.1 for every name, and pebble, which validates HTTP-01 on
// httpPort and TLS-ALPN-01 on tlsPort and issues certificates of
// pebbleValidity seconds; both built by go tool from the module's tool
// dependencies, both killed when the test ends.
func (p *pebble) start(t *testing.T, httpPort, tlsPort int) {
	t.Helper()
	dnsPort, dnsMgmt := dnsFreePort(t), mustFreePort(t)
	runTool(t, "pebble-challtestsrv", nil,
		"-dnsserver", fmt.Sprintf("127.0.0.1:%d", dnsPort), "-management", fmt.Sprintf("127.0.0.1:%d", dnsMgmt),
		"-defaultIPv4", "127.0.0.1", "-defaultIPv6", "", "-http01", "", "-https01", "", "-doh", "", "-tlsalpn01", "")
	waitResolves(t, fmt.Sprintf("127.0.0.1:%d", dnsPort))

	conf := map[string]any{"pebble": map[string]any{
		"listenAddress":                  fmt.Sprintf("127.0.0.1:%d", p.acmePort),
		"managementListenAddress":        fmt.Sprintf("127.0.0.1:%d", p.mgmtPort),
		"certificate":                    p.serverRoot,
		"privateKey":                     filepath.Join(p.tmp, "pebble-key.pem"),
		"httpPort":                       httpPort,
		"tlsPort":                        tlsPort,
		"ocspResponderURL":               "",
		"externalAccountBindingRequired": false,
		"retryAfter":                     map[string]int{"authz": 1, "order": 1},
		"keyAlgorithm":                   "ecdsa",
		"profiles":                       map[string]any{"default": map[string]any{"description": "short", "validityPeriod": pebbleValidity}},
	}}
	b, _ := json.Marshal(conf)
	confFile := filepath.Join(p.tmp, "pebble.json")
	if err := os.WriteFile(confFile, b, 0o600); err != nil {
		t.Fatal(err)
	}
	runTool(t, "pebble", []string{"PEBBLE_VA_NOSLEEP=1", "PEBBLE_WFE_NONCEREJECT=0"},
		"-config", confFile, "-dnsserver", fmt.Sprintf("127.0.0.1:%d", dnsPort))

	pool := x509.NewCertPool()
	pool.AddCert(p.self.leaf)
	c := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}, Timeout: 5 * time.Second}
	var root []byte
	deadline := time.Now().Add(60 * time.Second)
	for {
		resp, err := c.Get(fmt.Sprintf("https://127.0.0.1:%d/roots/0", p.mgmtPort))
		if err == nil {
			root, err = io.ReadAll(resp.Body)
			resp.Body.Close()
			if err == nil && resp.StatusCode == http.StatusOK {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("pebble did not serve its root within 60s: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	p.issuerRoots = x509.NewCertPool()
	if !p.issuerRoots.AppendCertsFromPEM(root) {
		t.Fatalf("pebble's /roots/0 is not PEM: %q", root)
	}
}

// runTool starts the module's tool dependency name, built by go tool,
// and kills it when the test ends.
func runTool(t *testing.T, name string, env []string, args ...string) {
	t.Helper()
	out, err := exec.Command("go", "tool", "-n", name).Output()
	if err != nil {
		t.Fatalf("go tool -n %s: %v", name, err)
	}
	cmd := exec.Command(strings.TrimSpace(string(out)), args...)
	cmd.Env = append(os.Environ(), env...)
	var log servertest.Buffer
	cmd.Stdout, cmd.Stderr = &log, &log
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", name, err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
		if t.Failed() {
			t.Logf("%s's output:\n%s", name, log.String())
		}
	})
}

// waitResolves waits until the DNS server at addr answers testDomain
// with 127.0.0.1 over TCP, as pebble asks it (its validation's DNS
// client uses TCP when it is given a resolver): a port where the server
// took UDP but another process held TCP fails here, not as a challenge
// pebble cannot validate.
func waitResolves(t *testing.T, addr string) {
	t.Helper()
	r := &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, "tcp", addr)
	}}
	deadline := time.Now().Add(60 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		ips, err := r.LookupHost(ctx, testDomain)
		cancel()
		if err == nil && len(ips) > 0 && ips[0] == "127.0.0.1" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("DNS server %s does not resolve %s to 127.0.0.1 within 60s: %v %v", addr, testDomain, ips, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// dnsFreePort returns a port free on 127.0.0.1 for both TCP and UDP, for
// pebble-challtestsrv's DNS server, which takes both. A port taken from
// UDP alone may be one a TCP socket holds (the client end of any
// connection on the machine): the server then answers UDP only, pebble
// asks over TCP, reaches that other socket, and fails every validation
// (seen once, with another package's tests beside this one, 2026-11-27).
func dnsFreePort(t *testing.T) int {
	t.Helper()
	for range 100 {
		port := mustFreePort(t)
		c, err := net.ListenPacket("udp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
		if err == nil {
			c.Close()
			return port
		}
	}
	t.Fatal("no port free for both TCP and UDP in 100 tries")
	return 0
}

// deadPort returns a port on 127.0.0.1 that closes every connection
// until the test ends: for the challenge type a test leaves out, which
// pebble tries and must fail. A port that was only free when asked could
// be taken meanwhile by another test's server.
func deadPort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	return l.Addr().(*net.TCPAddr).Port
}

// mustFreePort returns a port free for TCP on 127.0.0.1, for a tool that
// takes a port, not a socket (servertest.FreePort: below the ephemeral
// range, where no outgoing connection takes it meanwhile).
func mustFreePort(t *testing.T) int {
	t.Helper()
	port, err := servertest.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	return port
}

func mustPort(t *testing.T, addr string) int {
	t.Helper()
	a, err := net.ResolveTCPAddr("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	return a.Port
}

// tlsClient returns an HTTP client that trusts roots and sends every
// request to addr, whatever the URL's host: https://visitors.test/ reaches
// the server under test with SNI visitors.test.
func tlsClient(addr string, roots *x509.CertPool) *http.Client {
	return &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{
		DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, network, addr)
		},
		TLSClientConfig:   &tls.Config{RootCAs: roots},
		ForceAttemptHTTP2: true,
	}}
}

// mustServedCert makes a TLS handshake with addr for testDomain, checks
// the certificate against roots, and returns it.
func mustServedCert(t *testing.T, addr string, roots *x509.CertPool) *x509.Certificate {
	t.Helper()
	d := &net.Dialer{Timeout: 30 * time.Second}
	c, err := tls.DialWithDialer(d, "tcp", addr, &tls.Config{ServerName: testDomain, RootCAs: roots})
	if err != nil {
		t.Fatalf("TLS handshake with %s as %s: %v", addr, testDomain, err)
	}
	defer c.Close()
	return c.ConnectionState().PeerCertificates[0]
}

// waitServed waits until addr serves want, for at most 30s.
func waitServed(t *testing.T, p *servertest.Proc, roots *x509.CertPool, want *x509.Certificate, what string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		got := mustServedCert(t, p.Addr, roots)
		if got.SerialNumber.Cmp(want.SerialNumber) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s is not served within 30s: serial %v, want %v\nlog:\n%s", what, got.SerialNumber, want.SerialNumber, p.Stdout())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// pair is a certificate and its key, in PEM.
type pair struct {
	cert, key []byte
	leaf      *x509.Certificate
}

// mustSelfSigned returns a self-signed certificate for names (DNS names
// or IP addresses), valid from an hour ago for a day.
func mustSelfSigned(t *testing.T, names ...string) pair {
	t.Helper()
	c := servertest.SelfSigned(t, names...)
	return pair{cert: c.Cert, key: c.Key, leaf: c.Leaf}
}

// write replaces certFile and keyFile with p, each by a rename, as a
// certificate tool does.
func (p pair) write(t *testing.T, certFile, keyFile string) {
	t.Helper()
	for _, f := range []struct {
		name string
		b    []byte
	}{{certFile, p.cert}, {keyFile, p.key}} {
		tmp := f.name + ".tmp"
		if err := os.WriteFile(tmp, f.b, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, f.name); err != nil {
			t.Fatal(err)
		}
	}
}
