package boltstore

import (
	"errors"
	"sync"
	"sync/atomic"
	"testing"

	"visitors/internal/store"
	"visitors/internal/store/storetest"
)

// countWrites makes s count each pass's write of each key (put calls
// putFault once per write) and returns the counter.
func countWrites(s *Store) *sync.Map {
	var m sync.Map
	f := func(key string) error {
		n, _ := m.LoadOrStore(key, new(atomic.Int64))
		n.(*atomic.Int64).Add(1)
		return nil
	}
	setHooks(s, func(h *hooks) { h.putFault = f })
	return &m
}

func writesOf(m *sync.Map, key string) int64 {
	if n, ok := m.Load(key); ok {
		return n.(*atomic.Int64).Load()
	}
	return 0
}

// TestChainOfRetiredEntriesWrittenOncePerPass: two negative Adds retire
// a key's entry twice (old1 → old2 → cur); a late visit on each retired
// entry, with the key's entry in the journal or not, reaches the file in
// one pass that writes the key once, and a restart reads every visit.
func TestChainOfRetiredEntriesWrittenOncePerPass(t *testing.T) {
	for _, curDirty := range []bool{false, true} {
		for _, viaClose := range []bool{false, true} {
			s, o, old1 := retiredByANegativeAdd(t)
			old2 := s.keys.Load([]byte("k"))
			if _, err := s.Add(ctx, []byte("k"), -1); err != nil {
				t.Fatal(err)
			}
			if old1 == old2 || !old1.gone() || !old2.gone() {
				t.Fatal("the Adds did not retire both entries")
			}
			want := uint64(5 - 2 - 1 + 2)
			// Late visits, as Store.count does in Batch, in the order that
			// puts old1 first in the journal (a stack): old2 then old1.
			for _, e := range []*entry{old2, old1} {
				lateVisit(s, e)
			}
			if curDirty {
				mustIncrN(t, s, "k", 1)
				want++
			}
			writes := countWrites(s)
			if !viaClose {
				if err := s.Flush(); err != nil {
					t.Fatal(err)
				}
				if n := writesOf(writes, "k"); n != 1 {
					t.Errorf("dirty %v: the pass wrote k %d times, want 1", curDirty, n)
				}
				if got := readTotalInFile(t, s, "k"); got != want {
					t.Errorf("dirty %v: the file holds %d after one pass, want %d", curDirty, got, want)
				}
			}
			s = reopen(t, s, o)
			if c := mustGet(t, s, []byte("k")); c.Total != want {
				t.Errorf("dirty %v close %v: after a restart %d, want %d", curDirty, viaClose, c.Total, want)
			}
			mustClose(t, s)
		}
	}
}

// TestForwardedVisitSurvivesAFailedPass: the pass that forwards a late
// visit to the key's entry fails to write that key; the forward is not
// repeated (counted twice) nor lost once the key can be written again.
func TestForwardedVisitSurvivesAFailedPass(t *testing.T) {
	s, o, old := retiredByANegativeAdd(t)
	lateVisit(s, old)
	fault := func(key string) error { return errors.New("planted") }
	setHooks(s, func(h *hooks) { h.putFault = fault })
	if err := s.Flush(); err != nil {
		t.Fatal(err) // a key that fails fails its visits, not the pass
	}
	if s.Health() == nil {
		t.Fatal("the pass with k failing left the store healthy")
	}
	lateVisit(s, old) // one more, after the failed pass
	setHooks(s, func(h *hooks) { h.putFault = nil })
	if err := s.Flush(); err != nil {
		t.Fatal(err)
	}
	if got := readTotalInFile(t, s, "k"); got != 5 {
		t.Errorf("the file holds %d, want 5 (5, less 2, and two late visits)", got)
	}
	s = reopen(t, s, o)
	defer mustClose(t, s)
	if c := mustGet(t, s, []byte("k")); c.Total != 5 {
		t.Errorf("after a restart %d, want 5", c.Total)
	}
}

// TestVisitsRacingNegativeAddsAndPassesAllReachTheFile: visits to one key
// race negative Adds and passes; none clamps (the key starts high), so
// the file must hold start + visits - adds after Close, whatever the
// interleaving.
func TestVisitsRacingNegativeAddsAndPassesAllReachTheFile(t *testing.T) {
	for _, d := range []store.Durability{store.Batch, store.Sync} {
		t.Run(d.String(), func(t *testing.T) { visitsRacingNegativeAdds(t, d) })
	}
}

func visitsRacingNegativeAdds(t *testing.T, d store.Durability) {
	dir := t.TempDir()
	o := Options{Dir: dir, Durability: d}
	s := mustOpen(t, o)
	const start, workers, adds = 1_000_000, 3, 60
	if _, err := s.Set(ctx, []byte("k"), start); err != nil {
		t.Fatal(err)
	}
	var (
		wg      sync.WaitGroup
		stop    atomic.Bool
		visited atomic.Int64
	)
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !stop.Load() {
				if _, _, err := s.Visit(ctx, []byte("k"), true); err != nil {
					t.Error(err)
					return
				}
				visited.Add(1)
			}
		}()
	}
	for i := range adds {
		if _, err := s.Add(ctx, []byte("k"), -1); err != nil {
			t.Fatal(err)
		}
		if i%3 == 0 {
			if err := s.Flush(); err != nil {
				t.Fatal(err)
			}
		}
	}
	stop.Store(true)
	wg.Wait()
	want := uint64(start + visited.Load() - adds)
	// No Flush: Close's last pass forwards the late visits of the last
	// retired entry, and must write them.
	s = reopen(t, s, o)
	defer mustClose(t, s)
	if c := mustGet(t, s, []byte("k")); c.Total != want {
		t.Errorf("after a restart: %d, want %d", c.Total, want)
	}
}

// retiredByANegativeAdd opens a batch store on a fixed clock, counts 5
// visits to key k and flushes them, and retires k's entry with an Add
// of -2. It returns the store, its options and the retired entry.
func retiredByANegativeAdd(t *testing.T) (*Store, Options, *entry) {
	t.Helper()
	clock := storetest.NewClock(storetest.At(0, "12:00"))
	o := Options{Dir: t.TempDir(), Now: clock.Now, Durability: store.Batch}
	s := mustOpen(t, o)
	mustIncrN(t, s, "k", 5)
	if err := s.Flush(); err != nil {
		t.Fatal(err)
	}
	old := s.keys.Load([]byte("k"))
	if _, err := s.Add(ctx, []byte("k"), -2); err != nil {
		t.Fatal(err)
	}
	return s, o, old
}

// lateVisit counts a visit on e as Store.count does in Batch: a visit
// that loaded e before an owner's operation retired it.
func lateVisit(s *Store, e *entry) {
	e.Add(s.cal.Today())
	s.markDirty(e)
}
