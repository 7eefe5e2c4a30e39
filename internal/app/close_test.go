package app

import (
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"visitors/internal/logsink"
	"visitors/internal/servertest"
)

// TestCloseStopsTheClock: close undoes every step of start, the first
// one too, the coarse clock's start: a clock left running after Run
// returns keeps its goroutine (and would move). Mutation survivor
// app.go:182:30 (`i >= 0` → `> 0` skipped the first undo).
func TestCloseStopsTheClock(t *testing.T) {
	cfg := testConfig()
	cfg.Addr, cfg.AdminAddr = "127.0.0.1:0", ""
	sink := logsink.New(io.Discard, logsink.Options{})
	defer sink.Close()
	s := &service{cfg: cfg, to: DefaultTimeouts, sink: sink, log: zerolog.New(sink)}
	if err := s.start(); err != nil {
		s.close()
		t.Fatal(err)
	}
	s.close()
	a := s.clock.Now()
	time.Sleep(5 * time.Millisecond)
	if b := s.clock.Now(); a != b {
		t.Errorf("after close the clock moved from %d to %d: it was not stopped", a, b)
	}
}

// TestCloseStopsTheCertWatcher: with -tls-cert, close stops the
// goroutine that looks at the certificate files every
// certs.ReloadEvery: left running, it kept reading them after Run
// returned. No test failed with the undo step removed.
func TestCloseStopsTheCertWatcher(t *testing.T) {
	dir := t.TempDir()
	c := servertest.SelfSigned(t, "a.example")
	cfg := testConfig()
	cfg.Addr, cfg.AdminAddr = "127.0.0.1:0", ""
	cfg.TLS.CertFile, cfg.TLS.KeyFile = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	if err := os.WriteFile(cfg.TLS.CertFile, c.Cert, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(cfg.TLS.KeyFile, c.Key, 0o600); err != nil {
		t.Fatal(err)
	}
	sink := logsink.New(io.Discard, logsink.Options{})
	defer sink.Close()
	s := &service{cfg: cfg, to: DefaultTimeouts, sink: sink, log: zerolog.New(sink)}
	if err := s.start(); err != nil {
		s.close()
		t.Fatal(err)
	}
	// The watcher, started or not yet (then its frame is loadFiles's
	// go statement's wrapper, not watch).
	const watcher = "created by visitors/internal/certs.loadFiles"
	if !strings.Contains(stacks(), watcher) {
		s.close()
		t.Fatalf("no goroutine %s after start: the test looks for the wrong name", watcher)
	}
	s.close()
	for deadline := time.Now().Add(5 * time.Second); strings.Contains(stacks(), watcher); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("5s after close a goroutine %s is still running", watcher)
		}
	}
}

// stacks returns the stacks of every goroutine.
func stacks() string {
	buf := make([]byte, 1<<20)
	return string(buf[:runtime.Stack(buf, true)])
}
