package allocs

import (
	"testing"

	"visitors/internal/race"
)

var sink []byte

// TestPerRunIsUnrounded allocates on every other call: PerRun says 0.5
// where testing.AllocsPerRun says 0.
func TestPerRunIsUnrounded(t *testing.T) {
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
