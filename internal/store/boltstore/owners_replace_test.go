package boltstore

import (
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"visitors/internal/store"
)

// TestAVisitThatMadeAnEntryDuringAReplace: a visit that finds the key
// absent while replace puts its new entry in (an import of a key memory
// does not hold; a negative Add of a key deleted meanwhile) is handed
// that entry (newEntry), and must store it then or not at all. When the map
// made it outside its lock, the visit could pause there, and put it back
// after an owner's Delete had retired it: the key then counted on a
// retired entry, in memory only, and lost every visit at a restart.
// With a further Add it was retired again, its fwd reset to 0, and a
// pass forwarded its whole total a second time (CI, 2026-11-28:
// TestVisitsRacingNegativeAddsAndPassesAllReachTheFile/batch read
// 9,584,131 for 6,524,868).
func TestAVisitThatMadeAnEntryDuringAReplace(t *testing.T) {
	o := Options{Dir: t.TempDir(), Durability: store.Batch}
	s := mustOpen(t, o)
	made, release := make(chan struct{}), make(chan struct{})
	var first atomic.Bool
	hold := func(e *entry) {
		if e.key != "k" || !first.CompareAndSwap(false, true) {
			return
		}
		close(made)
		// The map runs this under its lock, where the replace waits for
		// it: the visit goes on once the flusher is seen waiting there.
		// A map that ran it outside let the replace, and the Delete
		// below, run meanwhile: the visit waits for them. One or the
		// other comes; the bound is for a runtime that names its waits
		// otherwise, and fails the test rather than hang it.
		const bound = 30 * time.Second
		stacks := make([]byte, 1<<20)
		for start := time.Now(); !flusherWaitsForTheMap(stacks); {
			select {
			case <-release:
				return
			default:
				runtime.Gosched()
			}
			if time.Since(start) > bound {
				t.Errorf("after %v, the flusher was not seen waiting for the map's lock, nor did the Delete come: has the runtime renamed its wait reasons?", bound)
				return
			}
		}
	}
	setHooks(s, func(h *hooks) { h.entryMade = hold })
	var visit sync.WaitGroup
	gap := func() {
		setHooks(s, func(h *hooks) { h.replaceGap = nil })
		visit.Go(func() {
			if _, _, err := s.Visit(ctx, []byte("k"), true); err != nil {
				t.Error(err)
			}
		})
		<-made // the visit has the new entry from newEntry
	}
	setHooks(s, func(h *hooks) { h.replaceGap = gap })
	// An import of a key memory does not hold: replace finds no entry
	// to take the place of (a negative Add or a Set swaps its entry in
	// the old one's place, and a visit then finds that one).
	if err := s.Import(ctx, strings.NewReader(dumpKeyDays("k", s.cal.Today(), map[int]uint64{0: 1000}, false)), false); err != nil {
		t.Fatal(err)
	}
	if found, err := s.Delete(ctx, []byte("k")); err != nil || !found {
		t.Fatalf("Delete: %v, %v", found, err)
	}
	close(release)
	visit.Wait()
	setHooks(s, func(h *hooks) { h.entryMade = nil })
	for range 3 {
		if _, _, err := s.Visit(ctx, []byte("k"), true); err != nil {
			t.Fatal(err)
		}
	}
	if c := mustGet(t, s, []byte("k")); c.Total != 3 {
		t.Errorf("in memory: %d, want 3 (the visits after the Delete)", c.Total)
	}
	s = reopen(t, s, o)
	defer mustClose(t, s)
	if c := mustGet(t, s, []byte("k")); c.Total != 3 {
		t.Errorf("after a restart: %d, want 3", c.Total)
	}
}

// flusherWaitsForTheMap reports whether the flusher is blocked on the
// lock of the store's map in replace, as the goroutines' stacks say: a
// test's way to see that a hook holds that lock without waiting on a
// clock.
func flusherWaitsForTheMap(buf []byte) bool {
	buf = buf[:runtime.Stack(buf, true)]
	for g := range strings.SplitSeq(string(buf), "\n\n") {
		header, _, _ := strings.Cut(g, "\n")
		waits := strings.Contains(header, "[sync.Mutex.Lock") || strings.Contains(header, "[sync.RWMutex.Lock")
		if waits && strings.Contains(g, "tally.(*Map[...]).store(") && strings.Contains(g, "(*Store).replace(") {
			return true
		}
	}
	return false
}
