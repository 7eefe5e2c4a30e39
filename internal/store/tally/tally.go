// Package tally holds what every store of visitors keeps in memory: one
// key's counts (a [Tally]: a total and a count per UTC day), a [Map] of
// them with a limit on distinct keys, and a [Calendar] that says which UTC
// day visits count towards.
//
// The pieces are lock-free on the hot path. A Tally packs today's count
// and its day into one atomic word, so a visit updates both with one
// compare-and-swap. The Map is a hash table of its own whose reads take
// no lock (see [Map]). The Calendar's day is an atomic that
// a timer advances at each UTC midnight, so no request reads the clock.
//
// A Tally holds earlier days' counts only as long as its owner wants
// them: the in-memory store keeps the last [store.MaxDays]; the durable
// store forgets each day once it is on disk.
package tally

import (
	"slices"
	"sync"
	"sync/atomic"

	"visitors/internal/store"
)

// Tally is one key's counts. It is safe for concurrent use.
type Tally struct {
	total  atomic.Uint64
	today  atomic.Uint64 // packed: day<<countBits | count
	locked atomic.Bool   // frozen: the owner counts nothing (stores check it)
	later  atomic.Bool   // past holds a day after the latest (Later): each new day begins under mu

	mu   sync.Mutex           // guards past
	past map[store.Day]uint64 // final counts of earlier days still held, and days to come (Later)
}

// A day in past after the latest is one Later holds, still to come: no
// other is ever put there (a day ended is put there after the latest has
// moved on). While one is held (later), each new day begins under mu,
// which takes its held count from past and puts the day that ended there
// in one step, in the order the days begin: a rollover that ran late
// could otherwise take a day that had ended for one still held, and
// delete it or add to it (TestLaterRolloversRacing). The readers of past
// (On, Snapshot, Forget) read the latest day under mu too.

const countBits = 40 // today's count: up to 1.1e12 visits a day

func pack(d store.Day, n uint64) uint64 { return uint64(d)<<countBits | n }

func unpack(v uint64) (store.Day, uint64) {
	return store.Day(v >> countBits), v & (1<<countBits - 1)
}

// Visit is what [Tally.Add] did: the new counts, the day the visit was
// counted on, and whether it began that day for this key (so an earlier
// day became final).
type Visit struct {
	store.Counts
	Day    store.Day
	Rolled bool
}

// Add counts one visit on day d. A visit stamped with an older day than
// the tally's latest (a request that read the day just before midnight)
// counts towards the newer day, so earlier days never change once a later
// one has begun. A tally whose total is at [store.MaxTotal], or whose
// count of the day is at [store.MaxDay], counts nothing: the Visit says
// Saturated and holds the counts as they are.
func (t *Tally) Add(d store.Day) Visit {
	// A day already at its bound counts nothing, and the total is not
	// touched: taking it up and then back let a reader see the total
	// go down (the hostile review of issue 23). The give-back below
	// remains for a day that reaches its bound between this look and
	// the total's increment.
	if od, n := unpack(t.today.Load()); od == d && n >= store.MaxDay {
		return t.saturated(d)
	}
	// The total first, so that it is never below the days' sum as read.
	var total uint64
	for {
		total = t.total.Load()
		if total >= store.MaxTotal {
			return t.saturated(d)
		}
		if t.total.CompareAndSwap(total, total+1) {
			total++
			break
		}
	}
	for {
		old := t.today.Load()
		od, n := unpack(old)
		next, day, c := pack(od, n+1), od, n+1
		if od < d {
			if t.later.Load() {
				return t.begin(d, total)
			}
			next, day, c = pack(d, 1), d, 1
		} else if n >= store.MaxDay {
			t.total.Add(^uint64(0)) // give the total back
			return t.saturated(d)
		}
		if t.today.CompareAndSwap(old, next) {
			if od < d && n > 0 {
				t.keepPast(od, n)
			}
			total = t.atLeast(c, total)
			// Visits racing this one may raise the total after it and
			// the day before it: c then counts them and total does not,
			// and a counter whose visits are all today's answered the
			// day above the total. Its answer shows the day at most at
			// its total, as Counts does.
			return Visit{Counts: store.Counts{Total: total, Today: min(c, total)}, Day: day, Rolled: od < d}
		}
	}
}

