//go:build linux

// The tests bind the clients' side of connections to 127.0.0.2 and
// 127.0.0.3, which only Linux routes to loopback without configuration.

package deploy

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"visitors/internal/servertest"
	"visitors/internal/webtest"
)

// siteName is the name both configurations serve, left as it is in the
// files: the tests' clients ask for it and dial the proxy's port.
const siteName = "visitors.example.org"

// bin is the real visitors binary, built once by TestMain.
var bin string

func TestMain(m *testing.M) { servertest.Main(m, "visitors-deploy", &bin) }

// proxied is a reverse proxy running in front of a visitors process.
type proxied struct {
	https string // the proxy's HTTPS listener, host:port
	http  string // the proxy's plain HTTP listener, host:port
	proto string // the protocol the configuration serves HTTPS with: "HTTP/2.0"
	log   func() string
}

// proxies are the configurations in this folder, each with how the test
// runs its proxy: the file templated for ports, paths and certificate
// files only.
var proxies = []struct {
	name  string
	file  string
	start func(t *testing.T, conf, upstream string, c certFiles) proxied
}{
	{"nginx", "nginx/visitors.conf", startNginx},
	{"caddy", "caddy/Caddyfile", startCaddy},
}

// TestBehindProxy runs each proxy from its configuration in this folder,
// over HTTPS, in front of the real binary started as the configuration
// says (-trusted-proxies 127.0.0.1), and checks through it what a
// proxy can get wrong: who the client is, live streams, the badge's
// headers and the protocol.
func TestBehindProxy(t *testing.T) {
	for _, px := range proxies {
		t.Run(px.name, func(t *testing.T) {
			conf, err := os.ReadFile(px.file)
			if err != nil {
				t.Fatal(err)
			}
			// visitors runs as the file's comment says, with one counted
			// visit per client, then none for an hour: a second client
			// is counted only if it is told apart.
			m := regexp.MustCompile(`(?m)^#\s+\./visitors -addr 127\.0\.0\.1:8080 -trusted-proxies (\S+)$`).FindSubmatch(conf)
			if m == nil {
				t.Fatalf("%s does not say how to start visitors: ./visitors -addr 127.0.0.1:8080 -trusted-proxies ADDR", px.file)
			}
			p := servertest.Start(t, bin, nil, "-store", "memory", "-repeat-window", "0", // a client's second visit is refused by its rate, not as a refresh
				"-trusted-proxies", string(m[1]), "-client-rate", "1/h", "-client-burst", "1")
			certs := mustCerts(t, t.TempDir())
			px := px.start(t, string(conf), p.Addr, certs)
			t.Run("client identity", func(t *testing.T) { testIdentity(t, p, px, certs.roots) })
			t.Run("live stream", func(t *testing.T) { testStream(t, px, certs.roots) })
			t.Run("badge headers", func(t *testing.T) { testBadgeHeaders(t, p, px, certs.roots) })
			t.Run("protocols", func(t *testing.T) { testProtocols(t, px, certs.roots) })
			if t.Failed() {
				t.Logf("%s\nvisitors stdout:\n%s\nvisitors stderr:\n%s", px.log(), p.Stdout(), p.Stderr())
			}
		})
	}
}

