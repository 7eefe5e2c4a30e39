package boltstore

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"visitors/internal/store"
	"visitors/internal/store/storetest"
)

// dumpKeyDays is a dump of one key with counts by offset from today.
func dumpKeyDays(key string, today store.Day, days map[int]uint64, locked bool) string {
	var total uint64
	var ds []string
	for off, n := range days {
		ds = append(ds, `"`+(today+store.Day(off)).Time().Format(time.DateOnly)+`":`+strconv.FormatUint(n, 10))
		total += n
	}
	lk := ""
	if locked {
		lk = `,"locked":true`
	}
	return `{"format":"visitors-export-1","hits":0,"keys":[{"key":"` + key + `","total":` +
		strconv.FormatUint(total, 10) + `,"days":{` + strings.Join(ds, ",") + `}` + lk + `}]}`
}

// TestImportLaterTwoOnlineImports: the later day of a key comes
// from an online import in this run (s.ahead set by applyImport, not
// the load), and a second online import merges into the key; the store
// runs on to the later day.
func TestImportLaterTwoOnlineImports(t *testing.T) {
	tests := []struct {
		name   string
		first  map[int]uint64
		second map[int]uint64
		want   map[int]uint64
	}{
		{"second without later days", map[int]uint64{2: 5}, map[int]uint64{0: 2}, map[int]uint64{2: 6}},
		{"second with an earlier later day", map[int]uint64{2: 5}, map[int]uint64{1: 3}, map[int]uint64{1: 4, 2: 6}},
		{"second on the same later day", map[int]uint64{2: 5}, map[int]uint64{2: 2}, map[int]uint64{2: 8}},
		{"second with a later day beyond", map[int]uint64{1: 5}, map[int]uint64{2: 2}, map[int]uint64{1: 6, 2: 3}},
	}
	for _, tt := range tests {
		for _, d := range []store.Durability{store.Batch, store.Sync} {
			t.Run(tt.name+"/"+d.String(), func(t *testing.T) {
				dir := t.TempDir()
				clock := storetest.NewClock(storetest.At(0, "12:00"))
				today := store.DayOf(clock.Now())
				o := Options{Dir: dir, Now: clock.Now, Durability: d}
				s := mustOpen(t, o)
				if err := s.Import(ctx, strings.NewReader(dumpKeyDays("k", today, tt.first, false)), false); err != nil {
					t.Fatal(err)
				}
				mustIncr(t, s, []byte("k")) // a pass between the imports
				if err := s.Import(ctx, strings.NewReader(dumpKeyDays("k", today, tt.second, false)), false); err != nil {
					t.Fatal(err)
				}
				visitLaterDays(t, s, clock, o, tt.want)
			})
		}
	}
}

// TestImportLaterLockedKey: a locked key with a later day takes a
// merge import; unlocked on the later day, a visit counts on from it.
func TestImportLaterLockedKey(t *testing.T) {
	dir := t.TempDir()
	clock := storetest.NewClock(storetest.At(0, "12:00"))
	today := store.DayOf(clock.Now())
	o := Options{Dir: dir, Now: clock.Now}
	s := mustOpen(t, o)
	if err := s.Import(ctx, strings.NewReader(dumpKeyDays("k", today, map[int]uint64{1: 5}, true)), false); err != nil {
		t.Fatal(err)
	}
	if err := s.Import(ctx, strings.NewReader(dumpKeyDays("k", today, map[int]uint64{0: 1}, false)), false); err != nil {
		t.Fatal(err)
	}
	clock.Add(24 * time.Hour)
	s.Rollover()
	if _, err := s.Lock(ctx, []byte("k"), false); err != nil {
		t.Fatal(err)
	}
	if c := mustIncr(t, s, []byte("k")); c.Today != 6 || c.Total != 7 {
		t.Errorf("visit on the later day = %+v, want today 6 total 7", c)
	}
	s = reopen(t, s, o)
	defer mustClose(t, s)
	if c := mustGet(t, s, []byte("k")); c.Today != 6 || c.Total != 7 {
		t.Errorf("reopened: %+v, want today 6 total 7", c)
	}
}

