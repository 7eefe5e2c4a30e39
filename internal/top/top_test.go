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
}

func (f *fixture) Days(ctx context.Context, key []byte, n int) (store.Daily, error) {
	f.days.Add(1)
	return f.st.Days(ctx, key, n)
}

func mustFixture(t testing.TB, candidates int, ttl time.Duration) *fixture {
	t.Helper()
	clock := storetest.NewClock(time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC))
	st := memstore.New(memstore.Options{Now: clock.Now})
	t.Cleanup(func() { st.Close() })
	f := &fixture{st: st, clock: clock}
	f.b = New(Options{Store: daysOnly{st, f}, Today: func() store.Day { return store.DayOf(clock.Now()) }, TTL: ttl, Candidates: candidates, Now: clock.Now})
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
	c, err := f.st.Incr(context.Background(), []byte(key))
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
