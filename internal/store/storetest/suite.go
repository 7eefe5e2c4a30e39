package storetest

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"visitors/internal/store"
)

// Config is what the suite asks of a store it opens.
type Config struct {
	Dir     string           // where a durable store keeps its files; the same dir reopens it
	MaxKeys int              // most distinct keys; <= 0: no limit
	Now     func() time.Time // the store's clock
}

// Backend is a store under test.
type Backend struct {
	// Name names the backend in [Exchange]'s tests.
	Name string
	// Open opens a store for c. It fails t if it cannot.
	Open func(t *testing.T, c Config) store.Store
	// Durable says that a store closed and reopened on the same Dir
	// keeps every count it acknowledged.
	Durable bool
}

// Roller is implemented by stores whose day a manual clock moves: the
// suite calls Rollover after moving the clock.
type Roller interface{ Rollover() }

// Holder is implemented by stores that can say how many earlier days one
// key holds in memory.
type Holder interface{ Held(key []byte) int }

// Flusher is implemented by stores that write to a backend in passes:
// Flush writes everything counted so far.
type Flusher interface{ Flush() error }

// seededRand returns the random source of a property test: seeded by
// STORETEST_SEED if set, else by the time, and the seed printed if t
// fails, so that a failing run can be replayed.
func seededRand(t *testing.T) *rand.Rand {
	t.Helper()
	seed := uint64(time.Now().UnixNano())
	if v := os.Getenv("STORETEST_SEED"); v != "" {
		var err error
		if seed, err = strconv.ParseUint(v, 10, 64); err != nil {
			t.Fatalf("STORETEST_SEED=%q: %v", v, err)
		}
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("seed: STORETEST_SEED=%d", seed)
		}
	})
	return rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
}

// HostileKeys are keys every store must take and give back unchanged:
// each input class the web layer accepts (the empty name, the longest
// key, odd UTF-8, bytes that look like the stores' own encodings).
func HostileKeys() [][]byte {
	return [][]byte{
		{}, // /hello with no name
		[]byte(strings.Repeat("k", store.MaxKeyBytes)), // the longest key
		[]byte(strings.Repeat("é", store.MaxKeyBytes/2)),
		[]byte("\x00"),             // %00
		[]byte("\x00\x00\x00\x01"), // looks like a day number
		[]byte("\x01a"),            // looks like a length prefix
		[]byte("a"),
		[]byte("a\x00"),
		[]byte("😀 日本語 ǅ"),
		[]byte("\u202e\u200b\ufeff"), // bidi override, zero width, BOM
		[]byte("octocat/hello-world"),
		[]byte("../../etc/passwd"),
		[]byte("<script>alert(1)</script>"),
		[]byte("{\"key\":\"x\"}\n"),
		[]byte(" "),
		[]byte("%ZZ+"),
	}
}

var ctx = context.Background()

// Run runs the conformance suite against b. Each test opens its own
// stores in its own directory.
func Run(t *testing.T, b Backend) {
	s := suite{b}
	t.Run("HitNumbersAreUnique", s.hitNumbersAreUnique)
	t.Run("IncrCountsExactly", s.incrCountsExactly)
	t.Run("HostileKeys", s.hostileKeys)
	t.Run("KeyTooLong", s.keyTooLong)
	t.Run("DoesNotRetainKeys", s.doesNotRetainKeys)
	t.Run("MaxKeys", s.maxKeys)
	t.Run("LastSlotRace", s.lastSlotRace)
	t.Run("VisitMakesOnlyIfAllowed", s.visitMakesOnlyIfAllowed)
	t.Run("VisitBudgetRace", s.visitBudgetRace)
	t.Run("UnknownKey", s.unknownKey)
	t.Run("Midnights", s.midnights)
	t.Run("MemoryIsBoundedOverTime", s.memoryBounded)
	t.Run("Property", s.property)
	t.Run("Owner", s.runOwner)
	t.Run("Dump", s.runDump)
	t.Run("Sketches", s.runSketches)
	t.Run("Uniques", s.runUniques)
}

type suite struct{ b Backend }

