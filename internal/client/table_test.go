package client

import (
	"math/rand/v2"
	"testing"
)

// TestTable: a table holds what a map of the same puts and deletes
// holds, whatever the order, with keys that collide on their home slot,
// through growth, sweeps and random drops; lookups of absent keys find
// nothing.
func TestTable(t *testing.T) {
	for _, seed := range []uint64{1, 2, 3, 4} {
		r := rand.New(rand.NewPCG(seed, seed))
		tb := newTable(100)
		model := map[uint64]int64{}
		key := func() uint64 {
			// Few distinct homes, at the end of the slots as well as the
			// start whatever their number: long clusters of probes, some
			// across the end.
			homes := [...]uint64{0, 1, 2, 5, 6, 7, 13, 14, 15, 125, 126, 127, 253, 254, 255}
			return homes[r.IntN(len(homes))]<<32 | r.Uint64N(1<<20) + 1
		}
		check := func(step int) {
			t.Helper()
			if tb.n != len(model) {
				t.Fatalf("seed %d, step %d: n = %d, want %d", seed, step, tb.n, len(model))
			}
			for k, v := range model {
				if e := tb.get(k); e == nil || e.visits.last != v {
					t.Fatalf("seed %d, step %d: key %x lost", seed, step, k)
				}
			}
			held := 0
			for _, k := range tb.keys {
				if k != 0 {
					held++
					if _, ok := model[k]; !ok {
						t.Fatalf("seed %d, step %d: key %x held, deleted", seed, step, k)
					}
				}
			}
			if held != len(model) {
				t.Fatalf("seed %d, step %d: %d slots used, want %d", seed, step, held, len(model))
			}
		}
		for step := range 5000 {
			switch op := r.IntN(100); {
			case op < 60 && tb.n < 100:
				k := key()
				if _, ok := model[k]; ok {
					continue
				}
				v := int64(step)
				tb.put(k, entry{visits: bucket{last: v}})
				model[k] = v
			case op < 70:
				odd := r.IntN(2) == 0
				tb.sweep(func(e *entry) bool { return e.visits.last%2 == 1 == odd })
				for k, v := range model {
					if v%2 == 1 == odd {
						delete(model, k)
					}
				}
			case op < 75:
				n := tb.n
				tb.dropFrom(r.Int(), 3)
				for k := range model {
					if tb.get(k) == nil {
						delete(model, k)
					}
				}
				if want := max(0, n-3); len(model) != want {
					t.Fatalf("seed %d, step %d: dropFrom(3) of %d left %d", seed, step, n, len(model))
				}
			default:
				k := key()
				if _, ok := model[k]; (tb.get(k) != nil) != ok {
					t.Fatalf("seed %d, step %d: get(%x) found %v, want %v", seed, step, k, !ok, ok)
				}
			}
			check(step)
			if len(tb.keys) > tb.max || len(tb.entries) != len(tb.keys) {
				t.Fatalf("seed %d: %d keys and %d entries, max %d", seed, len(tb.keys), len(tb.entries), tb.max)
			}
		}
	}
}
