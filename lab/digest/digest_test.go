package digest

import (
	"fmt"
	"sync"
	"testing"

	"visitors/internal/race"
)

func TestKnownValue(t *testing.T) {
	const want = "aajmtxaattdzsxnukawxwhmfotnm"
	all := append(Steps[:len(Steps):len(Steps)], Step5, Step6)
	for i, step := range all {
		if got := step(12345); got != want {
			t.Errorf("Step%d(12345) = %q, want %q", i, got, want)
		}
	}
}

func TestStepsAgree(t *testing.T) {
	inputs := []int{0, 1, 7, 42, 99, 12345, -1, -987654321, 1 << 40, -(1 << 62)}
	for _, n := range inputs {
		want := Step0(n)
		for i, step := range append(Steps[1:len(Steps):len(Steps)], Step5, Step6) {
			if got := step(n); got != want {
				t.Errorf("Step%d(%d) = %q, Step0 = %q", i+1, n, got, want)
			}
		}
	}
}

// TestAppendDigestDoesNotAlias is the test that the article's unsafe last
// step fails: a result must survive later calls, from any goroutine,
// that reuse the pool.
func TestAppendDigestDoesNotAlias(t *testing.T) {
	first := AppendDigest(nil, 12345)
	keep := string(first)
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 4 {
				AppendDigest(nil, g*10+i)
			}
		})
	}
	wg.Wait()
	AppendDigest(make([]byte, 0, 256), 777)
	if string(first) != keep {
		t.Fatalf("AppendDigest's result changed from %q to %q after later calls: it aliases pooled memory", keep, first)
	}
	// And appending keeps what dst held.
	if got := string(AppendDigest([]byte("prefix:"), 12345)); got != "prefix:"+keep {
		t.Errorf("AppendDigest(prefix, 12345) = %q, want %q", got, "prefix:"+keep)
	}
}

func TestAppendDigestAllocatesNothing(t *testing.T) {
	if race.Enabled {
		t.Skip("allocation budgets are checked without -race: sync.Pool drops items under it")
	}
	for name, f := range map[string]func([]byte, int) []byte{"AppendDigestDirect": AppendDigestDirect, "AppendDigest": AppendDigest} {
		dst := make([]byte, 0, 256)
		f(dst, 1) // fill the pool
		if got := testing.AllocsPerRun(20, func() { dst = f(dst[:0], 12345) }); got != 0 {
			t.Errorf("%s allocs = %v, want 0", name, got)
		}
	}
}

func BenchmarkDigest(b *testing.B) {
	for i, step := range Steps {
		b.Run(fmt.Sprintf("step=%d", i), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				step(12345)
			}
		})
	}
	for i, f := range []func([]byte, int) []byte{AppendDigestDirect, AppendDigest} {
		b.Run(fmt.Sprintf("step=%d", len(Steps)+i), func(b *testing.B) {
			dst := make([]byte, 0, 256)
			b.ReportAllocs()
			for b.Loop() {
				dst = f(dst[:0], 12345)
			}
		})
	}
}

// BenchmarkDigestParallel runs the first and last steps from every core:
// the pool of hashers is shared.
func BenchmarkDigestParallel(b *testing.B) {
	b.Run("step=0", func(b *testing.B) {
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				Step0(12345)
			}
		})
	})
	for i, f := range []func([]byte, int) []byte{AppendDigestDirect, AppendDigest} {
		b.Run(fmt.Sprintf("step=%d", len(Steps)+i), func(b *testing.B) {
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				dst := make([]byte, 0, 256)
				for pb.Next() {
					dst = f(dst[:0], 12345)
				}
			})
		})
	}
}
