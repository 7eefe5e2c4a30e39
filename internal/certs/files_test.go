package certs

import (
	"bytes"
	"crypto/tls"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"visitors/internal/servertest"

	"github.com/rs/zerolog"
)

// TestFilesReplaced replaces the served pair's files with what must
// not be served, or must not stall a handshake, and makes handshakes
// with a real TLS listener all the while: each completes within
// seconds, with the pair it should have. A FIFO at the certificate's
// path hung every handshake once the files were looked at again (the
// handshake read the files, and a FIFO's open waits for a writer); a
// certificate file of 2 MiB (a good pair, padded) was read whole and
// served.
func TestFilesReplaced(t *testing.T) {
	tests := []struct {
		name    string
		replace func(t *testing.T, certFile, keyFile string) *big.Int // returns the serial of a pair written, or nil
		want    string                                                // "old" or "new": the pair served once the files were looked at
		logged  string                                                // what the log says once the files were looked at
	}{
		{"a FIFO at the certificate's path", func(t *testing.T, certFile, keyFile string) *big.Int {
			mustFIFO(t, certFile)
			return nil
		}, "old", "not a regular file"},
		{"a FIFO at the key's path", func(t *testing.T, certFile, keyFile string) *big.Int {
			mustFIFO(t, keyFile)
			return nil
		}, "old", "not a regular file"},
		{"a certificate file over the bound", func(t *testing.T, certFile, keyFile string) *big.Int {
			c := servertest.SelfSigned(t, "a.example")
			padded := append(bytes.Clone(c.Cert), bytes.Repeat([]byte("# padding\n"), 2<<20/10)...)
			mustReplace(t, keyFile, c.Key)
			mustReplace(t, certFile, padded)
			return c.Leaf.SerialNumber
		}, "old", "larger than"},
		{"a good pair", func(t *testing.T, certFile, keyFile string) *big.Int {
			c := servertest.SelfSigned(t, "a.example")
			mustReplace(t, keyFile, c.Key)
			mustReplace(t, certFile, c.Cert)
			return c.Leaf.SerialNumber
		}, "new", "tls certificate reloaded"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel() // most of it waits for the files to be looked at again
			dir := t.TempDir()
			certFile, keyFile := filepath.Join(dir, "c.pem"), filepath.Join(dir, "k.pem")
			old := servertest.SelfSigned(t, "a.example")
			mustReplace(t, certFile, old.Cert)
			mustReplace(t, keyFile, old.Key)
			var log servertest.Buffer
			f := mustLoadFiles(t, certFile, keyFile, zerolog.New(&log))
			addr := mustServeTLS(t, f)
			if got := mustHandshake(t, addr); got.Cmp(old.Leaf.SerialNumber) != 0 {
				t.Fatalf("served serial %v before the change, want %v", got, old.Leaf.SerialNumber)
			}
			written := tt.replace(t, certFile, keyFile)
			want := old.Leaf.SerialNumber
			if tt.want == "new" {
				want = written
			}
			// Handshakes until the files were looked at again (the log
			// says so), and twice after: at most 3 looks' time.
			deadline := time.Now().Add(3 * ReloadEvery)
			after := 0
			var got *big.Int
			for after < 2 {
				if time.Now().After(deadline) {
					t.Fatalf("within %v of the change the log does not say %q, and the pair served is %v, want %v; log:\n%s", 3*ReloadEvery, tt.logged, got, want, log.String())
				}
				got = mustHandshake(t, addr)
				if strings.Contains(log.String(), tt.logged) {
					after++
				}
				time.Sleep(50 * time.Millisecond)
			}
			if got.Cmp(want) != 0 {
				t.Errorf("served serial %v once the files were looked at, want the %s pair's %v; log:\n%s", got, tt.want, want, log.String())
			}
		})
	}
}

// mustLoadFiles loads the pair and closes it when the test ends.
func mustLoadFiles(t *testing.T, certFile, keyFile string, log zerolog.Logger) *Files {
	t.Helper()
	f, err := LoadFiles(certFile, keyFile, log)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(f.Close)
	return f
}

// mustServeTLS serves handshakes with f's certificates on a loopback
// port until the test ends, and returns its address.
func mustServeTLS(t *testing.T, f *Files) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	conf := &tls.Config{GetCertificate: f.GetCertificate}
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				tc := tls.Server(c, conf)
				tc.SetDeadline(time.Now().Add(time.Minute))
				tc.Handshake()
			}()
		}
	}()
	return l.Addr().String()
}

// handshakeWithin bounds a handshake: on loopback it takes milliseconds.
const handshakeWithin = 5 * time.Second

