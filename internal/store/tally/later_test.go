package tally

import (
	"fmt"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"visitors/internal/store"
	"visitors/internal/store/storetest"
)

// laterTally is a tally as a store loads it: total, its latest day's
// count, and the later days held (tally.Later), whose counts the total
// holds already.
func laterTally(latest store.Day, count uint64, held map[store.Day]uint64) *Tally {
	total := count
	for _, n := range held {
		total += n
	}
	tl := new(Tally)
	tl.Restore(total, latest, count)
	for _, d := range slices.Sorted(maps.Keys(held)) {
		tl.Later(d, held[d])
	}
	return tl
}

// daysSum is the sum of the tally's counts of days first..last, as On
// reads them.
func daysSum(tl *Tally, first, last store.Day) uint64 {
	var sum uint64
	for d := first; d <= last; d++ {
		sum += tl.On(d)
	}
	return sum
}

// TestLaterRolloversRacing: visits of several days race on a tally that
// holds later days, as at a midnight with many requests, or a clock
// that jumps. Whatever wins, every visit and every count held is in
// exactly one day: the days sum to the total, a held day that was never
// reached keeps its count, and Snapshot gives no day after the latest.
// Fails if a rollover that ran late deletes a day that had already
// ended (its count as if held: 626aa08's roll deleted day 11's final 6
// while day 13 was still held, the race of Add(11) and Add(12)), or if
// a day that ended is added onto its held count (c4860f8's roll with no
// later day left: 5 + 6).
func TestLaterRolloversRacing(t *testing.T) {
	storetest.NoDate(t)
	cases := []struct {
		held   map[store.Day]uint64
		visits []store.Day
	}{
		{map[store.Day]uint64{11: 5, 13: 2}, []store.Day{11, 12}},
		{map[store.Day]uint64{11: 5, 13: 2}, []store.Day{11, 12, 13}},
		{map[store.Day]uint64{11: 5}, []store.Day{11, 12, 13}},
		{map[store.Day]uint64{11: 5, 12: 3}, []store.Day{11, 12, 13}},
		{map[store.Day]uint64{11: 5, 12: 3, 14: 1}, []store.Day{12, 11, 14, 13}},
	}
	for _, tc := range cases {
		t.Run(fmt.Sprint(tc.held, tc.visits), func(t *testing.T) {
			for i := range 20000 {
				tl := laterTally(10, 2, tc.held)
				start := tl.Total()
				var wg sync.WaitGroup
				var gate sync.WaitGroup
				gate.Add(1)
				got := make([]Visit, len(tc.visits))
				for j, d := range tc.visits {
					wg.Go(func() { gate.Wait(); got[j] = tl.Add(d) })
				}
				gate.Done()
				wg.Wait()
				total := tl.Total()
				if total != start+uint64(len(tc.visits)) {
					t.Fatalf("run %d: total %d, want %d", i, total, start+uint64(len(tc.visits)))
				}
				if sum := daysSum(tl, 10, 20); sum != total {
					t.Fatalf("run %d: visits %v; days 10-20 %v sum to %d, want the total %d", i, got, days(tl, 10, 20), sum, total)
				}
				_, latest, past := tl.Snapshot(nil)
				sum := latest.Count
				for _, dc := range past {
					if dc.Day >= latest.Day {
						t.Fatalf("run %d: Snapshot gave day %d, not before the latest %d", i, dc.Day, latest.Day)
					}
					sum += dc.Count
				}
				for d, n := range tc.held {
					if d > latest.Day {
						if tl.On(d) != n {
							t.Fatalf("run %d: day %d, still to come, holds %d, want %d", i, d, tl.On(d), n)
						}
						sum += n
					}
				}
				if sum != total {
					t.Fatalf("run %d: Snapshot's days and the days to come sum to %d (latest %v, earlier %v), want the total %d", i, sum, latest, past, total)
				}
			}
		})
	}
}

func days(tl *Tally, first, last store.Day) []uint64 {
	var c []uint64
	for d := first; d <= last; d++ {
		c = append(c, tl.On(d))
	}
	return c
}

