package boltstore

import (
	"testing"
)

// TestVisitRacingANegativeAddReachesTheFileAtClose: a batch visit that
// loaded a key's entry before a negative Add retired it counts on the
// old entry, acknowledged; the pass that meets the old entry forwards it
// to the new one. When that pass is Close's last, the forward must still
// reach the file: a restart reads the visit. Before, the new entry,
// clean since the Add wrote it, was put in the journal by the forward
// and left for a pass that never came: the restart read 3. (Found by the
// review of the online import's later days, which fixed the same order
// for an import.)
func TestVisitRacingANegativeAddReachesTheFileAtClose(t *testing.T) {
	s, o, old := retiredByANegativeAdd(t)
	lateVisit(s, old) // it loaded old before the Add retired it
	s = reopen(t, s, o)
	defer mustClose(t, s)
	if c := mustGet(t, s, []byte("k")); c.Total != 4 {
		t.Errorf("after a restart: %+v, want total 4 (5, less 2, and the visit that raced the Add)", c)
	}
}