// TestImportLaterReplaceRetires: a key with a later day from an
// online import is retired by a replace whose dump lacks it; the key
// visited again on that day starts from 0, in memory and after a restart.
func TestImportLaterReplaceRetires(t *testing.T) {
	for _, d := range []store.Durability{store.Batch, store.Sync} {
		t.Run(d.String(), func(t *testing.T) {
			dir := t.TempDir()
			clock := storetest.NewClock(storetest.At(0, "12:00"))
			today := store.DayOf(clock.Now())
			o := Options{Dir: dir, Now: clock.Now, Durability: d}
			s := mustOpen(t, o)
			if err := s.Import(ctx, strings.NewReader(dumpKeyDays("k", today, map[int]uint64{1: 5}, false)), false); err != nil {
				t.Fatal(err)
			}
			mustIncr(t, s, []byte("k"))
			if err := s.Import(ctx, strings.NewReader(dumpKeyDays("other", today, map[int]uint64{1: 3}, false)), true); err != nil {
				t.Fatal(err)
			}
			clock.Add(24 * time.Hour)
			s.Rollover()
			if c := mustIncr(t, s, []byte("k")); c.Today != 1 || c.Total != 1 {
				t.Errorf("retired key on its old later day = %+v, want 1/1", c)
			}
			if c := mustIncr(t, s, []byte("other")); c.Today != 4 || c.Total != 4 {
				t.Errorf("other = %+v, want today 4 total 4", c)
			}
			s = reopen(t, s, o)
			defer mustClose(t, s)
			if c := mustGet(t, s, []byte("k")); c.Today != 1 || c.Total != 1 {
				t.Errorf("reopened k: %+v, want 1/1", c)
			}
			if c := mustGet(t, s, []byte("other")); c.Today != 4 || c.Total != 4 {
				t.Errorf("reopened other: %+v, want 4/4", c)
			}
		})
	}
}

// TestImportLaterSyncCrash: in Sync, visits go to the log; the
// store crashes (no flush) after the import and before the later day.
func TestImportLaterSyncCrash(t *testing.T) {
	for _, held := range []bool{false, true} {
		t.Run("held="+strconv.FormatBool(held), func(t *testing.T) {
			dir := t.TempDir()
			clock := storetest.NewClock(storetest.At(0, "12:00"))
			today := store.DayOf(clock.Now())
			o := Options{Dir: dir, Now: clock.Now, Durability: store.Sync}
			s := mustOpen(t, o)
			if held {
				if err := s.Import(ctx, strings.NewReader(dumpKeyDays("k", today, map[int]uint64{2: 5}, false)), false); err != nil {
					t.Fatal(err)
				}
				mustIncr(t, s, []byte("k"))
			}
			if err := s.Import(ctx, strings.NewReader(dumpKeyDays("k", today, map[int]uint64{0: 1, 1: 3}, false)), false); err != nil {
				t.Fatal(err)
			}
			mustIncrN(t, s, "k", 2)
			crashed := crashCopy(t, s)
			mustClose(t, s)
			co := Options{Dir: crashed, Now: clock.Now, Durability: store.Sync}
			c := mustOpen(t, co)
			base := uint64(1 + 3 + 2)
			if held {
				base += 5 + 1
			}
			if got := mustGet(t, c, []byte("k")); got.Total != base {
				t.Errorf("after the crash: %+v, want total %d", got, base)
			}
			clock.Add(24 * time.Hour)
			c.Rollover()
			if got := mustIncr(t, c, []byte("k")); got.Today != 4 {
				t.Errorf("today+1: %+v, want 4", got)
			}
			clock.Add(24 * time.Hour)
			c.Rollover()
			want := uint64(1)
			if held {
				want = 6
			}
			if got := mustIncr(t, c, []byte("k")); got.Today != want || got.Total != base+2 {
				t.Errorf("today+2: %+v, want today %d total %d", got, want, base+2)
			}
			c = reopen(t, c, co)
			defer mustClose(t, c)
			if got := mustGet(t, c, []byte("k")); got.Today != want || got.Total != base+2 {
				t.Errorf("reopened: %+v, want today %d total %d", got, want, base+2)
			}
		})
	}
}

