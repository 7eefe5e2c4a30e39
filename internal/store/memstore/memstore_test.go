package memstore

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"visitors/internal/store"
)

var ctx = context.Background()

func TestHitNumbersEveryVisitOnce(t *testing.T) {
	s := New(0)
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
	s := New(0)
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
		if got, _ := s.Count(ctx, fmt.Appendf(nil, "k%d", k)); got != goroutines/keys*per {
			t.Errorf("Count(k%d) = %d, want %d", k, got, goroutines/keys*per)
		}
	}
	if got := s.Keys(); got != keys {
		t.Errorf("Keys() = %d, want %d", got, keys)
	}
}

func TestIncrDoesNotRetainKey(t *testing.T) {
	s := New(0)
	buf := []byte("alice")
	s.Incr(ctx, buf)
	copy(buf, "bobby") // the caller reuses its buffer
	if got, _ := s.Count(ctx, []byte("alice")); got != 1 {
		t.Errorf("Count(alice) = %d after the caller reused its buffer, want 1", got)
	}
	if got, _ := s.Count(ctx, []byte("bobby")); got != 0 {
		t.Errorf("Count(bobby) = %d, want 0", got)
	}
}

func TestMaxKeysHoldsUnderConcurrency(t *testing.T) {
	const limit = 100
	s := New(limit)
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
			if n, _ := s.Count(ctx, fmt.Appendf(nil, "g%d-%d", g, i)); n == 1 {
				existing = fmt.Appendf(nil, "g%d-%d", g, i)
			}
		}
	}
	if n, err := s.Incr(ctx, existing); err != nil || n != 2 {
		t.Errorf("Incr(%s) on a full store = %d, %v; want 2, nil", existing, n, err)
	}
}

func TestIncrAllocatesNothingForKnownKeys(t *testing.T) {
	s := New(0)
	key := []byte("gopher")
	s.Incr(ctx, key)
	if got := testing.AllocsPerRun(1000, func() { s.Incr(ctx, key) }); got != 0 {
		t.Errorf("Incr allocs = %v, want 0", got)
	}
}

func BenchmarkIncr(b *testing.B) {
	s := New(0)
	key := []byte("gopher")
	b.ReportAllocs()
	for b.Loop() {
		s.Incr(ctx, key)
	}
}

func BenchmarkIncrParallel(b *testing.B) {
	s := New(0)
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		key := []byte("gopher")
		for pb.Next() {
			s.Incr(ctx, key)
		}
	})
}

func BenchmarkHitParallel(b *testing.B) {
	s := New(0)
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			s.Hit(ctx)
		}
	})
}

// BenchmarkLookup is the measurement behind the choice of sync.Map: many
// goroutines counting one hot key, against a map behind a sync.RWMutex
// (whose RLock alone writes a shared cache line).
func BenchmarkLookup(b *testing.B) {
	b.Run("impl=rwmutex", func(b *testing.B) {
		var mu sync.RWMutex
		m := map[string]*atomic.Uint64{"gopher": new(atomic.Uint64)}
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			key := []byte("gopher")
			for pb.Next() {
				mu.RLock()
				c := m[string(key)]
				mu.RUnlock()
				c.Add(1)
			}
		})
	})
	b.Run("impl=syncmap", func(b *testing.B) {
		s := New(0)
		s.Incr(ctx, []byte("gopher"))
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			key := []byte("gopher")
			for pb.Next() {
				s.Incr(ctx, key)
			}
		})
	})
}