// begin is Add's visit that begins day d while the tally holds a later
// day, with the total already counted: under t.mu, the day's count goes
// on from the count held, if any. A day held at [store.MaxDay] begins
// full: this visit counts nothing, nor does any after it, which Add's
// first look turns away without touching the total. (Not saturated: it
// may take t.mu.)
func (t *Tally) begin(d store.Day, total uint64) Visit {
	t.mu.Lock()
	defer t.mu.Unlock()
	for {
		old := t.today.Load()
		od, n := unpack(old)
		next, day, c := pack(od, n+1), od, n+1
		if od < d {
			held := t.past[d] // 0, or the count Later holds
			if held >= store.MaxDay {
				if !t.today.CompareAndSwap(old, pack(d, held)) {
					continue
				}
				t.rolled(od, n, d)
				t.total.Add(^uint64(0)) // give the total back
				return Visit{Counts: store.Counts{Total: t.total.Load(), Today: held, Saturated: true}, Day: d}
			}
			next, day, c = pack(d, held+1), d, held+1
		} else if n >= store.MaxDay { // another visit began it meanwhile, full
			t.total.Add(^uint64(0))
			return Visit{Counts: store.Counts{Total: t.total.Load(), Today: n, Saturated: true}, Day: od}
		}
		if t.today.CompareAndSwap(old, next) {
			if od < d {
				t.rolled(od, n, d)
			}
			total = t.atLeast(c, total)
			return Visit{Counts: store.Counts{Total: total, Today: min(c, total)}, Day: day, Rolled: od < d} // as Add's
		}
	}
}

// atLeast takes the total up to the latest day's count c, if it is
// below, once a visit has taken the day up to c, and returns the total
// the visit answers: its own, or c. Only a negative Shift clamped at 0
// leaves it below: it takes the day down, then the total, and visits
// that took the total up between the two, or before the first and the
// day after it, were wiped from the total and still counted on the day,
// which stayed above the total for good (Owner/AddToZeroRacesVisits on
// the in-memory store: Days 19,682 against a total of 7). They count
// after the Shift, on both. The Shift itself looks at the day once it
// has taken the total down, for visits that took the day up before.
func (t *Tally) atLeast(c, total uint64) uint64 {
	for {
		cur := t.total.Load()
		if cur >= c {
			return total
		}
		// The day as it is now, read after the total: a Shift since c
		// was read may have taken the day down, and the total up to c
		// then counted a visit it had taken away (seen: the total 2
		// above the day).
		if _, c = unpack(t.today.Load()); cur >= c {
			return total
		}
		if t.total.CompareAndSwap(cur, c) {
			return c
		}
	}
}

// saturated is the Visit of a visit on day d that counted nothing.
func (t *Tally) saturated(d store.Day) Visit {
	od, n := unpack(t.today.Load())
	if od < d {
		od, n = d, 0
		if t.later.Load() {
			n = t.On(d) // a count Later holds
		}
	}
	return Visit{Counts: store.Counts{Total: t.total.Load(), Today: n, Saturated: true}, Day: od}
}

// Sub takes back one visit that [Tally.Add] counted on day d, for a store
// that could not make it durable.
func (t *Tally) Sub(d store.Day) {
	t.subDay(d)
	// The day first, as a negative Shift: with the total first, a visit
	// between the two found the day above the total and took the total
	// up to it (atLeast), and the visit taken back stayed in the total.
	t.total.Add(^uint64(0))
}

