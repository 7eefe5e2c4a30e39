// Package certs gives the public listener its TLS certificates: from an
// ACME certificate authority, obtained and renewed while the service
// runs ([NewACME]), or from a certificate and key file that are read
// again when they change ([LoadFiles]).
package certs

import (
	"crypto/tls"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/rs/zerolog"
)

// ReloadEvery is how often, at most, [Files] looks at its files again: a
// handshake more than this long after the last look stats them.
const ReloadEvery = 2 * time.Second

// Files serves the certificate of a pair of PEM files, and serves a new
// pair once both files hold one: a renewal by certbot or a copy by hand
// needs no restart. A new pair that does not load (a key that does not
// match, a half-written file) is logged, and the old one served until
// the files change again. Its methods may be called concurrently.
type Files struct {
	certFile, keyFile string
	log               zerolog.Logger
	now               func() time.Time

	mu     sync.Mutex // guards cert, looked, stamp
	cert   *tls.Certificate
	looked time.Time // when the files were last stat'ed
	stamp  [2]stamp  // the files as last loaded, or as last failed to load
}

// stamp tells whether a file changed: its modification time, size and
// identity (a rename puts another file in its place).
type stamp struct {
	mod  time.Time
	size int64
	fi   os.FileInfo
}

func (s stamp) same(o stamp) bool {
	return s.fi != nil && o.fi != nil && s.mod.Equal(o.mod) && s.size == o.size && os.SameFile(s.fi, o.fi)
}

func stat(name string) (stamp, error) {
	fi, err := os.Stat(name)
	if err != nil {
		return stamp{}, err
	}
	return stamp{mod: fi.ModTime(), size: fi.Size(), fi: fi}, nil
}

// LoadFiles reads the pair certFile and keyFile, and returns a Files
// that serves it. Problems with a later pair are logged to log.
func LoadFiles(certFile, keyFile string, log zerolog.Logger) (*Files, error) {
	f := &Files{certFile: certFile, keyFile: keyFile, log: log, now: time.Now}
	st, cert, err := f.load()
	if err != nil {
		return nil, err
	}
	f.cert, f.stamp, f.looked = cert, st, f.now()
	return f, nil
}

// load stats and reads both files.
func (f *Files) load() ([2]stamp, *tls.Certificate, error) {
	var st [2]stamp
	for i, name := range []string{f.certFile, f.keyFile} {
		s, err := stat(name)
		if err != nil {
			return st, nil, fmt.Errorf("tls certificate: %w", err)
		}
		st[i] = s
	}
	cert, err := tls.LoadX509KeyPair(f.certFile, f.keyFile)
	if err != nil {
		return st, nil, fmt.Errorf("tls certificate %s and key %s: %w", f.certFile, f.keyFile, err)
	}
	return st, &cert, nil
}

// GetCertificate returns the pair to serve. It is a
// [tls.Config].GetCertificate.
func (f *Files) GetCertificate(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if now := f.now(); now.Sub(f.looked) >= ReloadEvery {
		f.looked = now
		f.reload()
	}
	return f.cert, nil
}

// reload loads the files if they changed since the last load or the last
// failure.
func (f *Files) reload() {
	var now [2]stamp
	for i, name := range []string{f.certFile, f.keyFile} {
		s, err := stat(name)
		if err != nil {
			if f.stamp[i].fi != nil { // log a vanished file once
				f.log.Error().Err(err).Msg("tls certificate files: keep serving the certificate loaded before")
				f.stamp[i] = stamp{}
			}
			return
		}
		now[i] = s
	}
	if now[0].same(f.stamp[0]) && now[1].same(f.stamp[1]) {
		return
	}
	st, cert, err := f.load()
	f.stamp = st
	if err != nil {
		f.log.Error().Err(err).Msg("tls certificate files changed but do not load: keep serving the certificate loaded before")
		return
	}
	f.cert = cert
	f.log.Info().Str("cert", f.certFile).Str("subject", cert.Leaf.Subject.String()).Time("not_after", cert.Leaf.NotAfter).Msg("tls certificate reloaded")
}
