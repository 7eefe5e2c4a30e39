package digest

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"testing"
	"unsafe"

	"visitors/internal/race"
	"visitors/lab/allocs"
)

// TestWhyAllocsOutputSlice checks the write-up's reading of steps 6 to 8
// with the escape analysis: the output slice is the one allocation left
// while it is returned through unsafe (steps 6 and 7: the constant size
// of step 7's make([]byte, 0, 256) does not keep it on the stack), and
// it goes only when step 8 stops returning it. Counted exactly, at
// steady state: the pools filled by a first call, and no garbage
// collection during the count, which would empty them (see
// TestWhyAllocsPoolRefill). A stray allocation of the runtime or the test
// framework during the 20 calls is tolerated (0.05 a call: seen about
// once in 20 runs of the test alone, with an exact comparison); one of
// the step's own, 1 a call, is not.
func TestWhyAllocsOutputSlice(t *testing.T) {
	if race.Enabled {
		t.Skip("allocation counts are checked without -race: sync.Pool drops items under it")
	}
	defer debug.SetGCPercent(debug.SetGCPercent(-1))
	for _, tt := range []struct {
		step int
		f    func(int) string
		want float64
	}{{6, Step6, 1}, {7, Step7, 1}, {8, Step8, 0}} {
		got := allocs.PerRun(20, func() { tt.f(12345) })
		if got < tt.want || got >= tt.want+0.1 {
			t.Errorf("step %d: %.2f allocs per call, want %v", tt.step, got, tt.want)
		}
	}
}

// TestWhyAllocsPoolRefill checks the write-up's reason for the fractions
// the benchmarks of steps 6 to 10 report above the steady-state count: a
// garbage collection empties the pools (two cycles: the first moves
// their items to a victim cache, the second drops them), and the next
// call allocates what the pools' New makes.
func TestWhyAllocsPoolRefill(t *testing.T) {
	if race.Enabled {
		t.Skip("allocation counts are checked without -race: sync.Pool drops items under it")
	}
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	oneCall := func(f func()) uint64 {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		f()
		runtime.ReadMemStats(&after)
		return after.Mallocs - before.Mallocs
	}
	dst := make([]byte, 0, 256)
	for _, tt := range []struct {
		step int
		f    func()
	}{
		{8, func() { Step8(12345) }},
		{10, func() { dst = AppendDigest(dst[:0], 12345) }},
	} {
		tt.f()
		warm := oneCall(tt.f)
		runtime.GC()
		runtime.GC()
		cold := oneCall(tt.f)
		if cold <= warm {
			t.Errorf("step %d: %d allocs in a call after two GCs, %d before them; want more after", tt.step, cold, warm)
		}
		t.Logf("step %d: %d allocs with the pools filled, %d after two GCs", tt.step, warm, cold)
	}
}

// countInputs are the fixed inputs of TestWhyAllocsSteps0to5: two 19-digit
// numbers like most of the article's rand.Int() inputs, whose output is
// long (sum[0] = 249) and short (29, within the 32 bytes a slice of
// variable size may keep on the stack), and the article's 12345.
var countInputs = []struct {
	n, sum0 int
	// growths is how many times bytes.Buffer allocates to hold the n's
	// digits 100,000 times: 1.9 MB, or 500 KB for 12345.
	growths float64
	// appendGrowths is how many times append allocates b, from nil, past
	// the 32 bytes it starts with on the stack: 32 → 64 → 128 → 256.
	appendGrowths float64
}{
	{1000000000000000056, 249, 16, 3},
	{1000000000000000007, 29, 16, 0},
	{12345, 28, 14, 0},
}