// TestLaterDayOnWhileItBegins: a reader of a held day's count (a Get at
// midnight, an owner's Add reading the count it adds to) never sees less
// than the count held while the day's first visit begins it. Fails if
// On reads the day as not begun yet and then finds it let go from the
// days held: 0, not 5.
func TestLaterDayOnWhileItBegins(t *testing.T) {
	storetest.NoDate(t)
	for i := range 20000 {
		tl := laterTally(10, 2, map[store.Day]uint64{11: 5})
		var wg sync.WaitGroup
		var low atomic.Uint64
		low.Store(5)
		wg.Go(func() { tl.Add(11) })
		wg.Go(func() {
			for range 3 {
				if n := tl.On(11); n < low.Load() {
					low.Store(n)
				}
			}
		})
		wg.Wait()
		if n := low.Load(); n < 5 {
			t.Fatalf("run %d: On(11) read %d while day 11 began, want at least its 5 held", i, n)
		}
	}
}

// TestLaterDayAtItsBound: a day held at MaxDay (an import may hold that
// much) counts nothing more when it comes, as a day that reached its
// bound does: the visit is Saturated and the total does not move.
// Fails if the day's first visit counts on past the bound: MaxDay+1, a
// count an export then writes and an import refuses.
func TestLaterDayAtItsBound(t *testing.T) {
	storetest.NoDate(t)
	tl := laterTally(10, 2, map[store.Day]uint64{11: store.MaxDay})
	total := tl.Total()
	v := tl.Add(11)
	if !v.Saturated || v.Today != store.MaxDay || v.Total != total || tl.Total() != total {
		t.Errorf("the first visit of a day held at MaxDay = %+v (total now %d); want saturated, today %d, total %d", v, tl.Total(), uint64(store.MaxDay), total)
	}
	if n := tl.On(11); n != store.MaxDay {
		t.Errorf("day 11 = %d, want %d", n, uint64(store.MaxDay))
	}
	// The day began full: its visits do not take the total up and back,
	// which a reader would see go down (TestFullDayNeverMovesTheTotal).
	var adders, reader sync.WaitGroup
	var stop atomic.Bool
	var seen atomic.Uint64
	reader.Go(func() {
		for first := true; first || !stop.Load(); first = false {
			seen.Store(max(seen.Load(), tl.Total()))
		}
	})
	for range 2 {
		adders.Go(func() {
			for range 20000 {
				tl.Add(11)
			}
		})
	}
	adders.Wait()
	stop.Store(true)
	reader.Wait()
	if seen.Load() != total {
		t.Errorf("a reader saw the total at %d while visits to a full day counted nothing, want it at %d all along", seen.Load(), total)
	}
	// Visits that race to begin the full day: one begins it, the others
	// find it begun, and full.
	for i := range 2000 {
		tl := laterTally(10, 2, map[store.Day]uint64{11: store.MaxDay})
		var wg sync.WaitGroup
		var counted atomic.Int64
		for range 3 {
			wg.Go(func() {
				// (Not v.Total: one racing visit may read another's
				// total before it gives it back, as at any bound.)
				if v := tl.Add(11); !v.Saturated || v.Today != store.MaxDay || v.Day != 11 {
					counted.Add(1)
				}
			})
		}
		wg.Wait()
		if counted.Load() != 0 || tl.Total() != total || tl.On(11) != store.MaxDay || tl.On(10) != 2 {
			t.Fatalf("run %d: %d of 3 visits racing to a day held full were not answered saturated, on day 11 at %d; total %d, day 11 %d, day 10 %d; want total %d, %d, 2",
				i, counted.Load(), uint64(store.MaxDay), tl.Total(), tl.On(11), tl.On(10), total, uint64(store.MaxDay))
		}
	}
	if v := tl.Add(12); v.Saturated || v.Today != 1 || v.Total != total+1 {
		t.Errorf("the next day's visit = %+v, want counted: today 1, total %d", v, total+1)
	}
	if n := tl.On(11); n != store.MaxDay {
		t.Errorf("day 11 once over = %d, want %d", n, uint64(store.MaxDay))
	}
}

