package boltstore

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"visitors/internal/store"
)

// TestRefusedVisitRacingAVisitOfItsNewKeyLosesNothing races, in sync
// mode, visits that make a key and are refused (their key's write
// fails, every other time) against visits of the same new key that
// succeed: a refused visit takes its key back (unmake), and that must
// never take with it a visit that was acknowledged. Every key's count,
// in memory and after a reopen, is the number of visits acknowledged.
func TestRefusedVisitRacingAVisitOfItsNewKeyLosesNothing(t *testing.T) {
	for _, logEvery := range []uint64{1, 3} {
		t.Run(fmt.Sprintf("log fails 1 in %d", logEvery), func(t *testing.T) {
			raceRefusedVisits(t, logEvery)
		})
	}
}

// raceRefusedVisits runs the race with one log sync in logEvery failing
// (1: every pass goes to the file; more: passes are pipelined through
// the log, and a failed record's passes, taken already, go to the file
// together).
func raceRefusedVisits(t *testing.T, logEvery uint64) {
	t.Helper()
	dir := t.TempDir()
	s := mustOpen(t, Options{Dir: dir, Durability: store.Sync, FlushInterval: time.Hour})
	var calls atomic.Uint64
	fault := func(string) error {
		if calls.Add(1)%2 == 1 { // the first fails
			return errors.New("planted failure")
		}
		return nil
	}
	setHooks(s, func(h *hooks) { h.putFault = fault })
	var syncs atomic.Uint64
	logFault := func() error {
		if syncs.Add(1)%logEvery == 1%logEvery { // the first fails
			return errors.New("planted log failure")
		}
		return nil
	}
	setHooks(s, func(h *hooks) { h.logFault = logFault })
	const rounds, keys, perKey = 5, 300, 4
	acked := make([]atomic.Uint64, rounds*keys)
	var refused atomic.Uint64
	for r := range rounds { // each round's keys are new
		var wg sync.WaitGroup
		for i := r * keys; i < (r+1)*keys; i++ {
			for range perKey {
				wg.Go(func() {
					_, _, err := s.Visit(ctx, fmt.Appendf(nil, "k%d", i), true)
					if err == nil {
						acked[i].Add(1)
					} else {
						refused.Add(1)
					}
				})
			}
		}
		wg.Wait()
	}
	setHooks(s, func(h *hooks) { h.putFault = nil })
	healLog(s)
	if err := s.Flush(); err != nil {
		t.Fatal(err)
	}
	if refused.Load() == 0 {
		t.Fatal("no visit was refused: the race was not run")
	}
	check := func(when string) {
		t.Helper()
		for i := range acked {
			c, err := s.Get(ctx, fmt.Appendf(nil, "k%d", i))
			if err != nil {
				t.Fatal(err)
			}
			if c.Total != acked[i].Load() {
				t.Errorf("%s: k%d = %d, want %d acknowledged visits", when, i, c.Total, acked[i].Load())
			}
		}
	}
	check("in memory")
	t.Logf("%d visits refused; %d keys", refused.Load(), s.Keys())
	s = reopen(t, s, Options{Dir: dir, Durability: store.Sync})
	defer mustClose(t, s)
	check("after a reopen")
}
