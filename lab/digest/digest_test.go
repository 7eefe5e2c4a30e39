package digest

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"unsafe"

	"visitors/lab/allocs"

	"visitors/internal/race"
)

// all are every step with the string signature, 0 to 10. Step 8's result
// is cloned at once: it aliases pooled memory.
var all = []func(int) string{Step0, Step1, Step2, Step3, Step4, Step5, Step6, Step7,
	func(n int) string { return strings.Clone(Step8(n)) }, Step9, Step10}

func TestKnownValue(t *testing.T) {
	const want = "aajmtxaattdzsxnukawxwhmfotnm" // the article's check
	for i, step := range all {
		if got := step(12345); got != want {
			t.Errorf("Step%d(12345) = %q, want %q", i, got, want)
		}
	}
}

func TestStepsAgree(t *testing.T) {
	inputs := []int{0, 1, 7, 42, 99, 12345, -1, -987654321, 1 << 40, -(1 << 62), 5577006791947779410}
	for _, n := range inputs {
		want := Step0(n)
		for i, step := range all[1:] {
			if got := step(n); got != want {
				t.Errorf("Step%d(%d) = %q, Step0 = %q", i+1, n, got, want)
			}
		}
	}
}

// TestMuseumUnsafeAlias shows the article's last step's bug: its result
// points into a pooled buffer, so a later call rewrites a string the
// caller still holds. The lab's steps 9 and 10 pass the same test.
func TestMuseumUnsafeAlias(t *testing.T) {
	tests := []struct {
		name      string
		f         func(int) string
		wantAlias bool
	}{
		{"step=8", Step8, true},
		{"step=9", Step9, false},
		{"step=10", Step10, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			aliased := false
			// sync.Pool may hand a later call another buffer (always
			// under -race, which drops some items on purpose; or after a
			// GC), so try a few times.
			for try := 0; try < 50 && !aliased; try++ {
				first := tt.f(12345)
				keep := strings.Clone(first)
				tt.f(777)
				aliased = first != keep
				if aliased {
					t.Logf("Step(12345) = %q, after Step(777) it reads %q", keep, first)
				}
			}
			if aliased != tt.wantAlias {
				t.Errorf("result rewritten by a later call = %v, want %v", aliased, tt.wantAlias)
			}
		})
	}
}

// TestAppendDigestDoesNotAlias checks the lab's steps from many
// goroutines: a result survives later calls that reuse the pool, and
// appending keeps what dst held.
func TestAppendDigestDoesNotAlias(t *testing.T) {
	for name, f := range map[string]func([]byte, int) []byte{"AppendDigestDirect": AppendDigestDirect, "AppendDigest": AppendDigest} {
		t.Run(name, func(t *testing.T) {
			first := f(nil, 12345)
			keep := string(first)
			var wg sync.WaitGroup
			for g := range 8 {
				wg.Go(func() {
					for i := range 4 {
						f(nil, g*10+i)
					}
				})
			}
			wg.Wait()
			f(make([]byte, 0, 256), 777)
			if string(first) != keep {
				t.Fatalf("result changed from %q to %q after later calls: it aliases pooled memory", keep, first)
			}
			if got := string(f([]byte("prefix:"), 12345)); got != "prefix:"+keep {
				t.Errorf("%s(prefix, 12345) = %q, want %q", name, got, "prefix:"+keep)
			}
		})
	}
}

func TestAppendDigestAllocatesNothing(t *testing.T) {
	if race.Enabled {
		t.Skip("allocation budgets are checked without -race: sync.Pool drops items under it")
	}
	for name, f := range map[string]func([]byte, int) []byte{"AppendDigestDirect": AppendDigestDirect, "AppendDigest": AppendDigest} {
		dst := make([]byte, 0, 256)
		f(dst, 1) // fill the pool
		if got := testing.AllocsPerRun(20, func() { dst = f(dst[:0], rand.Int()) }); got != 0 {
			t.Errorf("%s allocs = %v, want 0", name, got)
		}
	}
}

// inputs returns the random inputs the benchmarks feed, seeded so that
// every run hashes the same numbers. The article measured with
// rand.Int(): 19-digit numbers, and a sum[0] that is mostly above the 32
// bytes a variable-size make may keep on the stack. A small fixed input
// such as 12345 gives different allocation counts (see docs/lab/digest.md).
func inputs() func() int {
	r := rand.New(rand.NewPCG(2021, 1))
	return func() int { return int(r.Int64()) }
}

// BenchmarkDigest runs every step on random inputs from one goroutine.
func BenchmarkDigest(b *testing.B) {
	for i, step := range Steps {
		b.Run(fmt.Sprintf("step=%d", i), func(b *testing.B) {
			next := inputs()
			defer allocs.Exact(b)()
			for b.Loop() {
				step(next())
			}
		})
	}
	for i, f := range []func([]byte, int) []byte{AppendDigestDirect, AppendDigest} {
		b.Run(fmt.Sprintf("step=%d", len(Steps)+i), func(b *testing.B) {
			next := inputs()
			dst := make([]byte, 0, 256)
			defer allocs.Exact(b)()
			for b.Loop() {
				dst = f(dst[:0], next())
			}
		})
	}
}

// BenchmarkDigestParallel runs the first step, the article's last and
// the lab's two from every core: the pools are shared.
func BenchmarkDigestParallel(b *testing.B) {
	for _, i := range []int{0, 8} {
		b.Run(fmt.Sprintf("step=%d", i), func(b *testing.B) {
			defer allocs.Exact(b)()
			b.RunParallel(func(pb *testing.PB) {
				next := inputs()
				for pb.Next() {
					Steps[i](next())
				}
			})
		})
	}
	for i, f := range []func([]byte, int) []byte{AppendDigestDirect, AppendDigest} {
		b.Run(fmt.Sprintf("step=%d", len(Steps)+i), func(b *testing.B) {
			defer allocs.Exact(b)()
			b.RunParallel(func(pb *testing.PB) {
				next := inputs()
				dst := make([]byte, 0, 256)
				for pb.Next() {
					dst = f(dst[:0], next())
				}
			})
		})
	}
}

// TestMuseumUnsafeStringChanges shows what the article's "the buffer must
// not be modified, or it will panic" gets wrong: writing a buffer that a
// string made by its unsafe conversion points into does not panic, it
// silently changes the string.
func TestMuseumUnsafeStringChanges(t *testing.T) {
	buf := []byte("abc")
	s := *(*string)(unsafe.Pointer(&buf))
	buf[0] = 'x' // no panic
	if s != "xbc" {
		t.Errorf("s = %q after the buffer changed, want %q", s, "xbc")
	}
}
