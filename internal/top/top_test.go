package top

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"visitors/internal/race"
	"visitors/internal/store"
	"visitors/internal/store/memstore"
	"visitors/internal/store/storetest"
)

// fixture is a board over a memory store on a manual clock, fed as the
// web layer feeds it: with the counts of each Incr.
type fixture struct {
	b     *Board
	st    *memstore.Store
	clock *storetest.Clock
	days  atomic.Int64 // Days calls
	back  atomic.Int64 // days the board's Today lags the clock, for a late visit
}

func (f *fixture) Days(ctx context.Context, key []byte, n int) (store.Daily, error) {
	f.days.Add(1)
	return f.st.Days(ctx, key, n)
}

func mustFixture(t testing.TB, candidates int, ttl time.Duration) *fixture {
	t.Helper()
	clock := storetest.NewClock(storetest.At(2, "12:00"))
	st := memstore.New(memstore.Options{Now: clock.Now})
	t.Cleanup(func() { st.Close() })
	f := &fixture{st: st, clock: clock}
	today := func() store.Day { return store.DayOf(clock.Now()) - store.Day(f.back.Load()) }
	f.b = New(Options{Store: daysOnly{st, f}, Today: today, TTL: ttl, Candidates: candidates, Now: clock.Now})
	return f
}

// daysOnly counts the Days calls of a board.
type daysOnly struct {
	*memstore.Store
	f *fixture
}

func (d daysOnly) Days(ctx context.Context, key []byte, n int) (store.Daily, error) {
	return d.f.Days(ctx, key, n)
}

func (f *fixture) visit(t testing.TB, key string) {
	c, err := storetest.Incr(context.Background(), f.st, []byte(key))
	if err != nil {
		t.Fatal(err)
	}
	f.b.Observe([]byte(key), c)
}

// nextDay moves the clock a day on, as midnight does.
func (f *fixture) nextDay() {
	f.clock.Add(24 * time.Hour)
	f.st.Rollover()
}

// want ranks every key by brute force over n days: what a full scan
// would list.
func want(t testing.TB, st *memstore.Store, keys []string, n int) []Entry {
	var list []Entry
	for _, k := range keys {
		d, err := st.Days(context.Background(), []byte(k), n)
		if err != nil {
			t.Fatal(err)
		}
		var sum uint64
		for _, v := range d.Counts {
			sum += v
		}
		if sum > 0 {
			list = append(list, Entry{k, sum})
		}
	}
	slices.SortFunc(list, func(x, y Entry) int {
		if x.Count != y.Count {
			if x.Count > y.Count {
				return -1
			}
			return 1
		}
		return strings.Compare(x.Key, y.Key)
	})
	return list[:min(len(list), MaxLimit)]
}

// sameRanking reports whether got ranks as a full scan does: the same
// counts in the same order (keys that tie at the end of the list may
// differ), each got key at its real count.
func sameRanking(t testing.TB, st *memstore.Store, got, want []Entry) bool {
	if len(got) != len(want) {
		return false
	}
	for i := range got {
		if got[i].Count != want[i].Count {
			return false
		}
		if c, _ := st.Get(context.Background(), []byte(got[i].Key)); c.Today != got[i].Count {
			return false
		}
	}
	return true
}

// TestTodayIsExact: with visits to 2,000 keys in random order, skewed
// so that many keys tie, today's list of a board keeping only 100
// candidates ranks exactly as a full scan does.
func TestTodayIsExact(t *testing.T) {
	f := mustFixture(t, MaxLimit, 0)
	rng := rand.New(rand.NewPCG(1, 2))
	keys := make([]string, 2000)
	for i := range keys {
		keys[i] = fmt.Sprintf("key/%04d", i)
	}
	for range 60000 {
		k := keys[int(rng.ExpFloat64()*200)%len(keys)]
		f.visit(t, k)
	}
	got, err := f.b.List(context.Background(), 1)
	if err != nil {
		t.Fatal(err)
	}
	if w := want(t, f.st, keys, 1); !sameRanking(t, f.st, got, w) {
		t.Errorf("List(1) differs from a full scan:\ngot  %v\nwant %v", got[:5], w[:5])
	}
}

