package boltstore

import (
	"strings"
	"testing"
	"time"

	"visitors/internal/store/storetest"
)

// TestVisitInAReplacingImportsGapCounts: a replacing import of a key
// memory does not hold leaves it absent a moment before it puts the new
// entry in; a visit then makes the key with that entry (newEntry hands
// it the one being put in place), and counts on top of the dump's total,
// in memory and on disk. Were the visit given an entry of its own, the
// replace would retire it with no successor, and the acknowledged visit
// would be lost (mutation owners.go:139:23, `e.key != key` negated,
// lived without this test: a merge forwards the visit either way).
func TestVisitInAReplacingImportsGapCounts(t *testing.T) {
	o := Options{Dir: t.TempDir(), FlushInterval: time.Hour, Now: storetest.NewClock(storetest.At(0, "12:00")).Now}
	s := mustOpen(t, o)
	var visitErr error
	gap := func() {
		setHooks(s, func(h *hooks) { h.replaceGap = nil })
		_, _, visitErr = s.Visit(ctx, []byte("k"), true)
	}
	setHooks(s, func(h *hooks) { h.replaceGap = gap })
	if err := s.Import(ctx, strings.NewReader(dumpKeyDays("k", s.cal.Today(), map[int]uint64{0: 1000}, false)), true); err != nil {
		t.Fatal(err)
	}
	if visitErr != nil {
		t.Fatalf("the visit in the gap: %v", visitErr)
	}
	if c := mustGet(t, s, []byte("k")); c.Total != 1001 {
		t.Errorf("k after a replacing import of 1000 and a visit in its gap: total %d, want 1001", c.Total)
	}
	s = reopen(t, s, o)
	defer mustClose(t, s)
	if c := mustGet(t, s, []byte("k")); c.Total != 1001 {
		t.Errorf("k after a restart: total %d, want 1001", c.Total)
	}
}
