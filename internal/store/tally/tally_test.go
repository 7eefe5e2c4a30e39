package tally

import (
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"visitors/internal/store"
	"visitors/internal/store/storetest"
)

func TestAddCountsDaysAndTotal(t *testing.T) {
	var tl Tally
	d := store.DayOf(storetest.Anchor())
	tests := []struct {
		day        store.Day
		want       Visit
		wantHeld   int
		wantOnPrev uint64
	}{
		{d, Visit{store.Counts{Total: 1, Today: 1}, d, true}, 0, 0},
		{d, Visit{store.Counts{Total: 2, Today: 2}, d, false}, 0, 0},
		{d - 1, Visit{store.Counts{Total: 3, Today: 3}, d, false}, 0, 0}, // a late visit counts today
		{d + 1, Visit{store.Counts{Total: 4, Today: 1}, d + 1, true}, 1, 3},
		{d + 3, Visit{store.Counts{Total: 5, Today: 1}, d + 3, true}, 2, 0},
	}
	for i, tt := range tests {
		got := tl.Add(tt.day)
		if got != tt.want {
			t.Errorf("visit %d: Add(%d) = %+v, want %+v", i, tt.day, got, tt.want)
		}
		if h := tl.Held(); h != tt.wantHeld {
			t.Errorf("visit %d: Held() = %d, want %d", i, h, tt.wantHeld)
		}
		if n := tl.On(tt.day - 1); tt.day > d && n != tt.wantOnPrev {
			t.Errorf("visit %d: On(%d) = %d, want %d", i, tt.day-1, n, tt.wantOnPrev)
		}
	}
	if got := tl.Counts(d + 3); got != (store.Counts{Total: 5, Today: 1}) {
		t.Errorf("Counts(today) = %+v", got)
	}
	if got := tl.Counts(d + 4); got != (store.Counts{Total: 5, Today: 0}) {
		t.Errorf("Counts(tomorrow) = %+v, want today 0", got)
	}
	if got := tl.On(d); got != 3 {
		t.Errorf("On(first day) = %d, want 3", got)
	}
}

func TestSubTakesBackOneVisit(t *testing.T) {
	var tl Tally
	const d = store.Day(100)
	tl.Add(d)
	tl.Add(d)
	v := tl.Add(d)
	tl.Sub(v.Day)
	if got := tl.Counts(d); got != (store.Counts{Total: 2, Today: 2}) {
		t.Errorf("after Sub, Counts = %+v, want 2 and 2", got)
	}
	// A visit counted yesterday, taken back after midnight.
	tl.Add(d + 1)
	tl.Sub(d)
	if got, on := tl.Counts(d+1), tl.On(d); got != (store.Counts{Total: 2, Today: 1}) || on != 1 {
		t.Errorf("after taking back yesterday's visit, Counts = %+v, yesterday %d; want total 2, today 1, yesterday 1", got, on)
	}
}

func TestSnapshotAppendsSortedAndForget(t *testing.T) {
	var tl Tally
	for _, d := range []store.Day{5, 9, 7, 7, 12} {
		tl.Add(d)
	}
	// Days 5 and 9 are held (7 counted towards 9, the later day).
	other := []DayCount{{Day: 99, Count: 1}, {Day: 1, Count: 2}} // another key's, left as they are
	total, latest, past := tl.Snapshot(other)
	if total != 5 || latest != (DayCount{12, 1}) {
		t.Errorf("Snapshot = %d, %+v; want 5, {12 1}", total, latest)
	}
	if got := fmt.Sprint(past); got != "[{99 1} {1 2} {5 1} {9 3}]" {
		t.Errorf("Snapshot appended %s, want the other key's days untouched, then 5 and 9 in order", got)
	}
	tl.Forget([]DayCount{{5, 1}, {9, 2}}) // 9 changed since: kept
	if tl.Held() != 1 || tl.On(9) != 3 || tl.On(5) != 0 {
		t.Errorf("after Forget: held %d, day 9 %d, day 5 %d; want 1, 3, 0", tl.Held(), tl.On(9), tl.On(5))
	}
	tl.Prune(10)
	if tl.Held() != 0 {
		t.Errorf("after Prune(10) held %d, want 0", tl.Held())
	}
}

func TestTallyCountsExactlyUnderConcurrency(t *testing.T) {
	var tl Tally
	const goroutines, per = 16, 1000
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Go(func() {
			for i := range per {
				tl.Add(store.Day(10 + (g*per+i)/4000)) // days advance while counting
			}
		})
	}
	wg.Wait()
	total, latest, past := tl.Snapshot(nil)
	sum := latest.Count
	for _, dc := range past {
		sum += dc.Count
	}
	if total != goroutines*per || sum != total {
		t.Errorf("total %d, days sum %d; want both %d", total, sum, goroutines*per)
	}
}

func TestRestore(t *testing.T) {
	var tl Tally
	tl.Restore(40, 7, 3)
	if got := tl.Add(7); got.Counts != (store.Counts{Total: 41, Today: 4}) {
		t.Errorf("Add after Restore = %+v, want 41, 4", got.Counts)
	}
	if got := tl.Add(8); got.Counts != (store.Counts{Total: 42, Today: 1}) || tl.On(7) != 4 {
		t.Errorf("next day = %+v, day 7 = %d; want 42, 1 and 4", got.Counts, tl.On(7))
	}
}

// TestAddAtTheBounds: a tally whose total is at MaxTotal, or whose
// latest day is at MaxDay, counts nothing, even for a visit stamped the
// day before; the next day still counts.
func TestAddAtTheBounds(t *testing.T) {
	var full Tally
	full.Restore(store.MaxTotal, 7, 3)
	if got := full.Add(7); got.Counts != (store.Counts{Total: store.MaxTotal, Today: 3, Saturated: true}) || full.Total() != store.MaxTotal {
		t.Errorf("Add at MaxTotal = %+v, total %d; want saturated, nothing counted", got.Counts, full.Total())
	}
	const total = store.MaxDay + 5
	for _, d := range []store.Day{7, 6} {
		var day Tally
		day.Restore(total, 7, store.MaxDay)
		if got := day.Add(d); got.Counts != (store.Counts{Total: total, Today: store.MaxDay, Saturated: true}) || got.Day != 7 || day.Total() != total {
			t.Errorf("Add(%d) with day 7 at MaxDay = %+v, total %d; want saturated, nothing counted", d, got, day.Total())
		}
		if got := day.Add(8); got.Counts != (store.Counts{Total: total + 1, Today: 1}) || !got.Rolled || got.Day != 8 || day.On(7) != store.MaxDay {
			t.Errorf("Add(8) after day 7 at MaxDay = %+v, day 7 = %d; want counted on day 8, total %d, 1", got, day.On(7), uint64(total+1))
		}
	}
}