// TestLaterDayArithmetic: several days held, reached one by one, one
// skipped, a visit stamped with a day gone by, Later of a day already
// held, of the latest day and of one before it. Each held day counts on
// from its count when it comes; one skipped over is an earlier day,
// handed out once; no day after the latest is handed out or forgotten;
// and once no day is held any more, the tally says so (its rollovers go
// back to the path without a lock).
func TestLaterDayArithmetic(t *testing.T) {
	storetest.NoDate(t)
	tl := laterTally(10, 2, map[store.Day]uint64{11: 5, 12: 3, 14: 1, 16: 4})
	tl.Later(12, 7) // read again: the last count read is the day's
	tl.Later(10, 9) // the latest day: its count is the tally's, not held
	tl.Later(9, 9)  // an earlier day: not held either
	if tl.Held() != 4 {
		t.Fatalf("held %d days, want 4 (11, 12, 14, 16)", tl.Held())
	}
	step := func(d store.Day, wantToday uint64, wantPast string) {
		t.Helper()
		v := tl.Add(d)
		if v.Today != wantToday {
			t.Fatalf("Add(%d) = %+v, want today %d", d, v, wantToday)
		}
		_, latest, past := tl.Snapshot(nil)
		if got := fmt.Sprint(past); got != wantPast || latest != (DayCount{v.Day, wantToday}) {
			t.Fatalf("after Add(%d): Snapshot latest %v, earlier %s; want %v, %s", d, latest, got, DayCount{v.Day, wantToday}, wantPast)
		}
		tl.Forget(append(past, DayCount{16, 4}, DayCount{14, 1})) // the days to come are not forgotten
	}
	step(10, 3, "[]")
	step(11, 6, "[{10 3}]")
	step(10, 7, "[]") // a visit stamped yesterday counts today
	step(12, 8, "[{11 7}]")
	if tl.On(14) != 1 || tl.On(16) != 4 {
		t.Fatalf("days 14 and 16 = %d, %d; want 1, 4 held", tl.On(14), tl.On(16))
	}
	step(15, 1, "[{12 8} {14 1}]") // 14 skipped: an earlier day now, its count the one held
	if !tl.later.Load() {
		t.Fatal("day 16 is still to come, and the tally says it holds none")
	}
	if c := tl.Shift(3, 16); c.Today != 7 {
		t.Fatalf("Shift(3) on day 16 = %+v, want today 7 (4 held, and 3)", c)
	}
	if tl.later.Load() {
		t.Error("every day held came or went by, and the tally still says it holds one")
	}
	step(17, 1, "[{15 1} {16 7}]")
	if tl.Held() != 0 {
		t.Errorf("held %d days once every one was forgotten, want 0", tl.Held())
	}
}

// TestLaterJumpedOverFromAnEmptyDay: a tally whose latest day has no
// visit (a key restored before its first visit of the day) and whose
// clock jumps over its day held: the day held is an earlier day, handed
// out once, and the tally holds no day to come. Fails if the rollover
// from an empty day leaves the tally saying it holds a later day.
func TestLaterJumpedOverFromAnEmptyDay(t *testing.T) {
	storetest.NoDate(t)
	tl := laterTally(10, 0, map[store.Day]uint64{11: 5})
	if v := tl.Add(13); v.Today != 1 || v.Total != 6 {
		t.Fatalf("Add(13) = %+v, want today 1, total 6", v)
	}
	_, latest, past := tl.Snapshot(nil)
	if fmt.Sprint(past) != "[{11 5}]" || latest != (DayCount{13, 1}) {
		t.Fatalf("Snapshot: latest %v, earlier %v; want {13 1}, [{11 5}]", latest, past)
	}
	tl.Forget(past)
	if tl.later.Load() || tl.Held() != 0 {
		t.Errorf("after the jump: later %v, held %d; want no day held", tl.later.Load(), tl.Held())
	}
}

// TestLaterNegativeShiftDropsTheDaysHeld: a negative Shift drops every
// day the tally holds, later ones too (the store drops the key's day
// records with it), and its rollovers no longer look for a day held.
func TestLaterNegativeShiftDropsTheDaysHeld(t *testing.T) {
	storetest.NoDate(t)
	tl := laterTally(10, 2, map[store.Day]uint64{11: 5})
	if c := tl.Shift(-1, 10); c.Today != 1 || c.Total != 6 || tl.later.Load() || tl.Held() != 0 {
		t.Fatalf("Shift(-1) = %+v (later %v, held %d), want today 1, total 6, no day held", c, tl.later.Load(), tl.Held())
	}
	if v := tl.Add(11); v.Today != 1 {
		t.Errorf("after a negative Shift, day 11's first visit = %+v, want today 1", v)
	}
}