// testIdentity checks that two clients, on 127.0.0.2 and 127.0.0.3, are
// two visitors to visitors, each with its own rate, that a client's own
// X-Forwarded-For changes nothing, and that visitors saw no forwarding
// header from a peer it does not trust.
func testIdentity(t *testing.T, p *servertest.Proc, px proxied, roots *x509.CertPool) {
	a := proxyClient(t, px.https, "127.0.0.2", roots, true)
	b := proxyClient(t, px.https, "127.0.0.3", roots, true)
	const key = "proxy-identity"
	badge := "https://" + siteName + "/counter/" + key + ".svg"
	tests := []struct {
		name   string
		client *http.Client
		hdr    []string
		want   bool // counted
	}{
		{"first client counts", a, nil, true},
		{"first client again is past its rate", a, nil, false},
		{"first client naming another address is still itself", a, []string{"X-Forwarded-For", "198.51.100.7"}, false},
		{"second client counts", b, nil, true},
		{"second client again is past its own rate", b, nil, false},
	}
	for _, tt := range tests {
		resp := mustDo(t, tt.client, "GET", badge, tt.hdr...)
		if got := counted(resp); resp.StatusCode != 200 || got != tt.want {
			t.Errorf("%s: GET %s = %d, counted %v, want 200, counted %v", tt.name, badge, resp.StatusCode, got, tt.want)
		}
	}
	var counts struct {
		Total  int `json:"total"`
		Unique int `json:"unique_today"`
	}
	resp := mustDo(t, webtest.Client, "GET", p.URL("/counter/"+key+".json?count=false"))
	if err := json.Unmarshal(resp.body, &counts); err != nil {
		t.Fatalf("counts of %s: %v: %s", key, err, resp.body)
	}
	if counts.Total != 2 || counts.Unique != 2 {
		t.Errorf("%s: total %d, unique_today %d, want 2 and 2 (two clients behind the proxy)", key, counts.Total, counts.Unique)
	}
	if log := p.Stdout() + p.Stderr(); strings.Contains(log, "not in -trusted-proxies") {
		t.Errorf("visitors warns of an untrusted forwarding peer:\n%s", log)
	}
	metrics := mustDo(t, webtest.Client, "GET", p.AdminURL("/metrics"))
	if !regexp.MustCompile(`(?m)^visitors_untrusted_forwarded_requests_total 0$`).Match(metrics.body) {
		m := regexp.MustCompile(`(?m)^visitors_untrusted_forwarded_requests_total .*$`).Find(metrics.body)
		t.Errorf("metrics: %q, want visitors_untrusted_forwarded_requests_total 0", m)
	}
}

// testStream checks that a live stream's events come through the proxy
// as visitors sends them: its first at once, and the next after a visit.
// A proxy that buffers holds them until its buffer fills, which these
// few bytes never do.
func testStream(t *testing.T, px proxied, roots *x509.CertPool) {
	const key = "proxy-stream"
	visit := func(from string) {
		t.Helper()
		resp := mustDo(t, proxyClient(t, px.https, from, roots, true), "GET", "https://"+siteName+"/counter/"+key+".svg")
		if !counted(resp) {
			t.Fatalf("visit from %s: Visitors-Counted: false, want it counted", from)
		}
	}
	visit("127.0.0.4")

	// The deadline is long for the proxy to pass an event on, and short
	// of visitors' 15-second heartbeat, whose bytes could push a small
	// buffer out.
	const within = 5 * time.Second
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, "GET", "https://"+siteName+"/counter/"+key+"/stream", nil)
	if err != nil {
		t.Fatal(err)
	}
	// visitors sends the headers and the first event at once; a proxy
	// that buffers may hold both.
	timer := time.AfterFunc(within, cancel)
	resp, err := proxyClient(t, px.https, "127.0.0.5", roots, true).Do(req)
	if !timer.Stop() {
		t.Fatalf("no stream headers through the proxy within %v: does it buffer the stream? (%v)", within, err)
	}
	if err != nil {
		t.Fatalf("open stream: %v", err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); resp.StatusCode != 200 || !strings.HasPrefix(ct, "text/event-stream") {
		t.Fatalf("stream: %d %q, want 200 text/event-stream", resp.StatusCode, ct)
	}
	events := make(chan webtest.Event)
	go func() {
		defer close(events)
		r := webtest.NewEventReader(resp.Body)
		for {
			ev, err := r.Next()
			if err != nil {
				return
			}
			if ev.Comment != "" {
				continue
			}
			select {
			case events <- ev:
			case <-ctx.Done():
				return
			}
		}
	}()
	next := func(what string) string {
		t.Helper()
		select {
		case ev, ok := <-events:
			if !ok {
				t.Fatalf("stream ended before %s", what)
			}
			return ev.Data
		case <-time.After(within):
			t.Fatalf("no %s through the proxy within %v: does it buffer the stream?", what, within)
			return ""
		}
	}
	if got := next("first event"); !strings.Contains(got, `"total":1,`) {
		t.Errorf("first event %s, want total 1", got)
	}
	visit("127.0.0.6")
	if got := next("event after a visit"); !strings.Contains(got, `"total":2,`) {
		t.Errorf("event after a visit %s, want total 2", got)
	}
}

