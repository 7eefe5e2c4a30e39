package boltstore

import (
	"strings"
	"testing"
	"time"

	"visitors/internal/store"
	"visitors/internal/store/storetest"
)

// TestOnlineImportedLaterDaysReachedWhileRunning: the days after today
// that an online import leaves in the file for a key (the dump's, and
// with merge those the key held before) count on from their counts when
// each day comes while the store runs, as they do after a restart
// (TestOnlineImportKeepsTheFilesLaterDay), in both durabilities, for a
// key the store held and a new one. A restart on the day then reads the
// same count. Before, applyImport kept only the latest later day, for
// the file's dated total, and gave the new entry's tally none: the day
// began at 0, the visit read today 1, and the pass wrote 1 over the
// file's count.
func TestOnlineImportedLaterDaysReachedWhileRunning(t *testing.T) {
	tests := []struct {
		name    string
		held    map[int]uint64 // the key's later days in the file before the import, by offset from today
		dump    map[int]uint64 // the dump's days of the key
		replace bool
		want    map[int]uint64 // each later day's count after one visit on it
	}{
		{"new key, one later day", nil, map[int]uint64{1: 5}, false, map[int]uint64{1: 6}},
		{"new key, two later days", nil, map[int]uint64{1: 3, 2: 4}, false, map[int]uint64{1: 4, 2: 5}},
		{"merge onto a held later day", map[int]uint64{2: 5}, map[int]uint64{0: 2}, false, map[int]uint64{2: 6}},
		{"merge beside a held later day", map[int]uint64{2: 5}, map[int]uint64{1: 3}, false, map[int]uint64{1: 4, 2: 6}},
		{"merge into the same later day", map[int]uint64{2: 5}, map[int]uint64{2: 2}, false, map[int]uint64{2: 8}},
		{"replace drops the held later day", map[int]uint64{2: 5}, map[int]uint64{0: 2}, true, map[int]uint64{2: 1}},
		{"replace with a later day of its own", map[int]uint64{2: 5}, map[int]uint64{1: 3}, true, map[int]uint64{1: 4, 2: 1}},
	}
	for _, tt := range tests {
		for _, d := range []store.Durability{store.Batch, store.Sync} {
			t.Run(tt.name+"/"+d.String(), func(t *testing.T) {
				dir := t.TempDir()
				clock := storetest.NewClock(storetest.At(0, "12:00"))
				today := store.DayOf(clock.Now())
				o := Options{Dir: dir, Now: clock.Now, Durability: d}
				s := mustOpen(t, o)
				if tt.held != nil { // in the file, read back at load: the tally holds them
					if err := s.Import(ctx, strings.NewReader(dumpKeyDays("k", today, tt.held, false)), false); err != nil {
						t.Fatal(err)
					}
					s = reopen(t, s, o)
				}
				if err := s.Import(ctx, strings.NewReader(dumpKeyDays("k", today, tt.dump, false)), tt.replace); err != nil {
					t.Fatal(err)
				}
				visitLaterDays(t, s, clock, o, tt.want)
			})
		}
	}
}

// visitLaterDays moves the store's clock a day at a time to the last day
// of want (offsets from today), visits key k on each day want names and
// checks its count that day, then reopens the store on the last day and
// checks the count read back. It closes the store.
func visitLaterDays(t *testing.T, s *Store, clock *storetest.Clock, o Options, want map[int]uint64) {
	t.Helper()
	last := 0
	for off := range want {
		last = max(last, off)
	}
	for off := 1; off <= last; off++ {
		clock.Add(24 * time.Hour)
		s.Rollover()
		if w, ok := want[off]; ok {
			if c := mustIncr(t, s, []byte("k")); c.Today != w {
				t.Errorf("a visit on today+%d, the store running = %+v, want today %d", off, c, w)
			}
		}
	}
	s = reopen(t, s, o)
	defer mustClose(t, s)
	if c := mustGet(t, s, []byte("k")); c.Today != want[last] {
		t.Errorf("reopened on today+%d: %+v, want today %d", last, c, want[last])
	}
}