// TestConcurrentObserve: visits from many goroutines, whose counts may
// reach the board out of order, still leave it exact.
func TestConcurrentObserve(t *testing.T) {
	f := mustFixture(t, MaxLimit, 0)
	keys := make([]string, 500)
	for i := range keys {
		keys[i] = fmt.Sprintf("k%d", i)
	}
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(g), 9))
			for range 5000 {
				f.visit(t, keys[int(rng.ExpFloat64()*60)%len(keys)])
			}
		}()
	}
	wg.Wait()
	got, _ := f.b.List(context.Background(), 1)
	if w := want(t, f.st, keys, 1); !sameRanking(t, f.st, got, w) {
		t.Errorf("List(1) after concurrent visits differs from a full scan:\ngot  %v\nwant %v", got[:5], w[:5])
	}
}

// TestDays: a list over several days sums each key's days; a key
// popular only on an earlier day drops out of the shorter lists; days
// past MaxDays are forgotten.
func TestDays(t *testing.T) {
	f := mustFixture(t, 10, 0)
	for range 5 {
		f.visit(t, "old")
	}
	f.nextDay()
	for range 3 {
		f.visit(t, "new")
	}
	f.visit(t, "old")
	ctx := context.Background()
	for _, tt := range []struct {
		n    int
		want []Entry
	}{
		{1, []Entry{{"new", 3}, {"old", 1}}},
		{2, []Entry{{"old", 6}, {"new", 3}}},
		{30, []Entry{{"old", 6}, {"new", 3}}},
	} {
		if got, err := f.b.List(ctx, tt.n); err != nil || !slices.Equal(got, tt.want) {
			t.Errorf("List(%d) = %v, %v; want %v", tt.n, got, err, tt.want)
		}
	}
	for _, n := range []int{0, 31, -1} {
		if _, err := f.b.List(ctx, n); err != ErrDays {
			t.Errorf("List(%d) = %v, want ErrDays", n, err)
		}
	}
	for range MaxDays {
		f.nextDay()
	}
	if got, _ := f.b.List(ctx, MaxDays); len(got) != 0 {
		t.Errorf("List(%d) %d days later = %v, want nothing", MaxDays, MaxDays, got)
	}
}

// TestCache: within the TTL a list is served without reading the store,
// and a visit shows once the TTL has passed.
func TestCache(t *testing.T) {
	f := mustFixture(t, 10, 10*time.Second)
	f.visit(t, "a")
	ctx := context.Background()
	f.b.List(ctx, 7)
	reads := f.days.Load()
	f.visit(t, "a")
	for range 100 {
		if got, _ := f.b.List(ctx, 7); got[0].Count != 1 {
			t.Fatalf("within the TTL the list changed: %v", got)
		}
	}
	if f.days.Load() != reads {
		t.Errorf("100 cached lists read the store %d times, want 0", f.days.Load()-reads)
	}
	f.clock.Add(10 * time.Second)
	if got, _ := f.b.List(ctx, 7); got[0].Count != 2 {
		t.Errorf("after the TTL the list is %v, want a at 2", got)
	}
}

// TestObserveAllocs: a visit to a key that is already a candidate, or
// below every candidate, allocates nothing.
func TestObserveAllocs(t *testing.T) {
	if race.Enabled {
		t.Skip("allocation budgets are checked without -race")
	}
	f := mustFixture(t, 2, 0)
	for range 5 {
		f.visit(t, "a")
		f.visit(t, "b")
	}
	f.visit(t, "c")
	low, hot := []byte("c"), []byte("a")
	if got := testing.AllocsPerRun(100, func() { f.b.Observe(low, store.Counts{Total: 1, Today: 1}) }); got != 0 {
		t.Errorf("Observe below the candidates allocs = %v, want 0", got)
	}
	n := uint64(5)
	if got := testing.AllocsPerRun(100, func() { n++; f.b.Observe(hot, store.Counts{Total: n, Today: n}) }); got != 0 {
		t.Errorf("Observe of a candidate allocs = %v, want 0", got)
	}
}