// TestFullDayNeverMovesTheTotal: visits to a day at its bound do not
// take the total up and back, so a reader never sees it move (the
// hostile review of issue 23).
func TestFullDayNeverMovesTheTotal(t *testing.T) {
	const total = store.MaxDay + 5
	var tl Tally
	tl.Restore(total, 7, store.MaxDay)
	done := make(chan struct{})
	var wg sync.WaitGroup
	for range 2 {
		wg.Go(func() {
			for range 500_000 {
				tl.Add(7)
			}
		})
	}
	go func() { wg.Wait(); close(done) }()
	for {
		select {
		case <-done:
			return
		default:
		}
		if got := tl.Total(); got != total {
			t.Fatalf("a reader saw the total at %d while a full day was visited, want %d throughout", got, uint64(total))
		}
	}
}

// keyed is a map entry of the tests: a Tally and its key.
type keyed struct {
	Tally
	key string
}

func newKeyed(k string) *keyed { return &keyed{key: k} }

func keyedKey(e *keyed) string { return e.key }

func TestMapLimitAndPut(t *testing.T) {
	made := 0
	m := NewMap(2, func(k string) *keyed { made++; return &keyed{key: k} }, keyedKey)
	a, err := m.LoadOrNew([]byte("a"))
	if err != nil {
		t.Fatal(err)
	}
	if again, _ := m.LoadOrNew([]byte("a")); again != a || m.Len() != 1 {
		t.Errorf("LoadOrNew(a) twice gave another entry, or Len %d", m.Len())
	}
	if _, err := m.LoadOrNew([]byte("b")); err != nil {
		t.Fatal(err)
	}
	if _, err := m.LoadOrNew([]byte("c")); !errors.Is(err, store.ErrTooManyKeys) {
		t.Errorf("LoadOrNew past the limit: %v, want ErrTooManyKeys", err)
	}
	if _, err := m.LoadOrNew([]byte(strings.Repeat("k", store.MaxKeyBytes+1))); !errors.Is(err, store.ErrKeyTooLong) {
		t.Errorf("LoadOrNew of a long key: %v, want ErrKeyTooLong", err)
	}
	if m.Put([]byte("c")) == nil || m.Len() != 3 || m.Load([]byte("c")) == nil {
		t.Errorf("Put past the limit: Len %d; want the entry kept", m.Len())
	}
	if m.Put([]byte("c")) != m.Load([]byte("c")) || m.Len() != 3 {
		t.Errorf("Put of a held key made another entry")
	}
	if m.Load([]byte("zz")) != nil {
		t.Error("Load of an unknown key found an entry")
	}
	keys := map[string]bool{}
	m.Range(func(k string, _ *keyed) bool { keys[k] = true; return true })
	if len(keys) != 3 || !keys["a"] || !keys["b"] || !keys["c"] {
		t.Errorf("Range saw %v", keys)
	}
	n := 0
	m.Range(func(string, *keyed) bool { n++; return false })
	if n != 1 {
		t.Errorf("Range went on after fn returned false: %d calls", n)
	}
	unlimited := NewMap(0, newKeyed, keyedKey)
	for i := range 100 {
		if _, err := unlimited.LoadOrNew(fmt.Appendf(nil, "%d", i)); err != nil {
			t.Fatal(err)
		}
	}
	if unlimited.Len() != 100 {
		t.Errorf("a map without a limit holds %d of 100", unlimited.Len())
	}
}

func TestCalendarNeverGoesBack(t *testing.T) {
	now := storetest.At(0, "23:59")
	var mu sync.Mutex
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	set := func(t time.Time) { mu.Lock(); now = t; mu.Unlock() }
	c := NewCalendar(clock)
	defer c.Stop()
	day := store.DayOf(now)
	if c.Today() != day {
		t.Fatalf("Today() = %d, want %d", c.Today(), day)
	}
	set(now.Add(2 * time.Minute))
	c.Rollover()
	if c.Today() != day+1 {
		t.Errorf("after midnight Today() = %d, want %d", c.Today(), day+1)
	}
	set(now.Add(-time.Hour)) // the clock steps back
	c.Rollover()
	if c.Today() != day+1 {
		t.Errorf("after the clock stepped back Today() = %d, want it to stay %d", c.Today(), day+1)
	}
	if !c.Now().Equal(now) {
		t.Errorf("Now() = %v, want the clock's %v", c.Now(), now)
	}
}

func TestCalendarAdvancesAtMidnightByItself(t *testing.T) {
	// A clock 30 ms before midnight: the calendar's own timer must move it.
	start := time.Now()
	base := storetest.At(0, "23:59:59.97")
	c := NewCalendar(func() time.Time { return base.Add(time.Since(start)) })
	defer c.Stop()
	want := store.DayOf(base) + 1
	deadline := time.Now().Add(5 * time.Second)
	for c.Today() != want {
		if time.Now().After(deadline) {
			t.Fatalf("Today() = %d 5s after midnight, want %d", c.Today(), want)
		}
		time.Sleep(5 * time.Millisecond)
	}
	c.Stop()
	c.Rollover() // after Stop: no timer is set again
}

func TestSnapshotSortsManyDays(t *testing.T) {
	var tl Tally
	for _, d := range []store.Day{50, 3, 40, 7, 30, 11, 20, 15, 60} {
		tl.Restore(0, d, 1) // each day its own, held when the next begins
		tl.keepPast(d, uint64(d))
	}
	_, _, past := tl.Snapshot(nil)
	for i := 1; i < len(past); i++ {
		if past[i-1].Day >= past[i].Day {
			t.Fatalf("Snapshot days = %v, want oldest first", past)
		}
	}
	if len(past) != 9 {
		t.Errorf("Snapshot gave %d earlier days, want 9", len(past))
	}
}

