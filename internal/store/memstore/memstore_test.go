package memstore

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"visitors/internal/race"
	"visitors/internal/store"
	"visitors/internal/store/storetest"
	"visitors/internal/store/tally"
)

var ctx = context.Background()

func TestConformance(t *testing.T) {
	storetest.Run(t, storetest.Backend{
		Open: func(t *testing.T, c storetest.Config) store.Store {
			return New(Options{MaxKeys: c.MaxKeys, Now: c.Now})
		},
	})
}

func TestIncrAllocatesNothingForKnownKeys(t *testing.T) {
	if race.Enabled {
		t.Skip("allocation budgets are checked without -race")
	}
	s := New(Options{})
	key := []byte("gopher")
	storetest.Incr(ctx, s, key)
	if got := testing.AllocsPerRun(1000, func() { storetest.Incr(ctx, s, key) }); got != 0 {
		t.Errorf("Incr allocs = %v, want 0", got)
	}
}

// TestHitStopsAtItsBound: /hi hands out numbers up to store.MaxHits and
// then refuses, as every backend does. The in-memory store has no import
// to bring its counter near the bound (storetest's check of it runs on
// the backends that have one), so the test sets it.
func TestHitStopsAtItsBound(t *testing.T) {
	s := New(Options{})
	defer s.Close()
	s.hits.Store(store.MaxHits - 2)
	var got []uint64
	for range 3 {
		n, err := s.Hit(ctx)
		if errors.Is(err, store.ErrHiExhausted) {
			break
		}
		if err != nil {
			t.Fatalf("Hit: %v", err)
		}
		got = append(got, n)
	}
	if want := []uint64{store.MaxHits - 1, store.MaxHits}; !slices.Equal(got, want) {
		t.Errorf("from MaxHits-2, Hit handed out %v, then ErrHiExhausted; want %v", got, want)
	}
	if _, err := s.Hit(ctx); !errors.Is(err, store.ErrHiExhausted) {
		t.Errorf("Hit past the bound = %v, want ErrHiExhausted", err)
	}
	if n := s.hits.Load(); n != store.MaxHits {
		t.Errorf("the counter after refused Hits = %d, want it to stay at MaxHits %d", n, uint64(store.MaxHits))
	}
}

func BenchmarkIncr(b *testing.B) {
	s := New(Options{})
	key := []byte("gopher")
	b.ReportAllocs()
	for b.Loop() {
		storetest.Incr(ctx, s, key)
	}
}

func BenchmarkIncrParallel(b *testing.B) {
	s := New(Options{})
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		key := []byte("gopher")
		for pb.Next() {
			storetest.Incr(ctx, s, key)
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
// tally and count the visit the same way; only the map differs.
func BenchmarkLookup(b *testing.B) {
	b.Run("impl=rwmutex", func(b *testing.B) {
		var mu sync.RWMutex
		m := map[string]*tally.Tally{"gopher": new(tally.Tally)}
		day := store.DayOf(time.Now())
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			key := []byte("gopher")
			for pb.Next() {
				mu.RLock()
				t := m[string(key)]
				mu.RUnlock()
				t.Add(day)
			}
		})
	})
	b.Run("impl=tallymap", func(b *testing.B) {
		m := tally.NewMap(0, func(k string) *entry { return &entry{key: k} }, func(e *entry) string { return e.key })
		m.LoadOrNew([]byte("gopher"))
		day := store.DayOf(time.Now())
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			key := []byte("gopher")
			for pb.Next() {
				m.Load(key).Add(day)
			}
		})
	})
}

func TestDailyCountsRollOverAtUTCMidnight(t *testing.T) {
	clock := storetest.NewClock(storetest.At(0, "23:00"))
	s := New(Options{Now: clock.Now})
	defer s.Close()
	key := []byte("gopher")
	for range 3 {
		storetest.Incr(ctx, s, key)
	}
	clock.Add(2 * time.Hour) // the anchor day + 1, 01:00
	s.Rollover()
	c, _ := storetest.Incr(ctx, s, key)
	if c.Total != 4 || c.Today != 1 {
		t.Errorf("first visit of the new day = %+v, want total 4, today 1", c)
	}
	clock.Add(48 * time.Hour) // + 3: a day with no visits in between
	s.Rollover()
	storetest.Incr(ctx, s, key)
	storetest.Incr(ctx, s, key)
	d, _ := s.Days(ctx, key, 5)
	if want := []uint64{0, 3, 1, 0, 2}; fmt.Sprint(d.Counts) != fmt.Sprint(want) {
		t.Errorf("Days(5) = %v, want %v", d.Counts, want)
	}
	if want := storetest.At(3, "00:00"); !d.Last.Equal(want) {
		t.Errorf("Days(5).Last = %v, want %v", d.Last, want)
	}
	if c, _ := s.Get(ctx, key); c.Total != 6 || c.Today != 2 {
		t.Errorf("Get = %+v, want total 6, today 2", c)
	}
	if c, _ := s.Get(ctx, []byte("nobody")); c != (store.Counts{}) {
		t.Errorf("Get(unknown) = %+v, want zero", c)
	}
}
