package memstore

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"visitors/internal/race"
	"visitors/internal/store"
	"visitors/internal/store/storetest"
)

var ctx = context.Background()

func TestHitNumbersEveryVisitOnce(t *testing.T) {
	s := New(Options{})
	const goroutines, per = 64, 1000
	got := make([][]uint64, goroutines)
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Go(func() {
			for range per {
				n, _ := s.Hit(ctx)
				got[g] = append(got[g], n)
			}
		})
	}
	wg.Wait()
	seen := make([]bool, goroutines*per+1)
	for _, ns := range got {
		for _, n := range ns {
			if n == 0 || n > goroutines*per || seen[n] {
				t.Fatalf("Hit() returned %d twice or out of range", n)
			}
			seen[n] = true
		}
	}
}

func TestIncrCountsExactly(t *testing.T) {
	s := New(Options{})
	const goroutines, per, keys = 64, 500, 8
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Go(func() {
			key := fmt.Appendf(nil, "k%d", g%keys)
			for range per {
				if _, err := s.Incr(ctx, key); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	for k := range keys {
		if c, _ := s.Get(ctx, fmt.Appendf(nil, "k%d", k)); c.Total != goroutines/keys*per || c.Today != goroutines/keys*per {
			got := c
			t.Errorf("Get(k%d) = %+v, want total and today %d", k, got, goroutines/keys*per)
		}
	}
	if got := s.Keys(); got != keys {
		t.Errorf("Keys() = %d, want %d", got, keys)
	}
}

func TestIncrDoesNotRetainKey(t *testing.T) {
	s := New(Options{})
	buf := []byte("alice")
	s.Incr(ctx, buf)
	copy(buf, "bobby") // the caller reuses its buffer
	if got, _ := s.Get(ctx, []byte("alice")); got.Total != 1 {
		t.Errorf("Get(alice) = %+v after the caller reused its buffer, want total 1", got)
	}
	if got, _ := s.Get(ctx, []byte("bobby")); got.Total != 0 {
		t.Errorf("Get(bobby) = %+v, want total 0", got)
	}
}

func TestMaxKeysHoldsUnderConcurrency(t *testing.T) {
	const limit = 100
	s := New(Options{MaxKeys: limit})
	var wg sync.WaitGroup
	var mu sync.Mutex
	accepted := 0
	for g := range 8 {
		wg.Go(func() {
			for i := range 1000 {
				_, err := s.Incr(ctx, fmt.Appendf(nil, "g%d-%d", g, i))
				switch {
				case err == nil:
					mu.Lock()
					accepted++
					mu.Unlock()
				case !errors.Is(err, store.ErrTooManyKeys):
					t.Errorf("Incr: %v", err)
				}
			}
		})
	}
	wg.Wait()
	if accepted != limit || s.Keys() != limit {
		t.Errorf("accepted %d new keys, Keys() = %d; want both %d", accepted, s.Keys(), limit)
	}
	// Every accepted key still counts after the limit is reached.
	var existing []byte
	for g := range 8 {
		for i := range 1000 {
			if c, _ := s.Get(ctx, fmt.Appendf(nil, "g%d-%d", g, i)); c.Total == 1 {
				existing = fmt.Appendf(nil, "g%d-%d", g, i)
			}
		}
	}
	if c, err := s.Incr(ctx, existing); err != nil || c.Total != 2 {
		t.Errorf("Incr(%s) on a full store = %+v, %v; want total 2, nil", existing, c, err)
	}
}

func TestIncrAllocatesNothingForKnownKeys(t *testing.T) {
	if race.Enabled {
		t.Skip("allocation budgets are checked without -race")
	}
	s := New(Options{})
	key := []byte("gopher")
	s.Incr(ctx, key)
	if got := testing.AllocsPerRun(1000, func() { s.Incr(ctx, key) }); got != 0 {
		t.Errorf("Incr allocs = %v, want 0", got)
	}
}

func BenchmarkIncr(b *testing.B) {
	s := New(Options{})
	key := []byte("gopher")
	b.ReportAllocs()
	for b.Loop() {
		s.Incr(ctx, key)
	}
}

func BenchmarkIncrParallel(b *testing.B) {
	s := New(Options{})
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		key := []byte("gopher")
		for pb.Next() {
			s.Incr(ctx, key)
		}
	})
}

func BenchmarkHitParallel(b *testing.B) {
	s := New(Options{})
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			s.Hit(ctx)
		}
	})
}