// TestCloseRace: keys whose counts differ by one each, visited in random
// order, so that the board's boundary moves by one visit at a time: the
// list is still exactly the top keys.
func TestCloseRace(t *testing.T) {
	for seed := range uint64(5) {
		f := mustFixture(t, MaxLimit, 0)
		var visits []string
		var keys []string
		for i := range 250 {
			k := fmt.Sprintf("k%03d", i)
			keys = append(keys, k)
			for range 300 - i {
				visits = append(visits, k)
			}
		}
		rand.New(rand.NewPCG(seed, 3)).Shuffle(len(visits), func(i, j int) { visits[i], visits[j] = visits[j], visits[i] })
		for _, k := range visits {
			f.visit(t, k)
		}
		// The board's invariants: each candidate at its real count, and
		// every other key at most the weakest candidate's.
		cur := f.b.cur.Load()
		for _, k := range keys {
			c, _ := f.st.Get(context.Background(), []byte(k))
			if e, ok := cur.byKey[k]; ok && e.n != c.Today {
				t.Fatalf("seed %d: candidate %s at %d, its count is %d", seed, k, e.n, c.Today)
			} else if !ok && c.Today > cur.h[0].n {
				t.Fatalf("seed %d: %s at %d is no candidate, but the weakest is at %d", seed, k, c.Today, cur.h[0].n)
			}
		}
		got, _ := f.b.List(context.Background(), 1)
		if w := want(t, f.st, keys, 1); !slices.Equal(got, w) {
			t.Fatalf("seed %d: List(1) differs from a full scan:\ngot  %v\nwant %v", seed, got, w)
		}
	}
}

// list returns the board's list over n days, failing the test on an
// error.
func (f *fixture) list(t testing.TB, n int) []Entry {
	t.Helper()
	got, err := f.b.List(context.Background(), n)
	if err != nil {
		t.Fatal(err)
	}
	return got
}

// wantList checks that the list over n days is want.
func (f *fixture) wantList(t testing.TB, n int, want []Entry) {
	t.Helper()
	if got := f.list(t, n); !slices.Equal(got, want) {
		t.Errorf("List(%d) = %v, want %v", n, got, want)
	}
}

// visitN visits key n times.
func (f *fixture) visitN(t testing.TB, key string, n int) {
	for range n {
		f.visit(t, key)
	}
}

// TestTiesByKey: keys with as many visits are listed by key, and of 101
// keys that tie, the list keeps the 100 smallest.
func TestTiesByKey(t *testing.T) {
	f := mustFixture(t, 2*MaxLimit, 0)
	for _, k := range []string{"c", "a", "d", "b"} {
		f.visit(t, k)
	}
	f.visit(t, "d")
	f.wantList(t, 1, []Entry{{"d", 2}, {"a", 1}, {"b", 1}, {"c", 1}})

	f = mustFixture(t, 2*MaxLimit, 0)
	var want []Entry
	for i := MaxLimit; i >= 0; i-- { // the largest key first: it must be dropped
		k := fmt.Sprintf("k%03d", i)
		f.visit(t, k)
		if i < MaxLimit {
			want = append(want, Entry{k, 1})
		}
	}
	slices.Reverse(want)
	if got := f.list(t, 1); !slices.Equal(got, want) {
		t.Errorf("List(1) of %d keys that tie = %v, want k000 to k099", MaxLimit+1, got)
	}
}