// TestLaterFlushedAcrossMidnights models the embedded store's flusher:
// visits from several goroutines across midnights, with days held, while
// a flusher writes each Snapshot to a file (the latest day and the
// earlier ones) and forgets the earlier ones. At the end the file holds,
// for each day, the count held plus the visits counted on it, and no
// earlier day was handed out twice or before it ended. Fails if a day
// held is lost, written before it comes, or counted twice.
func TestLaterFlushedAcrossMidnights(t *testing.T) {
	storetest.NoDate(t)
	held := map[store.Day]uint64{11: 5, 12: 3, 14: 1, 16: 4}
	for run := range 200 {
		tl := laterTally(10, 2, held)
		file := map[store.Day]uint64{10: 2}
		maps.Copy(file, held)
		var day atomic.Uint32
		day.Store(10)
		var stop atomic.Bool
		var wg sync.WaitGroup
		counted := make([]map[store.Day]uint64, 4)
		for g := range counted {
			counted[g] = map[store.Day]uint64{}
			wg.Go(func() {
				for i := 0; !stop.Load() || i < 50; i++ {
					v := tl.Add(store.Day(day.Load()))
					counted[g][v.Day]++
				}
			})
		}
		handed := map[store.Day]int{}
		flush := func() error {
			_, latest, past := tl.Snapshot(nil)
			for _, dc := range past {
				if dc.Day >= latest.Day {
					return fmt.Errorf("day %d handed out as earlier than the latest, %d", dc.Day, latest.Day)
				}
				if handed[dc.Day]++; handed[dc.Day] > 1 {
					return fmt.Errorf("day %d handed out twice", dc.Day)
				}
				file[dc.Day] = dc.Count
			}
			if latest.Count > 0 {
				file[latest.Day] = latest.Count
			}
			tl.Forget(past)
			return nil
		}
		var err error
		for d := store.Day(10); d <= 18 && err == nil; d++ {
			if d == 14 {
				d++ // the clock jumps from 13 to 15: day 14, held, is skipped over
			}
			day.Store(uint32(d))
			for range 3 {
				if err = flush(); err != nil {
					break
				}
			}
		}
		stop.Store(true)
		wg.Wait()
		for range 2 {
			if err == nil {
				err = flush()
			}
		}
		if err != nil {
			t.Fatalf("run %d: %v", run, err)
		}
		want := map[store.Day]uint64{10: 2}
		maps.Copy(want, held)
		for _, c := range counted {
			for d, n := range c {
				want[d] += n
			}
		}
		for d := store.Day(10); d <= 18; d++ {
			if file[d] != want[d] {
				t.Fatalf("run %d: the file's day %d = %d, want %d (held %d, and the visits counted on it); the file: %v", run, d, file[d], want[d], held[d], file)
			}
		}
	}
}

// TestLaterBeginFindsTheDayBegun: a visit that saw the day not yet
// begun and reaches begin after another visit began it counts on in that
// day, as Add's own loop does, and keeps no day: the race is narrow, so
// the test calls begin as such a visit would, its total counted. Fails
// if begin rolls the day over again (day 11 kept as an earlier day as
// well as the latest: counted twice once the next day comes), or counts
// a visit on a full day.
func TestLaterBeginFindsTheDayBegun(t *testing.T) {
	storetest.NoDate(t)
	tl := laterTally(10, 2, map[store.Day]uint64{11: 5})
	tl.Add(11) // 6
	total := tl.total.Add(1)
	if v := tl.begin(11, total); v != (Visit{Counts: store.Counts{Total: total, Today: 7}, Day: 11}) {
		t.Errorf("begin(11) of a day begun = %+v, want today 7, total %d, not rolled", v, total)
	}
	tl.Add(12)
	if _, latest, past := tl.Snapshot(nil); fmt.Sprint(past) != "[{10 2} {11 7}]" || latest != (DayCount{12, 1}) {
		t.Errorf("Snapshot on day 12: latest %v, earlier %v; want {12 1}, [{10 2} {11 7}]", latest, past)
	}

	full := laterTally(10, 2, map[store.Day]uint64{11: store.MaxDay, 13: 1})
	full.Add(11) // begins it full
	total = full.total.Add(1)
	if v := full.begin(11, total); !v.Saturated || v.Today != store.MaxDay || v.Day != 11 || v.Total != total-1 || full.Total() != total-1 {
		t.Errorf("begin(11) of a day begun full = %+v, total now %d; want saturated at %d, total %d given back", v, full.Total(), uint64(store.MaxDay), total-1)
	}
}

