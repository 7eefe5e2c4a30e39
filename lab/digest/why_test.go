package digest

import (
	"testing"

	"visitors/internal/race"
	"visitors/lab/allocs"
)

// TestWhyAllocsOutputSlice checks the write-up's reading of steps 6 to 8
// with the escape analysis: the output slice is the one allocation left
// while it is returned through unsafe (steps 6 and 7: the constant size
// of step 7's make([]byte, 0, 256) does not keep it on the stack), and
// it goes only when step 8 stops returning it. Counted exactly, at
// steady state (the pools filled by a first call).
func TestWhyAllocsOutputSlice(t *testing.T) {
	if race.Enabled {
		t.Skip("allocation counts are checked without -race: sync.Pool drops items under it")
	}
	for _, tt := range []struct {
		step int
		f    func(int) string
		want float64
	}{{6, Step6, 1}, {7, Step7, 1}, {8, Step8, 0}} {
		got := allocs.PerRun(20, func() { tt.f(12345) })
		if got != tt.want {
			t.Errorf("step %d: %.2f allocs per call, want %v", tt.step, got, tt.want)
		}
	}
}