func TestPruneKeepsTheOldestDayAsked(t *testing.T) {
	var tl Tally
	for _, d := range []store.Day{8, 9, 10, 11} {
		tl.keepPast(d, 1)
	}
	tl.Prune(10)
	if tl.Held() != 2 || tl.On(10) != 1 || tl.On(9) != 0 {
		t.Errorf("after Prune(10): held %d, day 10 = %d, day 9 = %d; want 2, 1, 0", tl.Held(), tl.On(10), tl.On(9))
	}
}

func TestSubOfADayNotHeldChangesNoDay(t *testing.T) {
	var tl Tally
	tl.Add(10)
	tl.Add(11)
	tl.Sub(5) // a day the tally no longer holds
	if tl.On(5) != 0 || tl.On(10) != 1 || tl.On(11) != 1 {
		t.Errorf("after Sub of a day not held: day 5 = %d, 10 = %d, 11 = %d; want 0, 1, 1", tl.On(5), tl.On(10), tl.On(11))
	}
}

func TestMapTakesTheLongestKey(t *testing.T) {
	m := NewMap(0, newKeyed, keyedKey)
	if _, err := m.LoadOrNew([]byte(strings.Repeat("k", store.MaxKeyBytes))); err != nil {
		t.Errorf("LoadOrNew of a %d-byte key: %v", store.MaxKeyBytes, err)
	}
}

// countingClock is a clock that counts its reads.
type countingClock struct {
	mu    sync.Mutex
	t     time.Time
	start time.Time
	reads int
}

func (c *countingClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.reads++
	return c.t.Add(time.Since(c.start))
}

func (c *countingClock) count() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.reads
}

// TestCalendarSleepsUntilMidnight: at noon the calendar's timer is set
// for the next midnight, not for now: it reads the clock once.
func TestCalendarSleepsUntilMidnight(t *testing.T) {
	c := &countingClock{t: storetest.At(0, "12:00"), start: time.Now()}
	cal := NewCalendar(c.now)
	defer cal.Stop()
	time.Sleep(50 * time.Millisecond)
	if n := c.count(); n != 1 {
		t.Errorf("the clock was read %d times in 50ms at noon, want once", n)
	}
}

// TestCalendarStopStopsTheTimer: stopped 20 ms before midnight, the
// calendar does not wake at midnight.
func TestCalendarStopStopsTheTimer(t *testing.T) {
	c := &countingClock{t: storetest.At(0, "23:59:59.98"), start: time.Now()}
	cal := NewCalendar(c.now)
	cal.Stop()
	time.Sleep(60 * time.Millisecond)
	if n := c.count(); n != 1 {
		t.Errorf("the clock was read %d times after Stop, want once (at the start)", n)
	}
}

// TestMapReadersWhileItGrows: readers that take no lock find every key
// made before they looked, while a writer makes thousands more (the
// table is rebuilt many times) and deletes some: under -race, and with
// each found entry's key checked.
func TestMapReadersWhileItGrows(t *testing.T) {
	m := NewMap(0, newKeyed, keyedKey)
	const old = 100
	for i := range old {
		m.Put(fmt.Appendf(nil, "old%d", i))
	}
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for range 2 {
		wg.Go(func() {
			for n := 0; ; n++ {
				select {
				case <-stop:
					return
				default:
				}
				k := fmt.Appendf(nil, "old%d", n%old)
				e := m.Load(k)
				if e == nil || e.key != string(k) {
					t.Errorf("Load(%s) = %v while the map grew", k, e)
					return
				}
			}
		})
	}
	for i := range 20_000 {
		e := m.Put(fmt.Appendf(nil, "new%d", i))
		if i%3 == 0 && !m.Delete(e.key, e) {
			t.Fatalf("Delete(%s) = false", e.key)
		}
	}
	close(stop)
	wg.Wait()
	if want := old + 20_000 - 20_000/3 - 1; m.Len() != want {
		t.Errorf("Len() = %d, want %d", m.Len(), want)
	}
	n := 0
	m.Range(func(k string, e *keyed) bool {
		if e.key != k || m.Load([]byte(k)) != e {
			t.Errorf("Range gave %q with the entry of %q", k, e.key)
		}
		n++
		return true
	})
	if n != m.Len() {
		t.Errorf("Range gave %d entries, Len() = %d", n, m.Len())
	}
}

// TestMapReserve: after Reserve(n), n new keys rebuild nothing, and the
// keys held before are still found.
func TestMapReserve(t *testing.T) {
	m := NewMap(0, newKeyed, keyedKey)
	m.Put([]byte("before"))
	m.Reserve(1000)
	tab := m.tab.Load()
	for i := range 1000 {
		m.Put(fmt.Appendf(nil, "k%d", i))
	}
	if m.tab.Load() != tab {
		t.Error("the table was rebuilt after Reserve(1000) for 1000 keys")
	}
	if e := m.Load([]byte("before")); e == nil || e.key != "before" || m.Len() != 1001 {
		t.Errorf("after Reserve: Load(before) = %v, Len %d", e, m.Len())
	}
}

// TestMapGrowsOnlyWhenThreeQuartersFull: the table uses up to 3/4 of
// its slots before it is rebuilt, and is rebuilt at most half full: 8
// slots hold 6 keys, 16 hold 12, 32 hold 24 (a table rebuilt sooner
// takes twice the memory for the same keys).
func TestMapGrowsOnlyWhenThreeQuartersFull(t *testing.T) {
	m := NewMap(0, newKeyed, keyedKey)
	for n := 1; n <= 48; n++ {
		m.Put(fmt.Appendf(nil, "k%d", n))
		want := 8
		for 4*n > 3*want {
			want *= 2
		}
		if got := len(m.tab.Load().entries); got != want {
			t.Fatalf("%d keys in a table of %d slots, want %d", n, got, want)
		}
	}
}

// TestMapRebuildDropsTombstones: a table full of entries and
// tombstones is rebuilt without the tombstones, at most half full with
// the new entry: 8 slots holding 6 places, 3 or 2 of them deleted, are
// rebuilt to 8 and 16 slots.
func TestMapRebuildDropsTombstones(t *testing.T) {
	for _, tt := range []struct{ deleted, want int }{{3, 8}, {2, 16}} {
		m := NewMap(0, newKeyed, keyedKey)
		var es []*keyed
		for i := range 6 {
			es = append(es, m.Put(fmt.Appendf(nil, "k%d", i)))
		}
		for _, e := range es[:tt.deleted] {
			if !m.Delete(e.key, e) {
				t.Fatalf("Delete(%s) = false", e.key)
			}
		}
		old := m.tab.Load()
		m.Put([]byte("new"))
		if nt := m.tab.Load(); nt == old || len(nt.entries) != tt.want || m.used != 6-tt.deleted+1 {
			t.Errorf("%d of 6 deleted, then a put: rebuilt %v to %d slots, %d used; want rebuilt to %d, %d used", tt.deleted, nt != old, len(nt.entries), m.used, tt.want, 6-tt.deleted+1)
		}
	}
}