// TestWhyAllocsSteps0to5 checks the write-up's account of steps 0 to 5:
// each step's exact allocations per call are the sum of the causes it
// names, each counted on its own where it can be.
//
//	step 5: strconv.Itoa's string, the 1.9 MB input buffer (on the heap
//	        though it "does not escape": too large for a frame), the
//	        output slice b (escapes through the unsafe return): 3, as
//	        the article published; its guess "buf, b and sha256.Sum256"
//	        is wrong about Sum256, which allocates nothing
//	step 4: Itoa's string, bytes.Buffer's growths, b (escapes through
//	        the unsafe return, so on the heap even when short)
//	step 3: Itoa's string, the growths, b made once (on the heap only
//	        when sum[0] > 32: it does not escape but its size is not a
//	        constant), string(b)
//	step 2: Itoa's string, the growths, b's append growths, string(b)
//	step 1: step 2 and one strings.Repeat per letter, sum[0]
//	step 0: step 1 and 99,999 more strconv.Itoa strings, one per
//	        iteration (the 100,000th is step 1's)
func TestWhyAllocsSteps0to5(t *testing.T) {
	if race.Enabled {
		t.Skip("allocation counts are checked without -race")
	}
	var sink []byte
	var ssink string
	var bsink byte
	if got := allocs.PerRun(100, func() { ssink = strings.Repeat(alphabet, 10) }); got != 1 {
		t.Errorf("strings.Repeat: %.2f allocs, want 1", got)
	}
	block := make([]byte, 64<<10)
	if got := allocs.PerRun(100, func() { s := sha256.Sum256(block); bsink = s[0] }); got >= 0.1 {
		t.Errorf("sha256.Sum256: %.2f allocs, want 0", got)
	}
	for _, in := range countInputs {
		t.Run(fmt.Sprint(in.n), func(t *testing.T) {
			if got := len(Step10(in.n)); got != in.sum0 {
				t.Fatalf("sum[0] = %d, want %d", got, in.sum0)
			}
			itoa := allocs.PerRun(100, func() { ssink = strconv.Itoa(in.n) })
			if itoa != 1 {
				t.Errorf("strconv.Itoa(%d): %.2f allocs, want 1", in.n, itoa)
			}
			x := strconv.Itoa(in.n)
			if got := allocs.PerRun(2, func() {
				var buf bytes.Buffer
				for range Repeats {
					buf.WriteString(x)
				}
				sink = buf.Bytes()
			}); got < in.growths || got > in.growths+0.5 {
				t.Errorf("bytes.Buffer of %d copies of %q: %.2f allocs, want %v", Repeats, x, got, in.growths)
			}
			heapB := 0.0 // step 3's make([]byte, 0, int(sum[0]))
			if in.sum0 > 32 {
				heapB = 1
			}
			want := make([]float64, 6)
			want[5] = itoa + 1 + 1
			want[4] = itoa + in.growths + 1
			want[3] = itoa + in.growths + heapB + 1
			want[2] = itoa + in.growths + in.appendGrowths + 1
			want[1] = want[2] + float64(in.sum0)
			want[0] = want[1] + (Repeats-1)*itoa
			for i := range 6 {
				slack := 0.5 // one allocation of the runtime in 2 calls
				if i == 0 {
					slack = 1 // 6.6 MB of garbage a call: a GC cycle may add one
				}
				got := allocs.PerRun(2, func() { ssink = Steps[i](in.n) })
				if got < want[i] || got > want[i]+slack {
					t.Errorf("step %d: %.2f allocs a call, want %v", i, got, want[i])
				}
			}
		})
	}
	_, _, _ = sink, ssink, bsink
}

// step5AppendInt is Step5 with the digits appended to an array on the
// stack instead of strconv.Itoa's string.
func step5AppendInt(n int) string {
	var digits [20]byte
	x := strconv.AppendInt(digits[:0], int64(n), 10)
	buf := make([]byte, 0, 100000*len(x))
	for i := 0; i < 100000; i++ {
		buf = append(buf, x...)
	}
	sum := sha256.Sum256(buf)
	b := make([]byte, 0, int(sum[0]))
	for i := 0; i < int(sum[0]); i++ {
		x := sum[(i*7+1)%len(sum)] ^ sum[(i*5+3)%len(sum)]
		c := "abcdefghijklmnopqrstuvwxyz"[x%26]
		b = append(b, c)
	}
	return *(*string)(unsafe.Pointer(&b))
}

// TestWhyAllocsStep5Itoa: the third of step 5's allocations is
// strconv.Itoa's string: without it, 2 (the input buffer and b). And
// Itoa allocates nothing for 0 to 99, which strconv keeps as constants, so
// for those inputs hoisting it (0 → 1) saves nothing.
func TestWhyAllocsStep5Itoa(t *testing.T) {
	if race.Enabled {
		t.Skip("allocation counts are checked without -race")
	}
	var sink string
	n := countInputs[0].n
	if s5, sa := allocs.PerRun(2, func() { sink = Step5(n) }), allocs.PerRun(2, func() { sink = step5AppendInt(n) }); s5 < 3 || s5 > 3.5 || sa < 2 || sa > 2.5 { // one allocation of the runtime in 2 calls: +0.5
		t.Errorf("step 5: %.2f allocs a call, with AppendInt %.2f; want 3 and 2", s5, sa)
	}
	s0, s1 := allocs.PerRun(1, func() { sink = Step0(42) }), allocs.PerRun(1, func() { sink = Step1(42) })
	if s0 < s1-1 || s0 > s1+1 { // a GC cycle may add one
		t.Errorf("n = 42: step 0 %.2f, step 1 %.2f allocs; want the same", s0, s1)
	}
	_ = sink
}