// TestCandidatesWhileRoom: while a day has fewer candidates than the
// board keeps, every key visited that day is one, however few its
// visits; then the board holds at most Candidates keys.
func TestCandidatesWhileRoom(t *testing.T) {
	f := mustFixture(t, 3, 0)
	f.visitN(t, "a", 3)
	f.visit(t, "b")
	f.visit(t, "c")
	f.wantList(t, 1, []Entry{{"a", 3}, {"b", 1}, {"c", 1}})
	f.visitN(t, "d", 2)
	f.visitN(t, "e", 3)
	if n := len(f.b.cur.Load().h); n != 3 {
		t.Errorf("a board of 3 candidates holds %d", n)
	}
	f.wantList(t, 1, []Entry{{"a", 3}, {"e", 3}, {"d", 2}})
}

// TestDefaultCandidates: Candidates 0 keeps the default number.
func TestDefaultCandidates(t *testing.T) {
	f := mustFixture(t, 0, 0)
	for i := range Candidates + 1 {
		f.visit(t, fmt.Sprintf("k%04d", i))
	}
	if n := len(f.b.cur.Load().h); n != Candidates {
		t.Errorf("a default board holds %d candidates after %d keys, want %d", n, Candidates+1, Candidates)
	}
}

// TestNewDayNewCandidates: at midnight the day's candidates start
// empty, so a key visited once today is listed even if yesterday's
// weakest candidate had more visits.
func TestNewDayNewCandidates(t *testing.T) {
	f := mustFixture(t, 1, 0)
	f.visitN(t, "a", 5)
	f.nextDay()
	f.visit(t, "b")
	f.wantList(t, 1, []Entry{{"b", 1}})
	f.wantList(t, 2, []Entry{{"a", 5}, {"b", 1}})
}

// TestEarlierDayOnly: a key visited only on an earlier day, not today,
// is in the lists that cover that day and not in the others.
func TestEarlierDayOnly(t *testing.T) {
	f := mustFixture(t, 10, 0)
	f.visitN(t, "old", 2)
	f.nextDay()
	f.nextDay()
	f.visit(t, "new")
	for _, tt := range []struct {
		n    int
		want []Entry
	}{
		{1, []Entry{{"new", 1}}},
		{2, []Entry{{"new", 1}}},
		{3, []Entry{{"old", 2}, {"new", 1}}},
	} {
		if got := f.list(t, tt.n); !slices.Equal(got, tt.want) {
			t.Errorf("List(%d) = %v, want %v", tt.n, got, tt.want)
		}
	}
}

// TestOldCandidatesAreNotRead: a list reads from the store only the
// candidates of the last MaxDays days, today's included, even when no
// visit came since midnight: a key last a candidate MaxDays days ago is
// not read.
func TestOldCandidatesAreNotRead(t *testing.T) {
	f := mustFixture(t, 10, 0)
	f.visit(t, "old")
	f.nextDay()
	f.visit(t, "x") // rolls the board: "old" is kept as the day before's
	for range MaxDays - 1 {
		f.nextDay()
	}
	reads := f.days.Load()
	f.wantList(t, MaxDays, []Entry{{"x", 1}})
	if n := f.days.Load() - reads; n != 1 {
		t.Errorf("the list read %d keys from the store, want 1 (x)", n)
	}
}

// TestLateVisit: a visit counted for the day before, after the board
// moved to today (a clock stepping back, or a visit that read the day
// just before midnight), changes neither today's candidates nor the
// day before's.
func TestLateVisit(t *testing.T) {
	f := mustFixture(t, 10, 0)
	f.visit(t, "a")
	f.nextDay()
	f.visit(t, "b")
	f.back.Store(1)
	f.b.Observe([]byte("late"), store.Counts{Total: 1, Today: 1})
	f.back.Store(0)
	f.wantList(t, 1, []Entry{{"b", 1}})
	f.wantList(t, 2, []Entry{{"a", 1}, {"b", 1}})
}

// TestRollTwice: of two visits that both saw midnight pass, the second
// to roll the board finds it rolled and keeps today's candidates (the
// race is played in order here: roll to the day the board is on).
func TestRollTwice(t *testing.T) {
	f := mustFixture(t, 10, 0)
	f.nextDay()
	f.visit(t, "a")
	f.b.roll(f.b.cur.Load().d)
	f.wantList(t, 1, []Entry{{"a", 1}})
}