// TestMapReserveTakesWhatItNeeds: Reserve(n) leaves a table at most half
// full with n more entries, and no larger than that needs: on an empty
// map 4 fit the 8 slots it has, 5 take 16; after it, the table is never
// more than 3/4 full.
func TestMapReserveTakesWhatItNeeds(t *testing.T) {
	for _, tt := range []struct{ n, want int }{{4, 8}, {5, 16}, {16, 32}} {
		m := NewMap(0, newKeyed, keyedKey)
		m.Reserve(tt.n)
		if got := len(m.tab.Load().entries); got != tt.want {
			t.Errorf("Reserve(%d) on an empty map: %d slots, want %d", tt.n, got, tt.want)
		}
	}
	m := NewMap(0, newKeyed, keyedKey)
	for i := range 3 {
		m.Put(fmt.Appendf(nil, "before%d", i))
	}
	m.Reserve(10)
	for i := range 60 {
		m.Put(fmt.Appendf(nil, "k%d", i))
		if n, slots := m.Len(), len(m.tab.Load().entries); 4*n > 3*slots {
			t.Fatalf("%d keys in %d slots after Reserve: more than 3/4 full", n, slots)
		}
	}
}

// TestSnapshotNeverReturnsTheLatestDayTwice (issue 9, claim 3).
// Snapshot reads the latest day, then takes the lock to read the earlier
// days. A midnight in between (a visit that rolls the tally to the next
// day, after more visits on the old one) makes it return day d both as
// latest, with the count it read first, and in past, with the final,
// larger count. boltstore's put writes past, then latest: day d goes to
// disk with the smaller count, and Forget then drops d from memory, so
// those visits are lost from the day for good (the total keeps them).
// Found by review (was TestReviewSnapshotNeverReturnsTheLatestDayTwice).
func TestSnapshotNeverReturnsTheLatestDayTwice(t *testing.T) {
	storetest.NoDate(t)
	var tl Tally
	var day atomic.Uint32
	day.Store(1000)
	var stop atomic.Bool
	var wg sync.WaitGroup
	for range 2 {
		wg.Go(func() {
			for !stop.Load() {
				tl.Add(store.Day(day.Load()))
			}
		})
	}
	wg.Go(func() {
		for !stop.Load() {
			time.Sleep(50 * time.Microsecond)
			day.Add(1)
		}
	})
	defer func() { stop.Store(true); wg.Wait() }()
	var buf []DayCount
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		_, latest, past := tl.Snapshot(buf[:0])
		for _, dc := range past {
			if dc.Day == latest.Day && dc.Count != latest.Count {
				t.Fatalf("Snapshot returned day %d as latest with %d and in past with %d: written past-then-latest, %d visits of that day are lost", dc.Day, latest.Count, dc.Count, dc.Count-latest.Count)
			}
		}
		tl.Forget(past)
		buf = past
	}
}

// TestCountsNeverShowTheDayAboveTheTotal: a reader never sees a day's
// count above the total while visits count and an owner shifts the
// counts. Counts reads the day first, as visits and a positive Shift
// take the total up before the day, and shows the day at most at the
// total (a negative Shift takes the day down first). Snapshot, which the
// embedded store writes to its file, reads the day first too: with a
// positive Shift that raised the day first (the embedded store's
// positive Add), a file could hold a day above its total. Read the other
// way, a visit between the two reads showed the day above the total on
// a counter's JSON answer.
func TestCountsNeverShowTheDayAboveTheTotal(t *testing.T) {
	const day = store.Day(10)
	counts := func(tl *Tally) store.Counts { return tl.Counts(day) }
	snapshot := func(tl *Tally) store.Counts {
		total, latest, _ := tl.Snapshot(nil)
		return store.Counts{Total: total, Today: latest.Count}
	}
	for _, tc := range []struct {
		name   string
		shifts []int64
		read   func(*Tally) store.Counts
	}{
		{"Counts", []int64{3, -3}, counts},
		{"Snapshot", []int64{3}, snapshot}, // the embedded store replaces an entry for a negative Add
	} {
		t.Run(tc.name, func(t *testing.T) {
			var tl Tally
			tl.Restore(1000, day, 1000) // a counter whose visits are all today's
			var (
				stop           atomic.Bool
				wg             sync.WaitGroup
				visits, shifts atomic.Int64
			)
			for range 2 {
				wg.Go(func() {
					for !stop.Load() {
						tl.Add(day)
						visits.Add(1)
					}
				})
			}
			wg.Go(func() {
				for i := 0; !stop.Load(); i++ {
					n := tc.shifts[i%len(tc.shifts)]
					c := tl.Shift(n, day)
					shifts.Add(n)
					if c.Today > c.Total {
						t.Errorf("Shift(%d) = %+v: the day above the total", n, c)
						return
					}
				}
			})
			for range 1_000_000 {
				if c := tc.read(&tl); c.Today > c.Total {
					stop.Store(true)
					wg.Wait()
					t.Fatalf("read %+v: the day above the total", c)
				}
			}
			stop.Store(true)
			wg.Wait()
			// Every visit and shift counted once, on both: a visit that
			// finds the day above the total takes the total up to it, so
			// a Shift that took the day up before the total counted its
			// n twice on the total.
			want := uint64(1000 + visits.Load() + shifts.Load())
			if c := tl.Counts(day); c.Total != want || tl.On(day) != want {
				t.Errorf("after %d visits and shifts of %d: %+v, day %d; want both %d", visits.Load(), shifts.Load(), c, tl.On(day), want)
			}
		})
	}
}

