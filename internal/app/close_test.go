package app

import (
	"io"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"visitors/internal/logsink"
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