// BenchmarkLookup is the measurement behind the choice of sync.Map: many
// goroutines counting one hot key, against a map behind a sync.RWMutex
// (whose RLock alone writes a shared cache line). Both find the same
// *Entry and count the visit the same way; only the map differs.
func BenchmarkLookup(b *testing.B) {
	b.Run("impl=rwmutex", func(b *testing.B) {
		var mu sync.RWMutex
		m := map[string]*Entry{"gopher": {key: "gopher"}}
		day := New(Options{}).Today()
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			key := []byte("gopher")
			for pb.Next() {
				mu.RLock()
				e := m[string(key)]
				mu.RUnlock()
				e.countDay(day)
				e.total.Add(1)
			}
		})
	})
	b.Run("impl=syncmap", func(b *testing.B) {
		s := New(Options{})
		s.Incr(ctx, []byte("gopher"))
		day := s.Today()
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			key := []byte("gopher")
			for pb.Next() {
				e := s.lookup(key)
				e.countDay(day)
				e.total.Add(1)
			}
		})
	})
}

func TestDailyCountsRollOverAtUTCMidnight(t *testing.T) {
	clock := storetest.NewClock(time.Date(2026, 11, 20, 23, 0, 0, 0, time.UTC))
	s := New(Options{Now: clock.Now, Track: true})
	defer s.Close()
	key := []byte("gopher")
	for range 3 {
		s.Incr(ctx, key)
	}
	clock.Add(2 * time.Hour) // 2026-11-21 01:00
	s.Rollover()
	c, _ := s.Incr(ctx, key)
	if c.Total != 4 || c.Today != 1 {
		t.Errorf("first visit of the new day = %+v, want total 4, today 1", c)
	}
	clock.Add(48 * time.Hour) // 2026-11-23: a day with no visits in between
	s.Rollover()
	s.Incr(ctx, key)
	s.Incr(ctx, key)
	d, _ := s.Days(ctx, key, 5)
	if want := []uint64{0, 3, 1, 0, 2}; fmt.Sprint(d.Counts) != fmt.Sprint(want) {
		t.Errorf("Days(5) = %v, want %v", d.Counts, want)
	}
	if want := time.Date(2026, 11, 23, 0, 0, 0, 0, time.UTC); !d.Last.Equal(want) {
		t.Errorf("Days(5).Last = %v, want %v", d.Last, want)
	}
	if c, _ := s.Get(ctx, key); c.Total != 6 || c.Today != 2 {
		t.Errorf("Get = %+v, want total 6, today 2", c)
	}
	if c, _ := s.Get(ctx, []byte("nobody")); c != (store.Counts{}) {
		t.Errorf("Get(unknown) = %+v, want zero", c)
	}
}

func TestTakeDirtySeesEveryChangedKeyOnce(t *testing.T) {
	s := New(Options{Track: true})
	defer s.Close()
	for _, k := range []string{"a", "b", "a", "c", "a"} {
		s.Incr(ctx, []byte(k))
	}
	got := map[string]uint64{}
	s.TakeDirty(func(e *Entry) {
		e.Clean()
		total, _, _ := e.Snapshot()
		if _, dup := got[e.Key()]; dup {
			t.Errorf("TakeDirty gave %q twice", e.Key())
		}
		got[e.Key()] = total
	})
	if fmt.Sprint(got) != "map[a:3 b:1 c:1]" {
		t.Errorf("TakeDirty totals = %v, want map[a:3 b:1 c:1]", got)
	}
	n := 0
	s.TakeDirty(func(*Entry) { n++ })
	if n != 0 {
		t.Errorf("second TakeDirty gave %d entries, want 0", n)
	}
	s.Incr(ctx, []byte("b"))
	s.TakeDirty(func(e *Entry) {
		n++
		if e.Key() != "b" {
			t.Errorf("TakeDirty after one visit gave %q, want b", e.Key())
		}
	})
	if n != 1 {
		t.Errorf("TakeDirty after one visit gave %d entries, want 1", n)
	}
}