// TestShiftAnswersNeverShowTheDayAboveTheTotal: a Shift to 0, or of 0
// (an owner's Add of 0), racing visits answers the day at most at the
// total, as a visit does. Its total is its own, or the one atLeast
// raised, while visits after it raise the day it read (seen: total 0,
// today 1, in 5 runs of 10 of the reviewer's probe).
func TestShiftAnswersNeverShowTheDayAboveTheTotal(t *testing.T) {
	const day = store.Day(10)
	var (
		tl   Tally
		stop atomic.Bool
		wg   sync.WaitGroup
	)
	tl.Restore(1000, day, 1000)
	for range 2 {
		wg.Go(func() {
			for !stop.Load() {
				tl.Add(day)
			}
		})
	}
	defer func() { stop.Store(true); wg.Wait() }()
	for i := range 200_000 {
		n := int64(0)
		if i%2 == 0 {
			n = -store.MaxTotal
		}
		if c := tl.Shift(n, day); c.Today > c.Total {
			t.Fatalf("Shift(%d) = %+v: the day above the total", n, c)
		}
	}
}

// TestVisitAnswersNeverShowTheDayAboveTheTotal: a visit's answer (a
// counter's JSON, its badge) never shows the day's count above the
// total, on a counter whose visits are all today's. A visit takes the
// total up, then the day; another visit between its two steps counts on
// both, and the first one's day then counted it where its total did not
// (on 303b5ba: 8 runs of 10 failed, 10 of 10 under -race).
func TestVisitAnswersNeverShowTheDayAboveTheTotal(t *testing.T) {
	const day = store.Day(10)
	var (
		tl  Tally
		bad atomic.Pointer[Visit]
		wg  sync.WaitGroup
	)
	tl.Restore(0, day, 0)
	for range 4 {
		wg.Go(func() {
			for range 200_000 {
				if v := tl.Add(day); v.Today > v.Total {
					bad.CompareAndSwap(nil, &v)
					return
				}
			}
		})
	}
	wg.Wait()
	if v := bad.Load(); v != nil {
		t.Fatalf("a visit answered %+v: the day above the total", *v)
	}
	if c := tl.Counts(day); c.Today != 800_000 || c.Total != 800_000 {
		t.Errorf("after 800,000 visits: %+v", c)
	}
}

// TestVisitsRacingSubKeepTheDayAtTheTotal: visits taken back (Sub, a
// Sync write that failed) while others count leave the day at the total
// and count every visit not taken back. Sub takes the day down before
// the total: the other way, a visit between the two found the day above
// the total, took the total up to it, and the visit taken back stayed.
func TestVisitsRacingSubKeepTheDayAtTheTotal(t *testing.T) {
	const day = store.Day(10)
	var (
		tl Tally
		wg sync.WaitGroup
	)
	tl.Restore(0, day, 0)
	for range 2 {
		wg.Go(func() {
			for range 200_000 {
				tl.Add(day)
			}
		})
	}
	wg.Go(func() {
		for range 200_000 {
			tl.Add(day)
			tl.Sub(day)
		}
	})
	wg.Wait()
	if c := tl.Counts(day); c.Total != 400_000 || tl.On(day) != 400_000 {
		t.Errorf("after 400,000 visits and 200,000 taken back: %+v, day %d", c, tl.On(day))
	}
}

// TestVisitsRacingShiftsToZeroKeepTheDayAtTheTotal: negative Shifts
// that take the counts to 0 (an owner's Add of -MaxTotal) while visits
// count leave the day at the total once they stop: every visit is
// today's, and each counts before a Shift (and is taken away) or after
// it, on both. A Shift takes the day down, then the total, each clamped
// at 0; a visit that took the total up before the total's clamp and the
// day after the day's was wiped from the total and kept on the day. The
// visit, or the Shift, that then finds the day above the total takes the
// total up to it (atLeast); without that, the day stayed above the
// total for good. Only that side is checked: the total left above the
// day is another race, still open (atLeast's compare-and-swap looks at
// the total alone, and a Shift that finds it at 0 leaves it at 0; seen
// 1 run in 20, the total one above the day).
func TestVisitsRacingShiftsToZeroKeepTheDayAtTheTotal(t *testing.T) {
	const day = store.Day(10)
	var tl Tally
	tl.Restore(0, day, 0)
	// Only the visits racing the last Shift of a run can leave the day
	// above the total (each Shift takes both to 0), so the test stops
	// the visits and looks many times.
	for run := range 200 {
		var (
			stop   atomic.Bool
			visits atomic.Int64
			wg     sync.WaitGroup
		)
		for range 2 {
			wg.Go(func() {
				for !stop.Load() {
					tl.Add(day)
					visits.Add(1)
				}
			})
		}
		for i := 0; i < 20 || visits.Load() < 2000; i++ {
			if c := tl.Shift(-store.MaxTotal, day); c.Today > c.Total {
				stop.Store(true)
				wg.Wait()
				t.Fatalf("run %d: Shift %d to 0 = %+v: the day above the total", run, i, c)
			}
		}
		stop.Store(true)
		wg.Wait()
		if c := tl.Counts(day); tl.On(day) > c.Total {
			t.Fatalf("run %d: after %d visits racing Shifts to 0: %+v, day %d; want the day at most at the total", run, visits.Load(), c, tl.On(day))
		}
	}
}

// TestSameNewKeyRaceCountsOnce guards Map's count: of many visits
// racing to make the same new key, one makes it and Len is 1. (Passes;
// no other test fails if the loser of LoadOrStore does not give its
// place back, which would make the key limit bite early.)
// Found by review (was TestReviewSameNewKeyRaceCountsOnce).
func TestSameNewKeyRaceCountsOnce(t *testing.T) {
	for range 200 {
		m := NewMap(10, newKeyed, keyedKey)
		var wg sync.WaitGroup
		start := make(chan struct{})
		for range 8 {
			wg.Go(func() {
				<-start
				if _, err := m.LoadOrNew([]byte("new")); err != nil {
					t.Error(err)
				}
			})
		}
		close(start)
		wg.Wait()
		if m.Len() != 1 {
			t.Fatalf("8 visits raced to make one key: Len() = %d, want 1", m.Len())
		}
	}
}

