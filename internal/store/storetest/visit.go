package storetest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"visitors/internal/store"
)

// Incr counts one visit to key, making key if it is new, as /hello
// does for a name: Visit with create true, for a test that needs no
// word on who made the key.
func Incr(ctx context.Context, st store.Counter, key []byte) (store.Counts, error) {
	c, _, err := st.Visit(ctx, key, true)
	return c, err
}

// mustVisit calls Visit and fails t on an error.
func mustVisit(t *testing.T, st store.Counter, key string, create bool) (store.Counts, bool) {
	t.Helper()
	c, made, err := st.Visit(ctx, []byte(key), create)
	if err != nil {
		t.Fatalf("Visit(%q, %v): %v", key, create, err)
	}
	return c, made
}

// visitMakesOnlyIfAllowed: Visit counts a key the store holds whatever
// create says, makes a new one only with create, and reports made once,
// for the call that made it; a new key without create is ErrNewKey and
// leaves nothing behind, as does a deleted one; a locked key is answered,
// not counted.
func (s suite) visitMakesOnlyIfAllowed(t *testing.T) {
	st := s.open(t, Config{Dir: t.TempDir(), MaxKeys: 3})
	defer mustClose(t, st)
	if c, made, err := st.Visit(ctx, []byte("new"), false); !errors.Is(err, store.ErrNewKey) || made || c != (store.Counts{}) {
		t.Errorf("Visit(new, false) = %+v, %v, %v; want zero counts, false, ErrNewKey", c, made, err)
	}
	if got := mustGet(t, st, []byte("new")); got != (store.Counts{}) || st.Keys() != 0 {
		t.Errorf("after a refused Visit: Get = %+v, Keys() = %d; want zero, 0", got, st.Keys())
	}
	for i, tt := range []struct {
		create    bool
		wantTotal uint64
		wantMade  bool
	}{{true, 1, true}, {true, 2, false}, {false, 3, false}} {
		if c, made := mustVisit(t, st, "new", tt.create); c.Total != tt.wantTotal || c.Today != tt.wantTotal || made != tt.wantMade {
			t.Errorf("visit %d: Visit(new, %v) = %+v, made %v; want total %d, made %v", i, tt.create, c, made, tt.wantTotal, tt.wantMade)
		}
	}
	if _, err := st.Lock(ctx, []byte("new"), true); err != nil {
		t.Fatal(err)
	}
	if c, made := mustVisit(t, st, "new", false); !c.Locked || c.Total != 3 || made {
		t.Errorf("Visit(locked, false) = %+v, made %v; want locked at 3, not made", c, made)
	}
	if _, err := st.Delete(ctx, []byte("new")); err != nil {
		t.Fatal(err)
	}
	if _, _, err := st.Visit(ctx, []byte("new"), false); !errors.Is(err, store.ErrNewKey) {
		t.Errorf("Visit(deleted, false): %v, want ErrNewKey", err)
	}
	mustVisit(t, st, "a", true)
	mustVisit(t, st, "b", true)
	mustVisit(t, st, "c", true)
	if _, made, err := st.Visit(ctx, []byte("d"), true); !errors.Is(err, store.ErrTooManyKeys) || made {
		t.Errorf("Visit(new, true) on a full store: made %v, %v; want ErrTooManyKeys", made, err)
	}
	if _, _, err := st.Visit(ctx, []byte("d"), false); !errors.Is(err, store.ErrNewKey) {
		t.Errorf("Visit(new, false) on a full store: %v, want ErrNewKey", err)
	}
	if c, made := mustVisit(t, st, "a", false); c.Total != 2 || made {
		t.Errorf("Visit(a, false) on a full store = %+v, made %v; want total 2", c, made)
	}
}

// visitBudgetRace: clients racing on the same new keys, each making one
// only while a shared budget has room (a token taken before the call,
// given back if the call made nothing), never make more keys than the
// budget, each key is made once, and every visit that returned counts.
func (s suite) visitBudgetRace(t *testing.T) {
	const budget, keys, clients = 5, 12, 8
	for round := range 5 {
		st := s.open(t, Config{Dir: t.TempDir()})
		var left atomic.Int64
		left.Store(budget)
		var made [keys]atomic.Int64
		var counted atomic.Uint64
		var wg sync.WaitGroup
		start := make(chan struct{})
		for g := range clients {
			wg.Go(func() {
				<-start
				for i := range keys {
					k := (i + g) % keys
					create := left.Add(-1) >= 0
					if !create {
						left.Add(1)
					}
					_, m, err := st.Visit(ctx, fmt.Appendf(nil, "race-%d", k), create)
					switch {
					case err == nil:
						counted.Add(1)
					case !errors.Is(err, store.ErrNewKey):
						t.Errorf("Visit: %v", err)
					}
					if m {
						made[k].Add(1)
					} else if create {
						left.Add(1) // made nothing: the token goes back
					}
				}
			})
		}
		close(start)
		wg.Wait()
		var sumMade, sumTotal uint64
		for k := range keys {
			if n := made[k].Load(); n > 1 {
				t.Errorf("round %d: race-%d made %d times, want at most once", round, k, n)
			}
			sumMade += uint64(made[k].Load())
			sumTotal += mustGet(t, st, fmt.Appendf(nil, "race-%d", k)).Total
		}
		if sumMade > budget || uint64(st.Keys()) != sumMade || sumTotal != counted.Load() {
			t.Fatalf("round %d: %d keys made (budget %d), Keys() = %d, totals %d for %d visits counted; want at most the budget, Keys() the keys made, every counted visit in a total",
				round, sumMade, budget, st.Keys(), sumTotal, counted.Load())
		}
		mustClose(t, st)
	}
}