// testBadgeHeaders checks that the proxy passes a badge's headers on as
// visitors sends them, such as Content-Type and Cache-Control: every
// one but Date and the hop-by-hop ones, with the same values, and the
// same body.
func testBadgeHeaders(t *testing.T, p *servertest.Proc, px proxied, roots *x509.CertPool) {
	const path = "/counter/proxy-headers.svg?count=false"
	direct := mustDo(t, webtest.Client, "GET", p.URL(path))
	got := mustDo(t, proxyClient(t, px.https, "127.0.0.7", roots, true), "GET", "https://"+siteName+path)
	if got.StatusCode != 200 || !bytes.Equal(got.body, direct.body) {
		t.Errorf("GET %s through the proxy = %d, %d bytes, want 200 and the %d bytes visitors sends", path, got.StatusCode, len(got.body), len(direct.body))
	}
	for _, h := range []string{"Content-Type", "Cache-Control"} {
		if direct.Header.Get(h) == "" {
			t.Fatalf("visitors sends no %s on %s", h, path)
		}
	}
	skip := []string{"Date", "Connection", "Keep-Alive", "Transfer-Encoding"}
	for h, want := range direct.Header {
		if slices.Contains(skip, h) {
			continue
		}
		if g := got.Header.Values(h); !slices.Equal(g, want) {
			t.Errorf("%s through the proxy = %q, want %q as visitors sends it", h, g, want)
		}
	}
	var added []string
	for h := range got.Header {
		if _, ok := direct.Header[h]; !ok {
			added = append(added, h+": "+strings.Join(got.Header.Values(h), ", "))
		}
	}
	slices.Sort(added)
	t.Logf("headers the proxy adds: %q", added)

	// The badge revalidates through the proxy: the proxy passes
	// If-None-Match on and visitors' 304 back.
	etag := direct.Header.Get("Etag")
	if etag == "" {
		t.Fatalf("visitors sends no ETag on %s", path)
	}
	nm := mustDo(t, proxyClient(t, px.https, "127.0.0.7", roots, true), "GET", "https://"+siteName+path, "If-None-Match", etag)
	if nm.StatusCode != http.StatusNotModified {
		t.Errorf("GET %s with If-None-Match %s through the proxy = %d, want 304", path, etag, nm.StatusCode)
	}
}