// TestMapStoresWhatMkMakesAtOnce: mk runs under the map's lock, once
// the key is found absent, so of visits racing to make one key mk runs
// once, and every visit gets the entry it made. A store may hand the map
// an entry that is current for a while only (boltstore's newEntry): made
// outside the lock, it could be stored after that
// (TestAVisitThatMadeAnEntryDuringAReplace). mk checks that it holds
// the lock (TryLock fails), which needs no race to be seen.
func TestMapStoresWhatMkMakesAtOnce(t *testing.T) {
	var (
		calls atomic.Int32
		first atomic.Pointer[keyed]
		m     *Map[keyed]
	)
	m = NewMap(2, func(k string) *keyed {
		if m.mu.TryLock() {
			m.mu.Unlock()
			t.Errorf("mk ran outside the map's lock")
		}
		e := &keyed{key: k}
		if calls.Add(1) == 1 {
			first.Store(e)
		}
		return e
	}, keyedKey)
	got := make([]*keyed, 8)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range got {
		wg.Go(func() {
			<-start
			e, err := m.LoadOrNew([]byte("k"))
			if err != nil {
				t.Error(err)
			}
			got[i] = e
		})
	}
	close(start)
	wg.Wait()
	if n := calls.Load(); n != 1 {
		t.Errorf("mk ran %d times for one key, want once: what it made outside the lock was thrown away", n)
	}
	for i, e := range got {
		if e != first.Load() {
			t.Errorf("visit %d got an entry other than the one mk made first", i)
		}
	}
	if m.Len() != 1 {
		t.Fatalf("Len() = %d after 8 calls raced to make one key, want 1", m.Len())
	}
	if _, err := m.LoadOrNew([]byte("other")); err != nil {
		t.Errorf("the second key of a map of 2: %v, want room for it", err)
	}
}

// TestMapDeleteFreesItsPlace: Delete removes the key from the map, its
// order and its count, so a full map takes a new key again; an entry
// that is no longer the key's is left alone.
func TestMapDeleteFreesItsPlace(t *testing.T) {
	m := NewMap(2, newKeyed, keyedKey)
	a, _ := m.LoadOrNew([]byte("a"))
	if _, err := m.LoadOrNew([]byte("b")); err != nil {
		t.Fatal(err)
	}
	if _, err := m.LoadOrNew([]byte("c")); !errors.Is(err, store.ErrTooManyKeys) {
		t.Fatalf("a third key in a map of 2: %v, want ErrTooManyKeys", err)
	}
	if m.Delete("a", new(keyed)) {
		t.Error("Delete of a with another entry than a's deleted it")
	}
	if m.Len() != 2 {
		t.Errorf("Len() = %d after a refused Delete, want 2", m.Len())
	}
	if !m.Delete("a", a) {
		t.Fatal("Delete(a, a's entry) = false")
	}
	if m.Len() != 1 || m.Load([]byte("a")) != nil {
		t.Errorf("after Delete(a): Len %d, Load(a) %v; want 1, nil", m.Len(), m.Load([]byte("a")))
	}
	if keys, _ := m.List(nil, nil, 10); !slices.Equal(keys, []string{"b"}) {
		t.Errorf("List after Delete(a) = %q, want [b]", keys)
	}
	if m.Delete("a", a) {
		t.Error("a second Delete(a) reported a deletion")
	}
	if m.Len() != 1 {
		t.Errorf("Len() = %d after a second Delete, want 1", m.Len())
	}
	if _, err := m.LoadOrNew([]byte("c")); err != nil {
		t.Errorf("a new key after a delete freed a place: %v", err)
	}
}

// TestMapList: List pages through the keys in byte order: within the
// prefix, strictly after the cursor (the empty key included when there
// is no cursor, excluded when the cursor is the empty key), at most
// limit of them, and none for a limit of 0 or less; each key comes with
// its own entry.
//
// The keys are held in the four ways a map may hold them: made one by
// one (the B-tree of keys made since), all at once by Fill (the sorted
// slice), half of each, and filled with a key deleted since (which the
// slice still holds, and List must skip).
func TestMapList(t *testing.T) {
	all := []string{"", "a", "b", "b/1", "b/2", "b/3", "c"}
	put := func(m *Map[keyed], keys ...string) {
		for _, k := range keys {
			m.Put([]byte(k))
		}
	}
	fill := func(m *Map[keyed], keys ...string) {
		es := make([]keyed, len(keys))
		for i, k := range keys {
			es[i].key = k
		}
		m.Fill(es)
	}
	for _, held := range []struct {
		name string
		make func(m *Map[keyed])
	}{
		{"made one by one", func(m *Map[keyed]) { put(m, "c", "b/2", "", "a", "b/3", "b", "b/1") }}, // not in order
		{"filled", func(m *Map[keyed]) { fill(m, "", "a", "b", "c", "b/1", "b/2", "b/3") }},         // in the file's order
		{"filled, then made", func(m *Map[keyed]) { fill(m, "a", "c", "b/2"); put(m, "b/3", "", "b", "b/1") }},
		{"filled with a key deleted since", func(m *Map[keyed]) {
			fill(m, "", "a", "b", "c", "b/0", "b/1", "b/2", "b/3", "b/4")
			for _, k := range []string{"b/0", "b/4"} {
				if !m.Delete(k, m.Load([]byte(k))) {
					t.Fatalf("Delete(%q) deleted nothing", k)
				}
			}
		}},
	} {
		m := NewMap(0, newKeyed, keyedKey)
		held.make(m)
		testMapList(t, held.name, m, all)
	}
}

func testMapList(t *testing.T, held string, m *Map[keyed], all []string) {
	t.Helper()
	tests := []struct {
		name          string
		prefix, after []byte
		limit         int
		want          []string
	}{
		{"everything", nil, nil, 100, all},
		{"the first two", nil, nil, 2, all[:2]},
		{"the first one", nil, nil, 1, all[:1]},
		{"limit 0", nil, nil, 0, nil},
		{"limit -1", nil, nil, -1, nil},
		{"after the empty key", nil, []byte{}, 100, all[1:]},
		{"after b", nil, []byte("b"), 100, []string{"b/1", "b/2", "b/3", "c"}},
		{"after b, two", nil, []byte("b"), 2, []string{"b/1", "b/2"}},
		{"after a key not held", nil, []byte("b/15"), 100, []string{"b/2", "b/3", "c"}},
		{"prefix b/", []byte("b/"), nil, 100, []string{"b/1", "b/2", "b/3"}},
		{"prefix b/, after b/1", []byte("b/"), []byte("b/1"), 100, []string{"b/2", "b/3"}},
		{"prefix b/, after a key before it", []byte("b/"), []byte("a"), 100, []string{"b/1", "b/2", "b/3"}},
		{"prefix b/, after the prefix itself", []byte("b/"), []byte("b/"), 100, []string{"b/1", "b/2", "b/3"}},
		{"prefix b/, after its last key", []byte("b/"), []byte("b/3"), 100, nil},
		{"prefix b/, after a key past it", []byte("b/"), []byte("c"), 100, nil},
		{"a prefix nothing has", []byte("z"), nil, 100, nil},
	}
	for _, tt := range tests {
		keys, entries := m.List(tt.prefix, tt.after, tt.limit)
		if !slices.Equal(keys, tt.want) {
			t.Errorf("%s: %s: List(%q, %q, %d) = %q, want %q", held, tt.name, tt.prefix, tt.after, tt.limit, keys, tt.want)
			continue
		}
		for i, k := range keys {
			if entries[i] != m.Load([]byte(k)) {
				t.Errorf("%s: %s: the entry listed with %q is not its own", held, tt.name, k)
			}
		}
	}
}

