package boltstore

import (
	"slices"
	"testing"
	"time"

	"visitors/internal/store"
	"visitors/internal/store/storetest"
)

// TestAddZeroKeepsEarlierDays: Add of 0 changes nothing, and only a
// negative Add clears a key's earlier days: they stay in the file, shown
// by Days and after a restart. (Mutation testing, issue 28: with `n <= 0`
// for `n < 0`, owners.go:285:9, Add of 0 deleted the days on disk and
// every test still passed.)
func TestAddZeroKeepsEarlierDays(t *testing.T) {
	for _, mode := range []store.Durability{store.Batch, store.Sync} {
		t.Run(mode.String(), func(t *testing.T) {
			dir := t.TempDir()
			clock := storetest.NewClock(storetest.At(0, "12:00"))
			o := Options{Dir: dir, Durability: mode, Now: clock.Now}
			s := mustOpen(t, o)
			mustIncrN(t, s, "k", 3)
			noErr(t, s.Flush(), "Flush()") // the day is on disk, no longer in memory
			clock.Add(24 * time.Hour)
			s.Rollover()
			mustIncrN(t, s, "k", 1)
			c, err := s.Add(ctx, []byte("k"), 0)
			noErr(t, err, "Add(k, 0)")
			if c.Total != 4 || c.Today != 1 {
				t.Errorf("Add(k, 0) = %+v, want total 4, today 1", c)
			}
			want := []uint64{3, 1}
			if d := mustDays(t, s, []byte("k"), 2); !slices.Equal(d.Counts, want) {
				t.Errorf("Days(k, 2) after Add(k, 0) = %v, want %v", d.Counts, want)
			}
			s = reopen(t, s, o)
			defer mustClose(t, s)
			if d := mustDays(t, s, []byte("k"), 2); !slices.Equal(d.Counts, want) {
				t.Errorf("Days(k, 2) after Add(k, 0) and a restart = %v, want %v", d.Counts, want)
			}
		})
	}
}

// TestPendingAfterAdd: what Add wrote is on disk, so it is not pending:
// while the file cannot be written, Pending counts the visits after the
// Add alone. (Mutation testing, issue 28: with the entry's written total
// left as it was, owners.go:306:10, Pending counted the Add's 5 as
// visits not on disk.)
func TestPendingAfterAdd(t *testing.T) {
	s := mustOpen(t, Options{Dir: t.TempDir(), FlushInterval: time.Hour})
	mustIncrN(t, s, "a", 2)
	noErr(t, s.Flush(), "Flush()")
	if _, err := s.Add(ctx, []byte("a"), 5); err != nil {
		t.Fatalf("Add(a, 5) = %v", err)
	}
	path := failDisk(s)
	mustIncrN(t, s, "a", 1)
	if err := s.Flush(); err == nil {
		t.Fatal("Flush() succeeded with the file closed")
	}
	if n, _, _ := s.Pending(); n != 1 {
		t.Errorf("Pending() = %d after Add(a, 5) and a visit the file did not take, want 1", n)
	}
	diskBack(t, s, path)
	healLog(s)
	mustClose(t, s)
}