// TestOnlineImportAcrossMidnight: an online import whose dump was read on
// day D is queued behind a pass the flusher is in; midnight comes before
// the flusher runs it. The dump's D count is D's, and its D+1 count
// (the new today) is the key's count on D+1: a visit then reads 5+1.
func TestOnlineImportAcrossMidnight(t *testing.T) {
	dir := t.TempDir()
	clock := storetest.NewClock(storetest.At(0, "23:00"))
	today := store.DayOf(clock.Now())
	o := Options{Dir: dir, Now: clock.Now}
	s := mustOpen(t, o)
	waitChecked(t, s)
	entered, release := make(chan struct{}), make(chan struct{})
	fault := func(key string) error {
		if key == "blocker" {
			close(entered)
			<-release
		}
		return nil
	}
	mustIncr(t, s, []byte("blocker"))
	setHooks(s, func(h *hooks) { h.putFault = fault })
	go s.Flush()
	<-entered // the flusher is in a pass
	setHooks(s, func(h *hooks) { h.putFault = nil })
	done := make(chan error, 1)
	go func() {
		done <- s.Import(ctx, strings.NewReader(dumpKeyDays("k", today, map[int]uint64{0: 2, 1: 5}, false)), false)
	}()
	for !s.opsPending.Load() { // the import read the dump, and its day, and waits for the flusher
		time.Sleep(time.Millisecond)
	}
	clock.Add(2 * time.Hour) // 01:00 on D+1
	s.Rollover()
	close(release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if c := mustIncr(t, s, []byte("k")); c.Today != 6 || c.Total != 8 {
		t.Errorf("a visit on D+1 after the import = %+v, want today 6 (the dump's 5 and it), total 8", c)
	}
	s = reopen(t, s, o)
	defer mustClose(t, s)
	if c, d := mustGet(t, s, []byte("k")), mustDays(t, s, []byte("k"), 2); c.Today != 6 || c.Total != 8 || d.Counts[0] != 2 || d.Counts[1] != 6 {
		t.Errorf("reopened: %+v, days %v; want today 6, total 8, days [2 6]", c, d.Counts)
	}
}

// TestOnlineImportMidnightDuringItsTransaction: midnight comes while an
// online merge import's transaction runs, and batch visits count on the
// key's old entry on the new day meanwhile. The import's counts are the
// day that ended's; the visits on the new day stay the new day's, on
// from the dump's count of it: 5 from the dump, 2 meanwhile, 1 after.
func TestOnlineImportMidnightDuringItsTransaction(t *testing.T) {
	for _, held := range []uint64{0, 4} { // the key's count of D+1 in the file before the import
		t.Run("held="+strconv.FormatUint(held, 10), func(t *testing.T) {
			dir := t.TempDir()
			clock := storetest.NewClock(storetest.At(0, "23:00"))
			today := store.DayOf(clock.Now())
			o := Options{Dir: dir, Now: clock.Now}
			s := mustOpen(t, o)
			waitChecked(t, s)
			if held > 0 {
				if err := s.Import(ctx, strings.NewReader(dumpKeyDays("k", today, map[int]uint64{1: held}, false)), false); err != nil {
					t.Fatal(err)
				}
			}
			mustIncr(t, s, []byte("k")) // 1 on D, written by the pass before the import
			run := func() {
				clock.Add(2 * time.Hour) // 01:00 on D+1
				s.Rollover()
				mustIncrN(t, s, "k", 2) // on the old entry, batch: counted in memory
			}
			setHooks(s, func(h *hooks) { h.importRun = run })
			if err := s.Import(ctx, strings.NewReader(dumpKeyDays("k", today, map[int]uint64{0: 2, 1: 5}, false)), false); err != nil {
				t.Fatal(err)
			}
			setHooks(s, func(h *hooks) { h.importRun = nil })
			wantDay, wantTotal := held+5+2+1, held+1+7+2+1
			if c := mustIncr(t, s, []byte("k")); c.Today != wantDay || c.Total != wantTotal {
				t.Errorf("a visit on D+1 after the import = %+v, want today %d, total %d", c, wantDay, wantTotal)
			}
			s = reopen(t, s, o)
			defer mustClose(t, s)
			if c, d := mustGet(t, s, []byte("k")), mustDays(t, s, []byte("k"), 2); c.Today != wantDay || c.Total != wantTotal || d.Counts[0] != 3 || d.Counts[1] != wantDay {
				t.Errorf("reopened: %+v, days %v; want today %d, total %d, days [3 %d]", c, d.Counts, wantDay, wantTotal, wantDay)
			}
		})
	}
}

// TestImportLaterDaysAreTheKeysOwn: the days after today an online
// import reads back for a key are that key's alone, not those of the
// key after it in the file, which has the same length ("l" after "k"):
// the neighbour's days, today's or later, leave the key's counts on its
// later day as the dump says, and the neighbour's as its own.
func TestImportLaterDaysAreTheKeysOwn(t *testing.T) {
	for _, later := range []bool{false, true} {
		for _, d := range []store.Durability{store.Batch, store.Sync} {
			t.Run(fmt.Sprintf("neighbour-later=%v/%s", later, d), func(t *testing.T) {
				dir := t.TempDir()
				clock := storetest.NewClock(storetest.At(0, "12:00"))
				today := store.DayOf(clock.Now())
				o := Options{Dir: dir, Now: clock.Now, Durability: d}
				s := mustOpen(t, o)
				mustIncrN(t, s, "l", 3)
				lToday, lLater := uint64(3), uint64(1)
				if later {
					if err := s.Import(ctx, strings.NewReader(dumpKeyDays("l", today, map[int]uint64{1: 7}, false)), false); err != nil {
						t.Fatal(err)
					}
					lLater += 7
				}
				if err := s.Flush(); err != nil { // the neighbour's days are in the file
					t.Fatal(err)
				}
				if err := s.Import(ctx, strings.NewReader(dumpKeyDays("k", today, map[int]uint64{0: 2, 1: 5}, false)), false); err != nil {
					t.Fatal(err)
				}
				if c := mustGet(t, s, []byte("k")); c.Today != 2 || c.Total != 7 {
					t.Errorf("k after the import = %+v, want today 2, total 7", c)
				}
				clock.Add(24 * time.Hour)
				s.Rollover()
				if c := mustIncr(t, s, []byte("k")); c.Today != 6 || c.Total != 8 {
					t.Errorf("k on its later day = %+v, want today 6 (5 imported, 1 visit), total 8", c)
				}
				if c := mustIncr(t, s, []byte("l")); c.Today != lLater || c.Total != lToday+lLater {
					t.Errorf("l on the later day = %+v, want today %d, total %d", c, lLater, lToday+lLater)
				}
				s = reopen(t, s, o)
				defer mustClose(t, s)
				if c := mustGet(t, s, []byte("k")); c.Today != 6 || c.Total != 8 {
					t.Errorf("reopened: k = %+v, want today 6, total 8", c)
				}
				got, err := s.Days(ctx, []byte("k"), 2)
				if err != nil || !slices.Equal(got.Counts, []uint64{2, 6}) {
					t.Errorf("reopened: Days(k, 2) = %v, %v; want [2 6]", got.Counts, err)
				}
			})
		}
	}
}