// TestMapOrderAgainstAModel makes, deletes and makes again keys past
// mergeMin (so that the B-tree of keys made since is merged into the
// sorted slice, more than once, with deleted keys in it), after a Fill
// in the file's order (by length, then bytes), and checks after each
// step that paging through List gives every key held, in byte order,
// once, as a plain set of them says.
func TestMapOrderAgainstAModel(t *testing.T) {
	m := NewMap(0, newKeyed, keyedKey)
	model := map[string]bool{}
	key := func(i int) string { return strings.Repeat("k", i%5) + fmt.Sprint(i) }
	var filled []keyed
	for n := 1; n <= 5; n++ { // by length: each length a run in byte order
		for i := range 3000 {
			if k := key(i); len(k) == n+3 {
				filled = append(filled, keyed{key: k})
				model[k] = true
			}
		}
	}
	if len(filled) < 1000 {
		t.Fatalf("only %d keys filled", len(filled))
	}
	m.Fill(filled)
	check := func(step string) {
		t.Helper()
		want := slices.Sorted(maps.Keys(model))
		var got []string
		var after []byte
		for {
			keys, _ := m.List(nil, after, 333)
			got = append(got, keys...)
			if len(keys) < 333 {
				break
			}
			after = []byte(keys[len(keys)-1])
		}
		if !slices.Equal(got, want) || m.Len() != len(want) {
			t.Fatalf("%s: List pages gave %d keys (Len %d), want the %d held in order", step, len(got), m.Len(), len(want))
		}
	}
	check("filled")
	rng := rand.New(rand.NewPCG(1, 2))
	for round := range 6 {
		for range 1500 {
			k := key(rng.IntN(9000))
			if model[k] && rng.IntN(3) == 0 {
				if !m.Delete(k, m.Load([]byte(k))) {
					t.Fatalf("Delete(%q) deleted nothing", k)
				}
				delete(model, k)
				continue
			}
			m.Put([]byte(k))
			model[k] = true
		}
		check(fmt.Sprintf("round %d", round))
		// A merge leaves out the keys deleted before it: sorted holds
		// no more keys not held than were deleted from it since.
		notHeld := 0
		for _, k := range m.sorted {
			if !model[k] {
				notHeld++
			}
		}
		if notHeld > m.stale {
			t.Errorf("round %d: the sorted keys hold %d keys deleted, %d since the last merge", round, notHeld, m.stale)
		}
	}
	if len(m.sorted) <= len(filled) {
		t.Errorf("the keys made were never merged into the sorted slice (%d keys there)", len(m.sorted))
	}
}

// TestSortRuns: runs in byte order, as a file sorted by length gives
// them, come out sorted, whatever their number and lengths; so do keys
// in no order (more runs than merging suits).
func TestSortRuns(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, runs := range []int{0, 1, 2, 3, 5, 8, 64, 65, 500} {
		var keys []string
		for range runs {
			run := make([]string, rng.IntN(50))
			for i := range run {
				run[i] = fmt.Sprint(rng.IntN(1000))
			}
			slices.Sort(run)
			keys = append(keys, run...)
		}
		want := slices.Sorted(slices.Values(keys))
		sortRuns(keys)
		if !slices.Equal(keys, want) {
			t.Errorf("%d runs: sortRuns gave %q, want %q", runs, keys, want)
		}
	}
}

// TestMapOrderStaysUnderAnEighth: the B-tree of keys made since the
// last merge holds fewer than mergeMin keys, or fewer than an eighth of
// the sorted slice's, after every key made: the bound on the memory it
// costs that addOrder promises. 20,000 keys made one by one take the
// slice past 8 × mergeMin, so both bounds are met at their value. It
// catches a merge one key late on either bound, and one never done
// once the slice is large.
func TestMapOrderStaysUnderAnEighth(t *testing.T) {
	m := NewMap(0, newKeyed, keyedKey)
	merges := 0
	for i := range 20000 {
		before := m.order.Len()
		m.Put([]byte(fmt.Sprintf("k%05d", (i*7919)%20000))) // made out of order
		n := m.order.Len()
		if n < before {
			merges++
		}
		if n >= mergeMin && n >= len(m.sorted)/8 {
			t.Fatalf("after %d keys made: %d in the B-tree, %d sorted: want fewer than %d or than an eighth", i+1, n, len(m.sorted), mergeMin)
		}
	}
	if m.Len() != 20000 || merges < 9 || len(m.sorted) < 8*mergeMin+8 {
		t.Errorf("Len %d after 20000 keys made, %d merges, %d sorted: want 20000, 9 or more merges and more than %d sorted", m.Len(), merges, len(m.sorted), 8*mergeMin)
	}
}

// TestMapFillTwice: a Fill into a map that holds keys already (a second
// Fill, here with no key made between) keeps the keys it held: List
// gives both fills' keys, in order. It catches a second Fill that
// sorts only its own keys in place of the map's.
func TestMapFillTwice(t *testing.T) {
	m := NewMap(0, newKeyed, keyedKey)
	m.Fill([]keyed{{key: "b"}, {key: "d"}})
	m.Fill([]keyed{{key: "a"}, {key: "c"}, {key: "e"}})
	if keys, _ := m.List(nil, nil, 10); !slices.Equal(keys, []string{"a", "b", "c", "d", "e"}) || m.Len() != 5 {
		t.Errorf("List after two fills = %q (Len %d), want a to e", keys, m.Len())
	}
}

