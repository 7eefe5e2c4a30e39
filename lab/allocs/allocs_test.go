package allocs

import (
	"flag"
	"testing"

	"visitors/internal/race"
)

var sink []byte

// TestAllocsPerRunIsUnrounded allocates on every other call: PerRun says
// 0.5 where testing.AllocsPerRun says 0. (Its name matches the -run
// 'Allocs|Allocate' of scripts/test.sh's allocation-budget step, the one
// run without -race, under which it is skipped.)
func TestAllocsPerRunIsUnrounded(t *testing.T) {
	if race.Enabled {
		t.Skip("allocation counts are checked without -race")
	}
	n := 0
	f := func() {
		n++
		if n%2 == 0 {
			sink = make([]byte, 64)
		}
	}
	if got := PerRun(100, f); got != 0.5 {
		t.Errorf("PerRun = %v, want 0.5", got)
	}
	if got := testing.AllocsPerRun(100, f); got != 0 {
		t.Errorf("testing.AllocsPerRun = %v, want 0 (it rounds down)", got)
	}
}

// TestAllocsExactIsUnrounded: a benchmark that allocates on every other
// iteration reports 0.5 exact-allocs/op through Exact, where go test's
// allocs/op says 0. The lab's tables show this metric.
func TestAllocsExactIsUnrounded(t *testing.T) {
	if race.Enabled {
		t.Skip("allocation counts are checked without -race")
	}
	// 100,000 iterations, not a second's worth: the allocation-budget
	// step of scripts/test.sh runs this test.
	bt := flag.Lookup("test.benchtime")
	defer bt.Value.Set(bt.Value.String())
	if err := bt.Value.Set("100000x"); err != nil {
		t.Fatal(err)
	}
	res := testing.Benchmark(func(b *testing.B) {
		n := 0
		defer Exact(b)()
		for b.Loop() {
			n++
			if n%2 == 0 {
				sink = make([]byte, 64)
			}
		}
	})
	if res.N < 1000 {
		t.Fatalf("the benchmark ran %d iterations, want 1000 or more", res.N)
	}
	// A stray allocation of the runtime or the framework may add a few
	// over millions of iterations.
	if got := res.Extra[Unit]; got < 0.5 || got > 0.501 {
		t.Errorf("%s = %v over %d iterations, want 0.5", Unit, got, res.N)
	}
	if got := res.AllocsPerOp(); got != 0 {
		t.Errorf("allocs/op = %d, want 0 (it rounds down)", got)
	}
}
