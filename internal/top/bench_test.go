package top

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"visitors/internal/store"
	"visitors/internal/store/memstore"
	"visitors/internal/store/storetest"
)

// million is a memory store holding 1M keys, each visited on the first
// of 30 days, and a board fed with every visit; on each of the 30 days a
// different 1,000 keys were visited twice more, so a 30-day list has
// 30,000 candidates: the most a board holds.
type million struct {
	st    *memstore.Store
	b     *Board
	clock *storetest.Clock
	keys  [][]byte
}

var millionOnce = sync.OnceValue(func() *million {
	const n = 1_000_000
	clock := storetest.NewClock(storetest.At(0, "12:00"))
	st := memstore.New(memstore.Options{Now: clock.Now})
	m := &million{st: st, clock: clock, keys: make([][]byte, n)}
	var today atomic.Uint32 // as tally.Calendar keeps it: one atomic load a visit
	today.Store(uint32(store.DayOf(clock.Now())))
	m.b = New(Options{Store: st, Today: func() store.Day { return store.Day(today.Load()) }, Now: clock.Now, TTL: time.Hour})
	ctx := context.Background()
	visit := func(k []byte) {
		c, err := storetest.Incr(ctx, st, k)
		if err != nil {
			panic(err)
		}
		m.b.Observe(k, c)
	}
	for i := range m.keys {
		m.keys[i] = fmt.Appendf(nil, "user%07d/repo", i)
		visit(m.keys[i])
	}
	for d := range MaxDays {
		if d > 0 {
			clock.Add(24 * time.Hour)
			st.Rollover()
			today.Store(uint32(store.DayOf(clock.Now())))
		}
		for i := range Candidates {
			k := m.keys[d*Candidates+i]
			visit(k)
			visit(k)
		}
	}
	return m
})

// BenchmarkObserve is what the board adds to each counted visit, with
// 1M keys: a visit below every candidate (most of them), and a visit to
// a candidate.
func BenchmarkObserve(b *testing.B) {
	m := millionOnce()
	b.Run("keys=1M/below", func(b *testing.B) {
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			i = (i + 7919) % len(m.keys)
			m.b.Observe(m.keys[i], store.Counts{Total: 1, Today: 1})
		}
	})
	hot := m.keys[(MaxDays-1)*Candidates]
	n := uint64(3)
	b.Run("keys=1M/candidate", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			n++
			m.b.Observe(hot, store.Counts{Total: n, Today: n})
		}
	})
}

func BenchmarkObserveParallel(b *testing.B) {
	m := millionOnce()
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		i := rand.IntN(len(m.keys))
		for pb.Next() {
			i = (i + 7919) % len(m.keys)
			m.b.Observe(m.keys[i], store.Counts{Total: 1, Today: 1})
		}
	})
}

// BenchmarkList is what /top.json costs with 1M keys: a list from the
// cache (every request within the TTL), a list ranked afresh (once per
// TTL per days), and, for scale, the full scan of every key that the
// board spares.
func BenchmarkList(b *testing.B) {
	m := millionOnce()
	ctx := context.Background()
	for _, days := range []int{1, 30} {
		b.Run(fmt.Sprintf("keys=1M/days=%d/cached", days), func(b *testing.B) {
			m.b.List(ctx, days)
			b.ReportAllocs()
			for b.Loop() {
				m.b.List(ctx, days)
			}
		})
		if days == 30 { // one ranking makes every list
			b.Run("keys=1M/rank", func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					m.b.rank(ctx)
				}
			})
		}
		b.Run(fmt.Sprintf("keys=1M/days=%d/fullscan", days), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				var best uint64
				for _, k := range m.keys {
					d, _ := m.st.Days(ctx, k, days)
					var sum uint64
					for _, v := range d.Counts {
						sum += v
					}
					best = max(best, sum)
				}
			}
		})
	}
}