// subDay takes one visit back from day d's count.
func (t *Tally) subDay(d store.Day) {
	for {
		old := t.today.Load()
		od, n := unpack(old)
		if od != d {
			break
		}
		if t.today.CompareAndSwap(old, pack(od, n-1)) {
			return
		}
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.past[d] > 0 {
		t.past[d]--
	}
}

func (t *Tally) keepPast(d store.Day, n uint64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.past == nil {
		t.past = make(map[store.Day]uint64)
	}
	t.past[d] += n
}

// rolled keeps day od's final count n, if any, once the latest day has
// moved on from it to d, and lets day d's count go from past if Later
// held it: the latest day holds it now. A day held that d passed over is
// an earlier day now, its count the one held. t.mu must be held, and
// have been since the latest day moved on.
func (t *Tally) rolled(od store.Day, n uint64, d store.Day) {
	if n > 0 {
		if t.past == nil {
			t.past = make(map[store.Day]uint64)
		}
		t.past[od] += n
	}
	if t.later.Load() {
		delete(t.past, d)
		later := false
		for pd := range t.past {
			later = later || pd > d
		}
		t.later.Store(later)
	}
	t.dropEmpty()
}

// Later holds day d's count n, a day after the latest, before the
// tally is used: a count a store read back for a day still to come (a
// clock that went back, an import of later dates). When the latest day
// reaches d, its visits count on from n; if it passes over d, d is an
// earlier day with count n. The total is not changed: it already holds
// n, as it was read back. A second Later of d holds its count instead of
// the first; a count of 0, or a day not after the latest, holds nothing.
func (t *Tally) Later(d store.Day, n uint64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if latest, _ := unpack(t.today.Load()); n == 0 || d <= latest {
		return
	}
	if t.past == nil {
		t.past = make(map[store.Day]uint64)
	}
	t.past[d] = n
	t.later.Store(true)
}

// Counts returns the tally's total, its count on day today and its lock.
// The day is read first: visits and a positive Shift take the total up
// before the day, so a total read after the day is not below it; read
// the other way, a visit between the two reads showed today's count
// above the total. A negative Shift between them still can, as it takes
// the day down first: the day is then shown at the total, which is what
// it is once the Shift ends when every visit was today's; otherwise it
// is a count between the day's before and after, not above the total
// (TestCountsNeverShowTheDayAboveTheTotal).
func (t *Tally) Counts(today store.Day) store.Counts {
	c := store.Counts{Today: t.On(today)}
	c.Total, c.Locked = t.total.Load(), t.locked.Load()
	c.Today = min(c.Today, c.Total)
	return c
}

// Locked reports whether the tally is frozen.
func (t *Tally) Locked() bool { return t.locked.Load() }

// SetLocked freezes (true) or thaws the tally. The tally itself still
// counts: its store checks Locked before [Tally.Add].
func (t *Tally) SetLocked(locked bool) { t.locked.Store(locked) }

// Shift adds n, which may be negative, to the total and to day d's
// count, each clamped at 0, and returns the new counts; a negative n
// also drops the days held, earlier and later. The caller checks the
// range (store.CheckAdd). A visit racing with it is never lost: the
// total and today's count each change by one compare-and-swap. A
// positive n takes the total up before the day, and a negative one the
// day down before the total, as visits do: a reader never sees the day
// above the total. An owner's operation, not a visit: it holds t.mu,
// which a new day it begins needs while the tally holds a later day.
func (t *Tally) Shift(n int64, d store.Day) store.Counts {
	var total, today uint64
	shiftTotal := func() {
		for {
			old := t.total.Load()
			if total = store.ClampAdd(old, n); t.total.CompareAndSwap(old, total) {
				return
			}
		}
	}
	if n > 0 {
		shiftTotal()
	}
	t.mu.Lock()
	for {
		old := t.today.Load()
		od, c := unpack(old)
		day, base := od, c
		if od < d { // a new day begins, as a visit would begin it
			day, base = d, t.past[d] // 0, or a count Later holds
		}
		today = store.ClampAdd(base, n)
		if t.today.CompareAndSwap(old, pack(day, today)) {
			if od < d {
				t.rolled(od, c, d)
			}
			break
		}
	}
	if n < 0 {
		t.past = nil
		t.later.Store(false)
	}
	t.mu.Unlock()
	if n <= 0 {
		shiftTotal()
		_, c := unpack(t.today.Load())
		total = t.atLeast(c, total) // visits wiped from the total by its clamp
	} else {
		total = t.total.Load() // read after the day's: never below it
	}
	return store.Counts{Total: total, Today: min(today, total), Locked: t.locked.Load()}
}

// Total returns the tally's total.
func (t *Tally) Total() uint64 { return t.total.Load() }

// On returns the count of day d as far as the tally holds it.
func (t *Tally) On(d store.Day) uint64 {
	if td, n := unpack(t.today.Load()); td == d {
		return n
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	// Again under t.mu: a day held (Later) that began since the read
	// above has left past (TestLaterDayOnWhileItBegins).
	if td, n := unpack(t.today.Load()); td == d {
		return n
	}
	return t.past[d]
}

// DayCount is one day's count.
type DayCount struct {
	Day   store.Day
	Count uint64
}

// Snapshot returns the total, the latest day's count, and appends to
// past the earlier days held, oldest first. It reads the earlier days
// first, then the latest day, then the total: a midnight in between
// leaves the day that just ended out of this snapshot (it is in the
// next), rather than giving it twice with two counts, and the total is
// never below the days' sum as read.
func (t *Tally) Snapshot(past []DayCount) (total uint64, latest DayCount, _ []DayCount) {
	start := len(past)
	t.mu.Lock()
	d, _ := unpack(t.today.Load())
	for pd, pn := range t.past {
		if pd < d || !t.later.Load() { // a day to come (Later) is not final
			past = append(past, DayCount{pd, pn})
		}
	}
	t.mu.Unlock()
	d, n := unpack(t.today.Load())
	slices.SortFunc(past[start:], func(a, b DayCount) int { return int(a.Day) - int(b.Day) })
	return t.total.Load(), DayCount{d, n}, past
}

// Forget drops the earlier days in days whose count is still the one
// given: the owner has stored them elsewhere.
func (t *Tally) Forget(days []DayCount) {
	if len(days) == 0 {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	d, _ := unpack(t.today.Load())
	for _, dc := range days {
		if t.past[dc.Day] == dc.Count && (dc.Day < d || !t.later.Load()) { // a day to come (Later) stays
			delete(t.past, dc.Day)
		}
	}
	t.dropEmpty()
}

// dropEmpty lets an empty past go: a map keeps its memory after its
// last delete, and a durable store forgets every day once it is on
// disk, so each key that ever saw a midnight kept an empty map (flat
// over days: BenchmarkMemoryPerKey). t.mu must be held.
func (t *Tally) dropEmpty() {
	if len(t.past) == 0 {
		t.past = nil
	}
}

// Prune drops the earlier days before oldest.
func (t *Tally) Prune(oldest store.Day) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for d := range t.past {
		if d < oldest {
			delete(t.past, d)
		}
	}
	t.dropEmpty()
}

// Held reports how many earlier days the tally holds: a measure of its
// memory beyond the fixed part.
func (t *Tally) Held() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.past)
}

// Restore sets the total and day d's count, as read back from where they
// were kept, before the tally is used.
func (t *Tally) Restore(total uint64, d store.Day, count uint64) {
	t.total.Store(total)
	t.today.Store(pack(d, count))
}

// Counter is an atomic counter alone on its cache line, so that its
// writes do not slow the fields around it. It is safe for concurrent use.
type Counter struct {
	_ [64]byte
	atomic.Uint64
	_ [56]byte
}