// RaceNewKeys visits a new key on each of sts at once, "racer0" on the
// first, "racer1" on the second and so on, and returns how many visits
// were counted. A visit refused with anything but [store.ErrTooManyKeys]
// fails t.
func RaceNewKeys(t *testing.T, sts ...store.Store) (won int) {
	t.Helper()
	errs := make([]error, len(sts))
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i, st := range sts {
		wg.Go(func() {
			<-start
			_, errs[i] = Incr(ctx, st, fmt.Appendf(nil, "racer%d", i))
		})
	}
	close(start)
	wg.Wait()
	for i, err := range errs {
		switch {
		case err == nil:
			won++
		case !errors.Is(err, store.ErrTooManyKeys):
			t.Fatalf("Incr(racer%d): %v", i, err)
		}
	}
	return won
}

func (s suite) open(t *testing.T, c Config) store.Store {
	t.Helper()
	if c.Dir == "" {
		c.Dir = t.TempDir()
	}
	st := s.b.Open(t, c)
	if err := st.Health(); err != nil {
		t.Fatalf("Health() of a new store = %v, want nil", err)
	}
	return st
}

func mustClose(t *testing.T, st store.Store) {
	t.Helper()
	if err := st.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
}

func mustIncr(t *testing.T, st store.Store, key []byte) store.Counts {
	t.Helper()
	c, err := Incr(ctx, st, key)
	if err != nil {
		t.Fatalf("Incr(%q): %v", key, err)
	}
	return c
}

func mustGet(t *testing.T, st store.Store, key []byte) store.Counts {
	t.Helper()
	c, err := st.Get(ctx, key)
	if err != nil {
		t.Fatalf("Get(%q): %v", key, err)
	}
	return c
}

func mustDays(t *testing.T, st store.Store, key []byte, n int) store.Daily {
	t.Helper()
	d, err := st.Days(ctx, key, n)
	if err != nil {
		t.Fatalf("Days(%q, %d): %v", key, n, err)
	}
	if len(d.Counts) != n {
		t.Fatalf("Days(%q, %d) gave %d days", key, n, len(d.Counts))
	}
	return d
}

// reopen closes a durable store and opens it again; a store that is not
// durable is returned as it is.
func (s suite) reopen(t *testing.T, st store.Store, c Config) store.Store {
	t.Helper()
	if !s.b.Durable {
		return st
	}
	mustClose(t, st)
	return s.open(t, c)
}

// reopenAndCheck runs check on *st (when says what came before), reopens
// the store (a durable backend's), and runs check again.
func (s suite) reopenAndCheck(t *testing.T, st *store.Store, c Config, when string, check func(when string)) {
	t.Helper()
	check(when)
	*st = s.reopen(t, *st, c)
	check("after reopening")
}

func (s suite) hitNumbersAreUnique(t *testing.T) {
	c := Config{Dir: t.TempDir()}
	st := s.open(t, c)
	const goroutines, per = 64, 100
	got := make([][]uint64, goroutines)
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Go(func() {
			for range per {
				n, err := st.Hit(ctx)
				if err != nil {
					t.Errorf("Hit: %v", err)
					return
				}
				got[g] = append(got[g], n)
			}
		})
	}
	wg.Wait()
	seen := map[uint64]bool{}
	var last uint64
	for _, ns := range got {
		for _, n := range ns {
			if n == 0 || seen[n] {
				t.Fatalf("Hit() returned %d twice, or 0", n)
			}
			seen[n] = true
			last = max(last, n)
		}
	}
	if last != goroutines*per {
		t.Errorf("the largest of %d numbers is %d, want %d: numbers were skipped while running", goroutines*per, last, goroutines*per)
	}
	st = s.reopen(t, st, c)
	defer mustClose(t, st)
	n, err := st.Hit(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if want := last + 1; n != want {
		t.Errorf("after a clean reopen Hit() = %d, want %d (no number repeated, none skipped)", n, want)
	}
}