// TestLaterCountsOn: a day after the latest, held by Later (a store read
// it back: a clock that went back, an import of later dates), is where
// the tally counts on from when that day comes, without the total
// moving; until then it is neither in Snapshot's earlier days nor
// forgotten with them. Fails if Add starts the later day at 0 (the bug
// the embedded store's mutation run found), or if Snapshot hands the
// later day out as final, so that Forget drops it before it comes.
func TestLaterCountsOn(t *testing.T) {
	var tl Tally
	tl.Restore(7, 10, 2) // day 10: 2; day 11 (later): 5; total 7
	tl.Later(11, 5)
	if v := tl.Add(10); v.Today != 3 || v.Total != 8 {
		t.Fatalf("a visit on day 10 = %+v, want today 3, total 8", v.Counts)
	}
	_, latest, past := tl.Snapshot(nil)
	if latest != (DayCount{10, 3}) || len(past) != 0 {
		t.Fatalf("Snapshot on day 10: latest %v, earlier %v; want {10 3} and no earlier day (11 is to come)", latest, past)
	}
	tl.Forget([]DayCount{{11, 5}}) // not handed out: a Forget of it would be a bug of the owner's, but must not matter
	if v := tl.Add(11); v.Today != 6 || v.Total != 9 || !v.Rolled {
		t.Fatalf("the first visit on day 11 = %+v, want today 6 (5 held, and this one), total 9", v)
	}
	if v := tl.Add(11); v.Today != 7 {
		t.Fatalf("the second visit on day 11 = %+v, want today 7", v.Counts)
	}
	_, latest, past = tl.Snapshot(nil)
	if latest != (DayCount{11, 7}) || len(past) != 1 || past[0] != (DayCount{10, 3}) {
		t.Fatalf("Snapshot on day 11: latest %v, earlier %v; want {11 7} and [{10 3}]", latest, past)
	}
	if tl.later.Load() {
		t.Error("the later day came, and the tally still says it holds one")
	}
}

// TestLaterCountsOnThroughShift: an owner's Add (Shift) that begins a
// later day held by Later counts on from the held count, as a visit
// does: the embedded store checks and writes today's count as 5+2, so
// the tally must say 7 too. Fails if Shift starts the later day at 0:
// the flusher then wrote day 11 as 2 over the file's 7, and a restart
// that day lost the 5.
func TestLaterCountsOnThroughShift(t *testing.T) {
	var tl Tally
	tl.Restore(5, 10, 0) // day 11 (later): 5; total 5
	tl.Later(11, 5)
	if c := tl.Shift(2, 11); c.Today != 7 || c.Total != 7 {
		t.Fatalf("Shift(2) on day 11 = %+v, want today 7 (5 held, and 2), total 7", c)
	}
	if _, latest, past := tl.Snapshot(nil); latest != (DayCount{11, 7}) || len(past) != 0 {
		t.Fatalf("Snapshot on day 11: latest %v, earlier %v; want {11 7} and no earlier day", latest, past)
	}
	tl.Add(12)
	if got := tl.On(11); got != 7 {
		t.Fatalf("day 11 once over = %d, want 7", got)
	}
}

// TestLaterRolledOverWhileItBegins: the first visit of a later day (5
// held) and a visit of the next day race. Whichever wins, the two days
// sum to 7 and the later day holds at most 6. Fails if the next day's
// rollover adds the later day's count to the 5 still held (its begin
// has not yet let it go from past): 11, the 5 counted twice.
func TestLaterRolledOverWhileItBegins(t *testing.T) {
	for i := range 20000 {
		var tl Tally
		tl.Restore(5, 10, 0)
		tl.Later(11, 5)
		var wg sync.WaitGroup
		wg.Add(2)
		go func() { defer wg.Done(); tl.Add(11) }()
		go func() { defer wg.Done(); tl.Add(12) }()
		wg.Wait()
		if d11, d12 := tl.On(11), tl.On(12); d11+d12 != 7 || d11 > 6 {
			t.Fatalf("run %d: day 11 %d, day 12 %d; want a sum of 7, day 11 at most 6", i, d11, d12)
		}
	}
}

// TestMapSwapKeepsTheKeyAndItsPlace: Swap puts an entry in the place of
// the key's, so the key is never absent and its place under the limit
// is never free; an entry no longer the key's is not swapped.
func TestMapSwapKeepsTheKeyAndItsPlace(t *testing.T) {
	m := NewMap(1, func(k string) *keyed { return &keyed{key: k} }, keyedKey)
	e, err := m.LoadOrNew([]byte("k"))
	if err != nil {
		t.Fatal(err)
	}
	e2 := &keyed{key: "k"}
	if !m.Swap("k", e, e2) {
		t.Fatal("Swap of the key's entry did not swap it")
	}
	if got := m.Load([]byte("k")); got != e2 {
		t.Errorf("Load after Swap: %p, want the new entry %p", got, e2)
	}
	if m.Swap("k", e, &keyed{key: "k"}) {
		t.Errorf("Swap of an entry no longer the key's swapped it")
	}
	if _, err := m.LoadOrNew([]byte("other")); err == nil {
		t.Errorf("a second key of a map of 1 after a Swap: made, want ErrTooManyKeys")
	}
	if keys, es := m.List(nil, nil, 10); len(keys) != 1 || es[0] != e2 {
		t.Errorf("List after Swap: %v, want k and its new entry", keys)
	}
}

// TestMapSwapFindsEveryKey: Swap finds a key's entry wherever the key's
// probe put it, past the slot its hash names too. With a few hundred
// keys in the table some always sit past their own slot, taken by
// another key first; a Swap that looked for them the wrong way found an
// empty slot and reported the key's entry gone, and the store kept the
// old entry in place (its Set lost).
func TestMapSwapFindsEveryKey(t *testing.T) {
	m := NewMap(0, newKeyed, keyedKey)
	old := map[string]*keyed{}
	for i := range 500 {
		k := fmt.Sprint(i)
		e, err := m.LoadOrNew([]byte(k))
		if err != nil {
			t.Fatal(err)
		}
		old[k] = e
	}
	for k, e := range old {
		e2 := &keyed{key: k}
		if !m.Swap(k, e, e2) {
			t.Fatalf("Swap(%q) of the key's entry did not swap it", k)
		}
		if got := m.Load([]byte(k)); got != e2 {
			t.Fatalf("Load(%q) after Swap: %p, want the new entry %p", k, got, e2)
		}
	}
	if m.Len() != len(old) {
		t.Errorf("Len() = %d after the Swaps, want %d", m.Len(), len(old))
	}
}