// testProtocols checks that the proxy serves HTTPS over the protocol the
// configuration names, HTTP/2, and over HTTP/1.1 to a client that only
// speaks that, and that its plain HTTP port redirects to HTTPS.
func testProtocols(t *testing.T, px proxied, roots *x509.CertPool) {
	url := "https://" + siteName + "/counter/proxy-proto.svg?count=false"
	tests := []struct {
		name  string
		h2    bool
		proto string
	}{
		{"client offers h2", true, px.proto},
		{"client offers HTTP/1.1 only", false, "HTTP/1.1"},
	}
	for _, tt := range tests {
		resp := mustDo(t, proxyClient(t, px.https, "127.0.0.8", roots, tt.h2), "GET", url)
		if resp.StatusCode != 200 || resp.Proto != tt.proto {
			t.Errorf("%s: GET %s = %d over %s, want 200 over %s", tt.name, url, resp.StatusCode, resp.Proto, tt.proto)
		}
	}

	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	plain := &http.Client{
		Transport:     tr,
		Timeout:       webtest.Deadline,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	req, err := http.NewRequest("GET", "http://"+px.http+"/counter/proxy-proto.svg", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Host = siteName
	resp, err := plain.Do(req)
	if err != nil {
		t.Fatalf("GET over plain HTTP: %v", err)
	}
	resp.Body.Close()
	loc := resp.Header.Get("Location")
	if resp.StatusCode/100 != 3 || !strings.HasPrefix(loc, "https://"+siteName) || !strings.HasSuffix(loc, "/counter/proxy-proto.svg") {
		t.Errorf("GET over plain HTTP = %d, Location %q, want a redirect to https://%s.../counter/proxy-proto.svg", resp.StatusCode, loc, siteName)
	}
}

// TestDocShowsConfigs checks that docs/deploy.md shows each
// configuration file as it is, so that the doc shows what is tested.
func TestDocShowsConfigs(t *testing.T) {
	doc, err := os.ReadFile("../docs/deploy.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, px := range proxies {
		conf, err := os.ReadFile(px.file)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Contains(doc, append(append([]byte("```\n"), conf...), "```\n"...)) {
			t.Errorf("docs/deploy.md does not show deploy/%s as it is, in a ``` block", px.file)
		}
	}
}

// counted reports whether visitors counted the visit resp answers: it
// marks one it does not count with Visitors-Counted: false.
func counted(resp response) bool { return resp.Header.Get("Visitors-Counted") != "false" }

// response is an answer read whole.
type response struct {
	*http.Response
	body []byte
}

func mustDo(tb testing.TB, c *http.Client, method, url string, hdr ...string) response {
	tb.Helper()
	req, err := http.NewRequest(method, url, nil)
	if err != nil {
		tb.Fatal(err)
	}
	// A browser's User-Agent: Go's is on the bot list, and not counted.
	req.Header.Set("User-Agent", "Mozilla/5.0 (X11; Linux x86_64; rv:128.0) Gecko/20100101 Firefox/128.0")
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := c.Do(req)
	if err != nil {
		tb.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		tb.Fatalf("%s %s: read body: %v", method, url, err)
	}
	return response{resp, body}
}

// proxyClient returns a client that sends every request to the proxy at
// addr, from the local address from, trusting roots; it offers h2 too
// if h2 is set. The URL's host is the name asked for in TLS and Host.
func proxyClient(tb testing.TB, addr, from string, roots *x509.CertPool, h2 bool) *http.Client {
	tb.Helper()
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(from)}, Timeout: webtest.Deadline}
	tr := &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return d.DialContext(ctx, "tcp", addr)
		},
		TLSClientConfig:   &tls.Config{RootCAs: roots, ServerName: siteName},
		ForceAttemptHTTP2: h2,
	}
	if !h2 {
		tr.TLSNextProto = map[string]func(string, *tls.Conn) http.RoundTripper{}
	}
	tb.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr, Timeout: webtest.Deadline}
}

// certFiles are a self-signed certificate for siteName and its key, in
// files, and the pool that trusts it.
type certFiles struct {
	cert, key string
	roots     *x509.CertPool
}