// TestLaterDayOfAFullTotal: a tally whose total is at its bound answers
// a visit of a day it holds with that day's count held, not 0.
func TestLaterDayOfAFullTotal(t *testing.T) {
	storetest.NoDate(t)
	var tl Tally
	tl.Restore(store.MaxTotal, 10, 2)
	tl.Later(11, 5)
	if v := tl.Add(11); !v.Saturated || v.Today != 5 || v.Day != 11 || v.Total != store.MaxTotal {
		t.Errorf("a visit on day 11 (5 held) at MaxTotal = %+v, want saturated, today 5, total %d", v, uint64(store.MaxTotal))
	}
}

// TestShiftBeginsADay: an owner's Add on a day the tally has not begun
// begins it, keeping the day that ended, as a visit would; on the day
// begun it keeps no day, and an Add of 0 (the embedded store's owner
// Add shifts by n >= 0) drops none of the days held, earlier or later.
// Fails if Shift rolls the latest day over onto itself (it is then an
// earlier day too: written twice, the second time with a stale count),
// or if a Shift of 0 drops the days held as a negative one does.
func TestShiftBeginsADay(t *testing.T) {
	storetest.NoDate(t)
	var tl Tally
	tl.Restore(5, 10, 2)
	if c := tl.Shift(3, 11); c.Today != 3 || c.Total != 8 {
		t.Errorf("Shift(3) on day 11 = %+v, want today 3, total 8", c)
	}
	if c := tl.Shift(1, 11); c.Today != 4 || c.Total != 9 {
		t.Errorf("Shift(1) on day 11 begun = %+v, want today 4, total 9", c)
	}
	if _, latest, past := tl.Snapshot(nil); fmt.Sprint(past) != "[{10 2}]" || latest != (DayCount{11, 4}) {
		t.Errorf("Snapshot: latest %v, earlier %v; want {11 4}, [{10 2}]", latest, past)
	}

	held := laterTally(10, 2, map[store.Day]uint64{11: 5, 12: 3})
	held.Add(11)
	if c := held.Shift(0, 11); c.Today != 6 || held.On(10) != 2 || !held.later.Load() {
		t.Fatalf("Shift(0) on day 11 = %+v, day 10 %d, later %v; want today 6, day 10 kept, day 12 still held", c, held.On(10), held.later.Load())
	}
	if v := held.Add(12); v.Today != 4 {
		t.Errorf("day 12's first visit after a Shift(0) = %+v, want today 4 (3 held)", v)
	}
}

// TestAddOnTheLatestDayTakesNoLockNorAllocates: the hot path, a visit
// on the tally's latest day, with no later day held and with one, runs
// while t.mu is held by another (it takes no lock) and allocates
// nothing. Fails if a visit takes t.mu (it then waits for ever here:
// bounded at 10 s) or allocates.
func TestAddOnTheLatestDayTakesNoLockNorAllocates(t *testing.T) {
	storetest.NoDate(t)
	for _, held := range []map[store.Day]uint64{nil, {11: 5}} {
		tl := laterTally(10, 2, held)
		tl.mu.Lock()
		done := make(chan struct{})
		go func() {
			defer close(done)
			tl.Add(10)
			tl.Add(9) // stamped the day before: counts on day 10
		}()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Fatalf("held %v: a visit on the latest day waited 10 s for t.mu", held)
		}
		tl.mu.Unlock()
		if n := testing.AllocsPerRun(100, func() { tl.Add(10) }); n != 0 {
			t.Errorf("held %v: a visit on the latest day allocates %v times, want 0", held, n)
		}
		if tl.On(10) != 105 { // 2, 2 above, and AllocsPerRun's 100 and its warm-up
			t.Errorf("held %v: day 10 = %d, want 105", held, tl.On(10))
		}
	}
}