// mustHandshake makes a TLS handshake with addr and returns the serial
// of the certificate served; it fails the test if none completes within
// handshakeWithin.
func mustHandshake(t *testing.T, addr string) *big.Int {
	t.Helper()
	d := &net.Dialer{Timeout: handshakeWithin, Deadline: time.Now().Add(handshakeWithin)}
	c, err := tls.DialWithDialer(d, "tcp", addr, &tls.Config{InsecureSkipVerify: true, ServerName: "a.example"}) // the test's own pairs
	if err != nil {
		t.Fatalf("TLS handshake: %v (within %v)", err, handshakeWithin)
	}
	defer c.Close()
	return c.ConnectionState().PeerCertificates[0].SerialNumber
}

// mustReplace replaces name with b by a rename, as a certificate tool
// does.
func mustReplace(t *testing.T, name string, b []byte) {
	t.Helper()
	if err := os.WriteFile(name+".tmp", b, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(name+".tmp", name); err != nil {
		t.Fatal(err)
	}
}

// TestLoadFilesRefuses: at start, as at a reload, a file that is not a
// regular file or is over MaxFileBytes is refused at once, never read:
// a FIFO's open would wait for a writer, and a 400 MB file (sparse here)
// would be read whole.
func TestLoadFilesRefuses(t *testing.T) {
	tests := []struct {
		name string
		make func(t *testing.T, certFile string)
		want string
	}{
		{"a FIFO", func(t *testing.T, certFile string) { mustFIFO(t, certFile) }, "not a regular file"},
		{"a directory", func(t *testing.T, certFile string) {
			if err := os.Mkdir(certFile, 0o700); err != nil {
				t.Fatal(err)
			}
		}, "not a regular file"},
		{"400 MB", func(t *testing.T, certFile string) {
			f, err := os.Create(certFile)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			if err := f.Truncate(400 << 20); err != nil {
				t.Fatal(err)
			}
		}, "larger than"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			certFile, keyFile := filepath.Join(dir, "c.pem"), filepath.Join(dir, "k.pem")
			c := servertest.SelfSigned(t, "a.example")
			mustReplace(t, keyFile, c.Key)
			tt.make(t, certFile)
			errc := make(chan error, 1)
			go func() {
				f, err := LoadFiles(certFile, keyFile, zerolog.Nop())
				if err == nil {
					f.Close()
				}
				errc <- err
			}()
			select {
			case err := <-errc:
				if err == nil || !strings.Contains(err.Error(), tt.want) {
					t.Errorf("LoadFiles with %s at the certificate's path = %v, want an error saying %q", tt.name, err, tt.want)
				}
			case <-time.After(handshakeWithin):
				t.Fatalf("LoadFiles with %s at the certificate's path did not return within %v", tt.name, handshakeWithin)
			}
		})
	}
}

// TestFilesBadLoggedOnce: a file that does not load is logged once, not
// at every look until it changes. A certificate file refused unread (a
// FIFO, a directory, one over MaxFileBytes) left the key's stamp unset,
// so each look, every ReloadEvery, loaded and logged again: 1800 lines
// an hour.
func TestFilesBadLoggedOnce(t *testing.T) {
	tests := []struct {
		name    string
		replace func(t *testing.T, certFile, keyFile string)
	}{
		{"a FIFO at the certificate's path", func(t *testing.T, certFile, keyFile string) { mustFIFO(t, certFile) }},
		{"a FIFO at the key's path", func(t *testing.T, certFile, keyFile string) { mustFIFO(t, keyFile) }},
		{"a directory at the certificate's path", func(t *testing.T, certFile, keyFile string) {
			if err := os.Remove(certFile); err != nil {
				t.Fatal(err)
			}
			if err := os.Mkdir(certFile, 0o700); err != nil {
				t.Fatal(err)
			}
		}},
		{"a certificate file over the bound", func(t *testing.T, certFile, keyFile string) {
			if err := os.Truncate(certFile, MaxFileBytes+1); err != nil {
				t.Fatal(err)
			}
		}},
		{"a key that does not match", func(t *testing.T, certFile, keyFile string) {
			mustReplace(t, keyFile, servertest.SelfSigned(t, "a.example").Key)
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			certFile, keyFile := filepath.Join(dir, "c.pem"), filepath.Join(dir, "k.pem")
			old := servertest.SelfSigned(t, "a.example")
			mustReplace(t, certFile, old.Cert)
			mustReplace(t, keyFile, old.Key)
			var log servertest.Buffer
			f, err := loadFiles(certFile, keyFile, zerolog.New(&log), time.Hour) // the test looks itself
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			tt.replace(t, certFile, keyFile)
			for range 5 {
				f.reload()
			}
			if n := strings.Count(log.String(), "do not load"); n != 1 {
				t.Errorf("5 looks at unchanged files that do not load logged %d errors, want 1; log:\n%s", n, log.String())
			}
		})
	}
}