// mustCerts writes a self-signed certificate for siteName, valid from
// an hour ago for a day, and its key into dir.
func mustCerts(t *testing.T, dir string) certFiles {
	t.Helper()
	sc := servertest.SelfSigned(t, siteName)
	c := certFiles{cert: filepath.Join(dir, "cert.pem"), key: filepath.Join(dir, "key.pem"), roots: x509.NewCertPool()}
	c.roots.AddCert(sc.Leaf)
	if err := os.WriteFile(c.cert, sc.Cert, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(c.key, sc.Key, 0o600); err != nil {
		t.Fatal(err)
	}
	return c
}

// mustTemplate replaces each old string of repl in conf by the new one
// after it; each must be there, so that a changed file fails here and
// not in a proxy's puzzling error.
func mustTemplate(t *testing.T, conf string, repl ...string) string {
	t.Helper()
	for i := 0; i+1 < len(repl); i += 2 {
		if !strings.Contains(conf, repl[i]) {
			t.Fatalf("the configuration has no %q to replace", repl[i])
		}
		conf = strings.ReplaceAll(conf, repl[i], repl[i+1])
	}
	return conf
}

// freePort returns a loopback port that was free a moment ago
// (servertest.FreePort: below the ephemeral range). The proxies and
// podman bind their own ports, so another process could take it in
// between: withFreePorts tries again.
func freePort(t *testing.T) string {
	t.Helper()
	port, err := servertest.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	return strconv.Itoa(port)
}

// mustLookPath returns the path of a proxy's program, in PATH or in
// /usr/sbin, where Debian puts nginx and which a user's PATH may lack.
// A missing one fails the test: scripts/install-deps.sh installs them.
func mustLookPath(t *testing.T, name string) string {
	t.Helper()
	path, err := exec.LookPath(name)
	if err == nil {
		return path
	}
	if sbin, err := exec.LookPath(filepath.Join("/usr/sbin", name)); err == nil {
		return sbin
	}
	t.Fatalf("%s is not installed (scripts/install-deps.sh installs it): %v", name, err)
	return ""
}

// startNginx runs nginx with conf, the server blocks of
// nginx/visitors.conf, in an http block of its own, with its prefix, pid
// file, logs and temporary files in a temporary folder, in the
// foreground, until the test ends.
func startNginx(t *testing.T, conf, upstream string, c certFiles) proxied {
	t.Helper()
	nginx := mustLookPath(t, "nginx")
	u, err := user.Current()
	if err != nil {
		t.Fatal(err)
	}
	return withFreePorts(t, func() (proxied, error) {
		dir := t.TempDir()
		tlsPort, plainPort := freePort(t), freePort(t)
		conf := mustTemplate(t, conf,
			"listen 80;", "listen 127.0.0.1:"+plainPort+";",
			"listen [::]:80;", "listen [::1]:"+plainPort+";",
			"listen 443 ssl http2;", "listen 127.0.0.1:"+tlsPort+" ssl http2;",
			"listen [::]:443 ssl http2;", "listen [::1]:"+tlsPort+" ssl http2;",
			"/etc/letsencrypt/live/visitors.example.org/fullchain.pem", c.cert,
			"/etc/letsencrypt/live/visitors.example.org/privkey.pem", c.key,
			"proxy_pass http://127.0.0.1:8080;", "proxy_pass http://"+upstream+";",
		)
		if err := os.WriteFile(filepath.Join(dir, "visitors.conf"), []byte(conf), 0o600); err != nil {
			t.Fatal(err)
		}
		// Workers run as the current user (nginx ignores "user" unless
		// run as root), who can read the temporary folder.
		main := fmt.Sprintf(`daemon off;
user %s;
worker_processes 1;
pid %[2]s/nginx.pid;
error_log %[2]s/error.log info;
events { worker_connections 256; }
http {
	access_log %[2]s/access.log;
	client_body_temp_path %[2]s/body;
	proxy_temp_path %[2]s/proxy;
	fastcgi_temp_path %[2]s/fastcgi;
	uwsgi_temp_path %[2]s/uwsgi;
	scgi_temp_path %[2]s/scgi;
	include %[2]s/visitors.conf;
}
`, u.Username, dir)
		mainFile := filepath.Join(dir, "nginx.conf")
		if err := os.WriteFile(mainFile, []byte(main), 0o600); err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(nginx, "-p", dir, "-c", mainFile, "-e", filepath.Join(dir, "error.log"))
		p, err := run(t, cmd, "127.0.0.1:"+tlsPort, c.roots)
		if err != nil {
			return proxied{}, err
		}
		return proxied{
			https: "127.0.0.1:" + tlsPort, http: "127.0.0.1:" + plainPort, proto: "HTTP/2.0",
			log: func() string {
				b, _ := os.ReadFile(filepath.Join(dir, "error.log"))
				return "nginx output:\n" + p.String() + "\nnginx error.log:\n" + string(b)
			},
		}, nil
	})
}

// startCaddy runs caddy with conf, caddy/Caddyfile, with its home, data
// and configuration folders in a temporary folder, until the test ends.
func startCaddy(t *testing.T, conf, upstream string, c certFiles) proxied {
	t.Helper()
	caddy := mustLookPath(t, "caddy")
	return withFreePorts(t, func() (proxied, error) {
		dir := t.TempDir()
		tlsPort, plainPort, admin := freePort(t), freePort(t), freePort(t)
		conf := mustTemplate(t, conf,
			"admin localhost:2019", "admin 127.0.0.1:"+admin,
			"http_port 80", "http_port "+plainPort,
			"https_port 443", "https_port "+tlsPort,
			"tls ops@visitors.example.org", "tls "+c.cert+" "+c.key,
			"reverse_proxy 127.0.0.1:8080", "reverse_proxy "+upstream,
		)
		file := filepath.Join(dir, "Caddyfile")
		if err := os.WriteFile(file, []byte(conf), 0o600); err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(caddy, "run", "--config", file, "--adapter", "caddyfile")
		cmd.Env = append(os.Environ(),
			"HOME="+dir,
			"XDG_DATA_HOME="+filepath.Join(dir, "data"),
			"XDG_CONFIG_HOME="+filepath.Join(dir, "config"),
		)
		cmd.Dir = dir
		p, err := run(t, cmd, "127.0.0.1:"+tlsPort, c.roots)
		if err != nil {
			return proxied{}, err
		}
		return proxied{
			https: "127.0.0.1:" + tlsPort, http: "127.0.0.1:" + plainPort, proto: "HTTP/2.0",
			log: func() string { return "caddy output:\n" + p.String() },
		}, nil
	})
}

// withFreePorts returns what start returns, calling it again, up to
// three times in all, while its error is errAddrInUse: a proxy binds
// the ports freePort found free, and another process may take one in
// between.
func withFreePorts(t *testing.T, start func() (proxied, error)) proxied {
	t.Helper()
	const tries = 3
	for i := 1; ; i++ {
		px, err := start()
		if err == nil {
			return px
		}
		if !errors.Is(err, errAddrInUse) || i == tries {
			t.Fatal(err)
		}
		t.Logf("try %d of %d: %v", i, tries, err)
	}
}

// errAddrInUse is run's error when the proxy could not bind a port:
// another process took it after freePort saw it free.
var errAddrInUse = errors.New("a port was taken by another process")

// run starts cmd and waits until it completes a TLS handshake on addr
// with a certificate roots trust. When the test ends it is sent SIGTERM,
// and killed if it has not exited within webtest.Deadline. If it does
// not serve, it is stopped and the error says why, wrapping
// errAddrInUse if it could not bind a port.
func run(t *testing.T, cmd *exec.Cmd, addr string, roots *x509.CertPool) (*servertest.Buffer, error) {
	t.Helper()
	p := new(servertest.Buffer) // what the proxy writes
	cmd.Stdout, cmd.Stderr = p, p
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", cmd.Path, err)
	}
	exited := make(chan struct{})
	var waitErr error
	go func() {
		waitErr = cmd.Wait()
		close(exited)
	}()
	deadline := time.Now().Add(webtest.Deadline)
	for {
		conn, err := tls.DialWithDialer(&net.Dialer{Timeout: time.Second}, "tcp", addr, &tls.Config{RootCAs: roots, ServerName: siteName})
		if err == nil {
			conn.Close()
			break
		}
		select {
		case <-exited:
			if strings.Contains(strings.ToLower(p.String()), "address already in use") {
				err = errAddrInUse
			}
			return nil, fmt.Errorf("%s exited before serving HTTPS on %s: %v: %w\n%s", cmd.Path, addr, waitErr, err, p.String())
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			<-exited
			return nil, fmt.Errorf("%s does not serve HTTPS on %s within %v: %w\n%s", cmd.Path, addr, webtest.Deadline, err, p.String())
		}
	}
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(webtest.Deadline):
			cmd.Process.Kill()
			<-exited
			t.Errorf("%s did not exit within %v of SIGTERM: killed\n%s", cmd.Path, webtest.Deadline, p.String())
		}
	})
	return p, nil
}