func (s suite) incrCountsExactly(t *testing.T) {
	c := Config{Dir: t.TempDir()}
	st := s.open(t, c)
	const goroutines, per, keys = 64, 50, 8
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Go(func() {
			key := fmt.Appendf(nil, "k%d", g%keys)
			for range per {
				if _, err := Incr(ctx, st, key); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	check := func(when string) {
		t.Helper()
		want := uint64(goroutines / keys * per)
		for k := range keys {
			if got := mustGet(t, st, fmt.Appendf(nil, "k%d", k)); got.Total != want || got.Today != want {
				t.Errorf("%s: Get(k%d) = %+v, want total and today %d", when, k, got, want)
			}
		}
		if got := st.Keys(); got != keys {
			t.Errorf("%s: Keys() = %d, want %d", when, got, keys)
		}
	}
	defer func() { mustClose(t, st) }()
	s.reopenAndCheck(t, &st, c, "after counting", check)
}

func (s suite) hostileKeys(t *testing.T) {
	clock := NewClock(At(0, "12:00"))
	c := Config{Dir: t.TempDir(), Now: clock.Now}
	st := s.open(t, c)
	keys := HostileKeys()
	for i, k := range keys {
		for j := range i + 1 {
			if got := mustIncr(t, st, k); got.Total != uint64(j+1) {
				t.Fatalf("Incr(%q) visit %d: total %d", k, j+1, got.Total)
			}
		}
	}
	check := func(when string) {
		t.Helper()
		for i, k := range keys {
			want := uint64(i + 1)
			if got := mustGet(t, st, k); got.Total != want || got.Today != want {
				t.Errorf("%s: Get(%q) = %+v, want total and today %d", when, k, got, want)
			}
			if d := mustDays(t, st, k, 2); d.Counts[0] != 0 || d.Counts[1] != want {
				t.Errorf("%s: Days(%q, 2) = %v, want [0 %d]", when, k, d.Counts, want)
			}
		}
		if got := st.Keys(); got != len(keys) {
			t.Errorf("%s: Keys() = %d, want %d", when, got, len(keys))
		}
		if err := st.Health(); err != nil {
			t.Errorf("%s: Health() = %v, want nil", when, err)
		}
	}
	s.reopenAndCheck(t, &st, c, "after counting", check)
	// And they keep counting after a reopen.
	for i, k := range keys {
		if got := mustIncr(t, st, k); got.Total != uint64(i+2) {
			t.Errorf("after reopening, Incr(%q) total = %d, want %d", k, got.Total, i+2)
		}
	}
	st = s.reopen(t, st, c)
	defer mustClose(t, st)
	for i, k := range keys {
		if got := mustGet(t, st, k); got.Total != uint64(i+2) {
			t.Errorf("after the second reopen, Get(%q) total = %d, want %d", k, got.Total, i+2)
		}
	}
}

func (s suite) keyTooLong(t *testing.T) {
	st := s.open(t, Config{})
	defer mustClose(t, st)
	long := []byte(strings.Repeat("k", store.MaxKeyBytes+1))
	if _, err := Incr(ctx, st, long); !errors.Is(err, store.ErrKeyTooLong) {
		t.Errorf("Incr(%d bytes) error = %v, want ErrKeyTooLong", len(long), err)
	}
	if st.Keys() != 0 {
		t.Errorf("Keys() = %d after a refused key, want 0", st.Keys())
	}
}

func (s suite) doesNotRetainKeys(t *testing.T) {
	c := Config{Dir: t.TempDir()}
	st := s.open(t, c)
	buf := []byte("alice")
	mustIncr(t, st, buf)
	copy(buf, "bobby") // the caller reuses its buffer
	st = s.reopen(t, st, c)
	defer mustClose(t, st)
	if got := mustGet(t, st, []byte("alice")); got.Total != 1 {
		t.Errorf("Get(alice) = %+v after the caller reused its buffer, want total 1", got)
	}
	if got := mustGet(t, st, []byte("bobby")); got.Total != 0 {
		t.Errorf("Get(bobby) = %+v, want total 0", got)
	}
}

func (s suite) maxKeys(t *testing.T) {
	const limit = 20
	c := Config{Dir: t.TempDir(), MaxKeys: limit}
	st := s.open(t, c)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var accepted [][]byte
	for g := range 8 {
		wg.Go(func() {
			for i := range 50 {
				k := fmt.Appendf(nil, "g%d-%d", g, i)
				_, err := Incr(ctx, st, k)
				switch {
				case err == nil:
					mu.Lock()
					accepted = append(accepted, k)
					mu.Unlock()
				case !errors.Is(err, store.ErrTooManyKeys):
					t.Errorf("Incr: %v", err)
				}
			}
		})
	}
	wg.Wait()
	if len(accepted) != limit || st.Keys() != limit {
		t.Fatalf("accepted %d new keys, Keys() = %d; want both %d", len(accepted), st.Keys(), limit)
	}
	if got := mustGet(t, st, []byte("g0-49")); got.Total != 0 && !slices.ContainsFunc(accepted, func(k []byte) bool { return string(k) == "g0-49" }) {
		t.Errorf("a refused key has counts %+v", got)
	}
	st = s.reopen(t, st, c)
	defer mustClose(t, st)
	// Every accepted key still counts on a full store, after a reopen too.
	for _, k := range accepted {
		if got := mustIncr(t, st, k); got.Total != 2 {
			t.Errorf("Incr(%s) on a full store = %+v, want total 2", k, got)
		}
	}
	if _, err := Incr(ctx, st, []byte("one-more")); !errors.Is(err, store.ErrTooManyKeys) {
		t.Errorf("Incr(new key) on a full reopened store: %v, want ErrTooManyKeys", err)
	}
}

func (s suite) lastSlotRace(t *testing.T) {
	NoDate(t)
	for round := range 20 {
		st := s.open(t, Config{MaxKeys: 2})
		mustIncr(t, st, []byte("first"))
		won := RaceNewKeys(t, st, st)
		if won != 1 || st.Keys() != 2 {
			t.Fatalf("round %d: %d of two new keys took the last slot, Keys() = %d; want 1 and 2", round, won, st.Keys())
		}
		mustClose(t, st)
	}
}

func (s suite) unknownKey(t *testing.T) {
	clock := NewClock(At(0, "12:00"))
	st := s.open(t, Config{Now: clock.Now})
	defer mustClose(t, st)
	if got := mustGet(t, st, []byte("nobody")); got != (store.Counts{}) {
		t.Errorf("Get(unknown) = %+v, want zero", got)
	}
	d := mustDays(t, st, []byte("nobody"), store.MaxDays)
	if want := At(0, "00:00"); !d.Last.Equal(want) {
		t.Errorf("Days(unknown).Last = %v, want %v", d.Last, want)
	}
	for _, n := range d.Counts {
		if n != 0 {
			t.Fatalf("Days(unknown) = %v, want zeros", d.Counts)
		}
	}
	if st.Keys() != 0 {
		t.Errorf("Keys() = %d after reads only, want 0", st.Keys())
	}
}

func roll(st store.Store) {
	if r, ok := st.(Roller); ok {
		r.Rollover()
	}
}

// midnights counts on days with gaps between them, with no reopen (and,
// for a durable store, no flush it is not forced to make) across several
// UTC midnights, then reopens: no day may be lost.
func (s suite) midnights(t *testing.T) {
	clock := NewClock(At(0, "23:00"))
	c := Config{Dir: t.TempDir(), Now: clock.Now}
	st := s.open(t, c)
	key := []byte("") // the hardest key, on purpose
	var want []uint64 // per day from the anchor day
	visit := func(n int) {
		for range n {
			mustIncr(t, st, key)
		}
	}
	step := func(days int) {
		clock.Add(time.Duration(days) * 24 * time.Hour)
		roll(st)
	}
	visit(3)
	want = append(want, 3)
	step(1) // + 1
	visit(1)
	want = append(want, 1)
	step(2) // + 3: a day with no visits
	visit(2)
	want = append(want, 0, 2)
	step(1) // + 4
	visit(4)
	want = append(want, 4)
	step(1) // + 5: today, no visit yet
	want = append(want, 0)

	var total uint64
	for _, n := range want {
		total += n
	}
	check := func(when string) {
		t.Helper()
		d := mustDays(t, st, key, len(want)+1)
		if got := fmt.Sprint(d.Counts); got != fmt.Sprint(append([]uint64{0}, want...)) {
			t.Errorf("%s: Days = %s, want %v", when, got, append([]uint64{0}, want...))
		}
		if got := mustGet(t, st, key); got.Total != total || got.Today != 0 {
			t.Errorf("%s: Get = %+v, want total %d, today 0", when, got, total)
		}
	}
	defer func() { mustClose(t, st) }()
	s.reopenAndCheck(t, &st, c, "before reopening", check)
}

// memoryBounded visits one key every day for 400 days: what memory holds
// of its history must stay flat, and the last MaxDays must still read.
func (s suite) memoryBounded(t *testing.T) {
	clock := NewClock(At(0, "12:00"))
	st := s.open(t, Config{Now: clock.Now})
	defer mustClose(t, st)
	h, ok := st.(Holder)
	if !ok {
		t.Skip("the store keeps no history in memory")
	}
	key := []byte("daily")
	f, flushes := st.(Flusher)
	for day := range 400 {
		for range day%3 + 1 {
			mustIncr(t, st, key)
		}
		// A store that writes elsewhere holds no earlier day once it is
		// written; one that keeps everything in memory holds exactly the
		// readable window.
		want := min(day, store.MaxDays-1)
		if flushes {
			if err := f.Flush(); err != nil {
				t.Fatal(err)
			}
			want = 0
		}
		if got := h.Held(key); got != want {
			t.Fatalf("day %d: memory holds %d earlier days of the key, want %d", day, got, want)
		}
		clock.Add(24 * time.Hour)
		roll(st)
	}
	d := mustDays(t, st, key, store.MaxDays)
	for i, n := range d.Counts[:len(d.Counts)-1] { // today has no visit yet
		day := 400 - (store.MaxDays - 1) + i // the day index in the loop above
		if want := uint64(day%3 + 1); n != want {
			t.Fatalf("Days(%d)[%d] = %d, want %d", store.MaxDays, i, n, want)
		}
	}
}

// property runs random sequences of Incr, Set, Add, Lock, Delete, Hit,
// clock moves and reopens
// with random keys (any bytes the web layer accepts, the empty key always
// among them) against a model, checked after every reopen. The seed is
// STORETEST_SEED if set, and printed on failure.
func (s suite) property(t *testing.T) {
	rng := seededRand(t)
	keys := HostileKeys()
	for range 24 {
		keys = append(keys, randomKey(rng))
	}
	clock := NewClock(At(0, "12:00"))
	c := Config{Dir: t.TempDir(), Now: clock.Now}
	st := s.open(t, c)
	type model struct {
		total  uint64
		days   map[store.Day]uint64
		locked bool
	}
	m := map[string]*model{}
	var lastHit uint64
	check := func(step int) {
		t.Helper()
		today := store.DayOf(clock.Now())
		for _, k := range keys {
			want := m[string(k)]
			if want == nil {
				want = &model{}
			}
			got := mustGet(t, st, k)
			if got.Total != want.total || got.Today != want.days[today] || got.Locked != want.locked {
				t.Fatalf("step %d: Get(%q) = %+v, want total %d, today %d, locked %v", step, k, got, want.total, want.days[today], want.locked)
			}
			d := mustDays(t, st, k, 10)
			for i, n := range d.Counts {
				if w := want.days[today-store.Day(9-i)]; n != w {
					t.Fatalf("step %d: Days(%q, 10) = %v: day %d is %d, want %d", step, k, d.Counts, i, n, w)
				}
			}
		}
		if got := st.Keys(); got != len(m) {
			t.Fatalf("step %d: Keys() = %d, want %d", step, got, len(m))
		}
		var listed []string
		for _, e := range mustList(t, st, nil, nil, store.MaxList) {
			listed = append(listed, string(e.Key))
			if w := m[string(e.Key)]; w == nil || e.Total != w.total || e.Locked != w.locked {
				t.Fatalf("step %d: List gave %q with %+v, want %+v", step, e.Key, e.Counts, w)
			}
		}
		if want := slices.Sorted(maps.Keys(m)); !slices.Equal(listed, want) {
			t.Fatalf("step %d: List = %q, want %q", step, listed, want)
		}
	}
	entry := func(k []byte) *model {
		mk := m[string(k)]
		if mk == nil {
			mk = &model{days: map[store.Day]uint64{}}
			m[string(k)] = mk
		}
		return mk
	}
	for step := range 300 {
		switch op := rng.IntN(100); {
		case op < 70:
			k := keys[rng.IntN(len(keys))]
			if rng.IntN(4) == 0 {
				k = keys[0] // the empty key, often
			}
			got := mustIncr(t, st, k)
			mk := entry(k)
			if !mk.locked {
				mk.total++
				mk.days[store.DayOf(clock.Now())]++
			}
			if got.Total != mk.total || got.Locked != mk.locked {
				t.Fatalf("step %d: Incr(%q) total = %d, want %d", step, k, got.Total, mk.total)
			}
		case op < 72:
			k := keys[rng.IntN(len(keys))]
			n := rng.Uint64N(1 << 40)
			mustSet(t, st, k, n)
			mk := entry(k)
			mk.total, mk.days = n, map[store.Day]uint64{}
		case op < 74:
			k := keys[rng.IntN(len(keys))]
			locked := rng.IntN(2) == 0
			mustLock(t, st, k, locked)
			entry(k).locked = locked
		case op < 76:
			k := keys[rng.IntN(len(keys))]
			if got, want := mustDelete(t, st, k), m[string(k)] != nil; got != want {
				t.Fatalf("step %d: Delete(%q) = %v, want %v", step, k, got, want)
			}
			delete(m, string(k))
		case op < 78:
			flush(t, st)
		case op < 82:
			k := keys[rng.IntN(len(keys))]
			n := rng.Int64N(2001) - 1000
			if rng.IntN(8) == 0 {
				n = -rng.Int64N(1 << 40) // down to 0, or near
			}
			got := mustAdd(t, st, k, n)
			mk := entry(k)
			today := store.DayOf(clock.Now())
			mk.total, mk.days[today] = store.ClampAdd(mk.total, n), store.ClampAdd(mk.days[today], n)
			if n < 0 {
				mk.days = map[store.Day]uint64{today: mk.days[today]}
			}
			if got.Total != mk.total || got.Today != mk.days[today] || got.Locked != mk.locked {
				t.Fatalf("step %d: Add(%q, %d) = %+v, want total %d, today %d", step, k, n, got, mk.total, mk.days[today])
			}
		case op < 83:
			n, err := st.Hit(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if n <= lastHit {
				t.Fatalf("step %d: Hit() = %d after %d", step, n, lastHit)
			}
			lastHit = n
		case op < 88:
			clock.Add(time.Duration(rng.IntN(60)) * time.Hour)
			roll(st)
		default:
			st = s.reopen(t, st, c)
			check(step)
		}
	}
	st = s.reopen(t, st, c)
	check(300)
	mustClose(t, st)
}

// randomKey returns up to MaxKeyBytes bytes of valid UTF-8 drawn from
// ASCII, control characters, multi-byte runes and the encodings' own
// bytes.
func randomKey(rng *rand.Rand) []byte {
	runes := []rune{0, 1, 4, 'a', 'Z', '/', '.', ' ', '%', 0x7f, 'é', 'ǅ', '日', 0x202e, 0xfeff, 0x1f600}
	var b []byte
	for n := rng.IntN(40); n > 0; n-- {
		r := runes[rng.IntN(len(runes))]
		if len(b)+4 > store.MaxKeyBytes {
			break
		}
		b = fmt.Appendf(b, "%c", r)
	}
	if rng.IntN(8) == 0 { // the longest keys too
		for len(b) < store.MaxKeyBytes {
			b = append(b, 'x')
		}
	}
	return b
}
