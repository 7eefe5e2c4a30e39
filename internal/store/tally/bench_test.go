package tally

import (
	"testing"

	"visitors/internal/store"
)

// BenchmarkAdd is the hot path: a visit to a key on its latest day, no
// later day held (tally.Later): one compare-and-swap for the total and
// one for the day, no lock, no allocation.
func BenchmarkAdd(b *testing.B) {
	var tl Tally
	tl.Restore(0, 10, 0)
	for b.Loop() {
		tl.Add(10)
	}
}

// BenchmarkAddParallel is the hot path with every core on one key.
func BenchmarkAddParallel(b *testing.B) {
	var tl Tally
	tl.Restore(0, 10, 0)
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			tl.Add(10)
		}
	})
}

// BenchmarkAddNewDay is a key's first visit of a day: the rollover,
// which keeps the day that ended (the lock and the map).
func BenchmarkAddNewDay(b *testing.B) {
	var tl Tally
	d := store.Day(10)
	for b.Loop() {
		d++
		tl.Add(d)
		if d%1024 == 0 {
			tl.Prune(d)
		}
	}
}
