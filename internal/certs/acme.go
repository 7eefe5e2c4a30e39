package certs

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/crypto/acme"
	"golang.org/x/crypto/acme/autocert"
)

// LetsEncrypt is the directory of Let's Encrypt's production certificate
// authority, -acme-ca's default.
const LetsEncrypt = acme.LetsEncryptURL

// ACME configures [NewACME].
type ACME struct {
	Domains []string // the names to get certificates for, checked by [ParseDomains]
	Dir     string   // where certificates and the account key are kept; made 0700
	CA      string   // the ACME directory URL
	Email   string   // the account's contact, told of problems by the CA; may be ""
	// Roots, if not nil, are the roots the CA's own HTTPS certificate is
	// checked against instead of the system's: a test CA's.
	Roots *x509.CertPool
}

// NewACME returns the manager that gets and renews the certificates of
// c.Domains from c.CA: in a TLS handshake (TLS-ALPN-01) or by its
// HTTPHandler (HTTP-01), and again when a third of a certificate's
// lifetime is left. It makes c.Dir, 0700. It may be used concurrently.
func NewACME(c ACME) (*autocert.Manager, error) {
	if len(c.Domains) == 0 {
		return nil, errors.New("no domain to get a certificate for")
	}
	u, err := url.Parse(c.CA)
	if err != nil || u.Scheme != "https" || u.Host == "" {
		return nil, fmt.Errorf("-acme-ca %q: want the https:// URL of an ACME directory", c.CA)
	}
	// One directory per CA: a test CA's certificate is never served
	// once -acme-ca names another.
	dir := filepath.Join(c.Dir, safeName(u.Host+u.Path))
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("acme storage: %w", err)
	}
	for _, d := range []string{c.Dir, dir} {
		if err := os.Chmod(d, 0o700); err != nil {
			return nil, fmt.Errorf("acme storage: %w", err)
		}
	}
	client := &acme.Client{DirectoryURL: c.CA}
	if c.Roots != nil {
		t := http.DefaultTransport.(*http.Transport).Clone()
		t.TLSClientConfig = &tls.Config{RootCAs: c.Roots}
		client.HTTPClient = &http.Client{Transport: t}
	}
	m := &autocert.Manager{
		Prompt:     autocert.AcceptTOS,
		Cache:      autocert.DirCache(dir),
		HostPolicy: autocert.HostWhitelist(c.Domains...),
		Client:     client,
		Email:      c.Email,
	}
	return m, nil
}

// safeName makes s a file name: what is not a letter, digit, dot or
// dash becomes an underscore.
func safeName(s string) string {
	return strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '-' {
			return r
		}
		return '_'
	}, strings.TrimSuffix(s, "/"))
}

// ParseDomains splits a -tls-domains value, a comma-separated list, into
// its names, lowercased. It refuses an empty list or name, a wildcard (it
// needs the DNS-01 challenge, which is not done here), an IP address,
// and a name that is not a DNS name in ASCII (punycode, xn--...).
func ParseDomains(v string) ([]string, error) {
	var names []string
	for d := range strings.SplitSeq(v, ",") {
		d = strings.ToLower(strings.TrimSuffix(strings.TrimSpace(d), "."))
		if err := checkDomain(d); err != nil {
			return nil, err
		}
		names = append(names, d)
	}
	return names, nil
}

// checkDomain says what is wrong with d as the name of a certificate.
func checkDomain(d string) error {
	switch {
	case d == "":
		return errors.New("an empty name: want a comma-separated list of DNS names such as a.example,b.example")
	case strings.Contains(d, "*"):
		return fmt.Errorf("%q: a wildcard needs the DNS-01 challenge, which visitors does not do; list each name", d)
	case net.ParseIP(strings.Trim(d, "[]")) != nil:
		return fmt.Errorf("%q: an IP address; ACME certificates here are for DNS names", d)
	case len(d) > 253:
		return fmt.Errorf("%q: longer than 253 characters", d)
	}
	for label := range strings.SplitSeq(d, ".") {
		if label == "" || len(label) > 63 || label[0] == '-' || label[len(label)-1] == '-' {
			return fmt.Errorf("%q: not a DNS name (each dot-separated label is 1 to 63 letters, digits or dashes, not starting or ending with a dash)", d)
		}
		for _, r := range label {
			if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-') {
				return fmt.Errorf("%q: not a DNS name: %q is not a letter, digit or dash (write an international name in punycode, xn--...)", d, r)
			}
		}
	}
	return nil
}

// HTTPHandler returns m's handler of the HTTP-01 challenge, with
// fallback for every other request. It asks m's host policy about the
// host without its port: autocert's would refuse visitors.test:8080 when
// the plain-HTTP listener is not on port 80, as behind a port
// forwarding, or a test CA's.
func HTTPHandler(m *autocert.Manager, fallback http.Handler) http.Handler {
	h := m.HTTPHandler(fallback)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if host, _, err := net.SplitHostPort(r.Host); err == nil {
			r.Host = host
		}
		h.ServeHTTP(w, r)
	})
}
