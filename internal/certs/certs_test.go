package certs

import (
	"crypto/tls"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"visitors/internal/servertest"

	"github.com/rs/zerolog"
)

func TestParseDomains(t *testing.T) {
	tests := []struct {
		in      string
		want    string // the names joined by commas
		wantErr string
	}{
		{"a.example", "a.example", ""},
		{" A.Example., b.example ", "a.example,b.example", ""},
		{"xn--bcher-kva.example", "xn--bcher-kva.example", ""},
		{"", "", "an empty name"},
		{"a.example,", "", "an empty name"},
		{"*.a.example", "", "wildcard"},
		{"192.0.2.1", "", "an IP address"},
		{"[2001:db8::1]", "", "an IP address"},
		{"bücher.example", "", "punycode"},
		{"a..example", "", "not a DNS name"},
		{"-a.example", "", "not a DNS name"},
		{strings.Repeat("a", 64) + ".example", "", "not a DNS name"},
	}
	for _, tt := range tests {
		got, err := ParseDomains(tt.in)
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("ParseDomains(%q) = %q, %v, want an error saying %q", tt.in, got, err, tt.wantErr)
			}
			continue
		}
		if err != nil || strings.Join(got, ",") != tt.want {
			t.Errorf("ParseDomains(%q) = %q, %v, want %q", tt.in, got, err, tt.want)
		}
	}
}

// TestFilesConcurrent replaces the pair while handshakes ask for it and
// the files are looked at every millisecond, for the race detector:
// every answer is one of the pairs written, never nil.
func TestFilesConcurrent(t *testing.T) {
	dir := t.TempDir()
	certFile, keyFile := filepath.Join(dir, "c.pem"), filepath.Join(dir, "k.pem")
	mustWritePair(t, certFile, keyFile)
	f, err := loadFiles(certFile, keyFile, zerolog.Nop(), time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for range 4 {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				if c, _ := f.GetCertificate(nil); c == nil || c.Leaf == nil {
					t.Error("GetCertificate = nil")
					return
				}
			}
		})
	}
	for range 20 {
		mustWritePair(t, certFile, keyFile)
	}
	close(stop)
	wg.Wait()
}

// mustWritePair writes a new self-signed pair, valid from an hour ago,
// each file by a rename.
func mustWritePair(t *testing.T, certFile, keyFile string) {
	t.Helper()
	c := servertest.SelfSigned(t, "a.example")
	for name, b := range map[string][]byte{
		certFile: c.Cert,
		keyFile:  c.Key,
	} {
		if err := os.WriteFile(name+".tmp", b, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(name+".tmp", name); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := tls.LoadX509KeyPair(certFile, keyFile); err != nil {
		t.Fatal(err)
	}
}
