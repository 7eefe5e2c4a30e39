// Package certs gives the public listener its TLS certificates: from an
// ACME certificate authority, obtained and renewed while the service
// runs ([NewACME]), or from a certificate and key file that are read
// again when they change ([LoadFiles]).
package certs

import (
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/rs/zerolog"
)

// ReloadEvery is how often [Files] looks at its files again.
const ReloadEvery = 2 * time.Second

// MaxFileBytes is the largest certificate or key file [Files] reads: a
// chain of a few certificates takes a few kilobytes. A larger file is
// refused without being read.
const MaxFileBytes = 1 << 20

// Files serves the certificate of a pair of PEM files, and serves a new
// pair once both files hold one: a renewal by certbot or a copy by hand
// needs no restart. A new pair that does not load (a key that does not
// match, a half-written file, a file over [MaxFileBytes], something
// other than a regular file such as a FIFO or a device) is logged, and
// the old one served until the files change again.
//
// One goroutine looks at the files every [ReloadEvery] and loads a
// changed pair; a handshake only reads the pair last loaded, so a file
// that is slow to read never stalls one. Its methods may be called
// concurrently.
type Files struct {
	certFile, keyFile string
	log               zerolog.Logger

	cert atomic.Pointer[tls.Certificate] // the pair served

	stamp [2]stamp // the files as last loaded, or as last failed to load; the watcher's alone once it runs

	done      chan struct{} // closed by Close
	stopped   chan struct{} // closed when the watcher returns
	closeOnce sync.Once
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
	fi, err := os.Stat(name) // follows a symbolic link, as certbot's live/ names are
	if err != nil {
		return stamp{}, err
	}
	return stamp{mod: fi.ModTime(), size: fi.Size(), fi: fi}, nil
}

// LoadFiles reads the pair certFile and keyFile, and returns a Files
// that serves it and looks at the files again every [ReloadEvery].
// Problems with a later pair are logged to log. The caller must call
// Close.
func LoadFiles(certFile, keyFile string, log zerolog.Logger) (*Files, error) {
	return loadFiles(certFile, keyFile, log, ReloadEvery)
}

// loadFiles is LoadFiles, looking at the files every every.
func loadFiles(certFile, keyFile string, log zerolog.Logger, every time.Duration) (*Files, error) {
	f := &Files{certFile: certFile, keyFile: keyFile, log: log, done: make(chan struct{}), stopped: make(chan struct{})}
	st, cert, err := f.load()
	if err != nil {
		return nil, err
	}
	f.cert.Store(cert)
	f.stamp = st
	go f.watch(every)
	return f, nil
}

// Close stops looking at the files; the pair last loaded is still
// served. It may be called more than once.
func (f *Files) Close() {
	f.closeOnce.Do(func() { close(f.done) })
	<-f.stopped
}

// watch looks at the files every every until Close.
func (f *Files) watch(every time.Duration) {
	defer close(f.stopped)
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-t.C:
			f.reload()
		case <-f.done:
			return
		}
	}
}

// load stats and reads both files.
func (f *Files) load() ([2]stamp, *tls.Certificate, error) {
	var st [2]stamp
	var pem [2][]byte
	names := [2]string{f.certFile, f.keyFile}
	for i, name := range names { // both stamps before a read can fail: a file that does not load is looked at again once it changes
		s, err := stat(name)
		if err != nil {
			return st, nil, fmt.Errorf("tls certificate: %w", err)
		}
		st[i] = s
	}
	for i, name := range names {
		var err error
		if pem[i], err = readFile(name); err != nil {
			return st, nil, fmt.Errorf("tls certificate: %w", err)
		}
	}
	cert, err := tls.X509KeyPair(pem[0], pem[1])
	if err != nil {
		return st, nil, fmt.Errorf("tls certificate %s and key %s: %w", f.certFile, f.keyFile, err)
	}
	return st, &cert, nil
}

// errNotRegular is the error of a file that is not a regular file.
var errNotRegular = errors.New("not a regular file (a FIFO, a device or a directory is refused)")

// readFile reads name if it is a regular file of at most MaxFileBytes.
// It never blocks on a special file: it refuses one by its mode before
// the open, opens without blocking (a FIFO put in its place meanwhile
// opens at once), and checks the mode of what it opened before reading.
// It reads at most MaxFileBytes+1 bytes, however much the file grows.
func readFile(name string) ([]byte, error) {
	fi, err := os.Stat(name)
	if err != nil {
		return nil, err
	}
	if err := checkFile(name, fi); err != nil {
		return nil, err
	}
	file, err := os.OpenFile(name, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	defer file.Close()
	if fi, err = file.Stat(); err != nil {
		return nil, err
	}
	if err := checkFile(name, fi); err != nil {
		return nil, err
	}
	b, err := io.ReadAll(io.LimitReader(file, MaxFileBytes+1))
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", name, err)
	}
	if len(b) > MaxFileBytes {
		return nil, fmt.Errorf("%s: larger than %d bytes", name, MaxFileBytes)
	}
	return b, nil
}

// checkFile refuses fi, name's, unless it is a regular file of at most
// MaxFileBytes.
func checkFile(name string, fi os.FileInfo) error {
	switch {
	case !fi.Mode().IsRegular():
		return fmt.Errorf("%s: %w", name, errNotRegular)
	case fi.Size() > MaxFileBytes:
		return fmt.Errorf("%s: larger than %d bytes (%d), not a certificate or key file", name, MaxFileBytes, fi.Size())
	}
	return nil
}

// GetCertificate returns the pair to serve. It is a
// [tls.Config].GetCertificate: it reads the pair last loaded, and
// never touches the files.
func (f *Files) GetCertificate(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	return f.cert.Load(), nil
}

// Covers reports whether the certificate served now is valid for host,
// a DNS name or an IP address: a [Redirect].Serves.
func (f *Files) Covers(host string) bool {
	c := f.cert.Load()
	return c.Leaf != nil && c.Leaf.VerifyHostname(host) == nil
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
	f.cert.Store(cert)
	f.log.Info().Str("cert", f.certFile).Str("subject", cert.Leaf.Subject.String()).Time("not_after", cert.Leaf.NotAfter).Msg("tls certificate reloaded")
}
