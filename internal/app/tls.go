package app

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"

	"github.com/rs/zerolog"
	"golang.org/x/crypto/acme"

	"visitors/internal/certs"
)

// TLSConfig says how the public listener serves HTTPS: off, with
// certificates from ACME (Domains), or from files (CertFile, KeyFile).
type TLSConfig struct {
	Domains  []string // -tls-domains: get certificates for these by ACME
	domains  string   // -tls-domains as given, parsed into Domains by check
	HTTPAddr string   // plain HTTP: ACME's HTTP-01 challenge and a redirect to HTTPS; "" disables it
	CA       string   // ACME directory URL
	Email    string   // ACME account contact
	CARoot   string   // PEM file of the roots the ACME server's HTTPS is checked against; "": the system's
	CertFile string   // -tls-cert: a PEM certificate chain, reloaded on change
	KeyFile  string   // -tls-key: its PEM private key
	// HTTPSPort is -https-port: the port HTTPAddr's redirects name; 0:
	// the public listener's.
	HTTPSPort int
}

// DefaultTLSAddr is -addr's default when HTTPS is on.
const DefaultTLSAddr = ":443"

// On reports whether the public listener serves HTTPS.
func (t TLSConfig) On() bool { return len(t.Domains) > 0 || t.CertFile != "" }

// flags defines the TLS flags on fs, into t.
func (t *TLSConfig) flags(fs *flag.FlagSet) {
	fs.StringVar(&t.domains, "tls-domains", "", "serve HTTPS on -addr (default then "+DefaultTLSAddr+") for these `names` (a.example,b.example), with certificates got and renewed from -acme-ca and kept in <-data>/acme; -http-addr answers the CA's challenge and redirects to HTTPS")
	fs.StringVar(&t.HTTPAddr, "http-addr", ":80", "with -tls-domains or -tls-cert: plain-HTTP `address` (or fd:N) that answers ACME HTTP-01 challenges and redirects everything else to HTTPS; empty disables it")
	fs.StringVar(&t.CA, "acme-ca", certs.LetsEncrypt, "with -tls-domains: `URL` of the ACME directory that issues the certificates")
	fs.StringVar(&t.Email, "acme-email", "", "with -tls-domains: contact `address` of the ACME account, which the CA may tell of problems with the certificates")
	fs.StringVar(&t.CARoot, "acme-ca-root", "", "with -tls-domains: PEM `file` of the root certificates to check the ACME server's HTTPS against instead of the system's (a test CA's)")
	fs.StringVar(&t.CertFile, "tls-cert", "", "serve HTTPS on -addr (default then "+DefaultTLSAddr+") with this PEM certificate chain `file`, read again when it changes (needs -tls-key)")
	fs.StringVar(&t.KeyFile, "tls-key", "", "PEM private key `file` of -tls-cert")
	fs.IntVar(&t.HTTPSPort, "https-port", 0, "the HTTPS `port` that -http-addr's redirects name, when a port forwarding puts HTTPS elsewhere than -addr's port (0: -addr's; 443 is left out of the URL)")
}

// check parses -tls-domains, given if domainsSet even if empty, and
// refuses flags that contradict each other.
func (t *TLSConfig) check(data string, domainsSet bool) error {
	if t.domains != "" || domainsSet {
		d, err := certs.ParseDomains(t.domains)
		if err != nil {
			return fmt.Errorf("-tls-domains: %w", err)
		}
		t.Domains = d
	}
	switch {
	case len(t.Domains) > 0 && (t.CertFile != "" || t.KeyFile != ""):
		return errors.New("-tls-domains and -tls-cert: choose one, certificates from ACME or from files")
	case t.CertFile != "" && t.KeyFile == "":
		return errors.New("-tls-cert needs -tls-key, the file of its private key")
	case t.KeyFile != "" && t.CertFile == "":
		return errors.New("-tls-key needs -tls-cert, the file of its certificate")
	case len(t.Domains) == 0 && (t.CA != certs.LetsEncrypt || t.Email != "" || t.CARoot != ""):
		return errors.New("-acme-ca, -acme-email and -acme-ca-root need -tls-domains, the names to get certificates for")
	case len(t.Domains) > 0 && data == "":
		return errors.New("-tls-domains needs -data, the directory where certificates are kept")
	case t.HTTPSPort != 0 && !t.On():
		return errors.New("-https-port needs -tls-domains or -tls-cert: it is the port of HTTPS that -http-addr's redirects name")
	}
	return nil
}

// setup returns the public listener's TLS configuration, what makes
// the handler of the plain-HTTP listener for HTTPS on a port, and what
// stops watching the certificate files (nil with ACME), or nil, nil,
// nil if TLS is off. It reads the files it is given now, so that a bad
// one stops the start.
//
// The plain-HTTP listener redirects a host to HTTPS only if HTTPS
// serves it: with files, a name the certificate served now covers
// (others get 421); with ACME, a name of -tls-domains (others are sent
// to the first).
func (t TLSConfig) setup(data string, log zerolog.Logger) (*tls.Config, func(port int) http.Handler, func(), error) {
	switch {
	case t.CertFile != "":
		f, err := certs.LoadFiles(t.CertFile, t.KeyFile, log)
		if err != nil {
			return nil, nil, nil, usage(fmt.Errorf("-tls-cert: %w", err))
		}
		redirect := func(port int) http.Handler { return certs.Redirect{Serves: f.Covers, Port: port} }
		return &tls.Config{GetCertificate: f.GetCertificate}, redirect, f.Close, nil
	case len(t.Domains) > 0:
		c := certs.ACME{Domains: t.Domains, Dir: filepath.Join(data, "acme"), CA: t.CA, Email: t.Email}
		if t.CARoot != "" {
			pem, err := os.ReadFile(t.CARoot)
			if err != nil {
				return nil, nil, nil, usage(fmt.Errorf("-acme-ca-root: %w", err))
			}
			c.Roots = x509.NewCertPool()
			if !c.Roots.AppendCertsFromPEM(pem) {
				return nil, nil, nil, usage(fmt.Errorf("-acme-ca-root %s: no PEM certificate in it", t.CARoot))
			}
		}
		m, err := certs.NewACME(c)
		if err != nil {
			return nil, nil, nil, usage(err)
		}
		conf := &tls.Config{GetCertificate: m.GetCertificate, NextProtos: []string{"h2", "http/1.1", acme.ALPNProto}}
		redirect := func(port int) http.Handler {
			return certs.HTTPHandler(m, certs.Redirect{Serves: certs.Names(t.Domains), Fallback: t.Domains[0], Port: port})
		}
		return conf, redirect, nil, nil
	}
	return nil, nil, nil, nil
}

// serve serves l with s: over TLS, HTTP/2 included, if s has a
// TLSConfig.
func serve(s *http.Server, l net.Listener) error {
	if s.TLSConfig != nil {
		return s.ServeTLS(l, "", "")
	}
	return s.Serve(l)
}

// setOnCommandLine reports whether the flag name was given in args.
func setOnCommandLine(fs *flag.FlagSet, name string) bool {
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}
