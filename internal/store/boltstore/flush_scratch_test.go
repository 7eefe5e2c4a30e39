package boltstore

import (
	"strconv"
	"testing"
	"time"

	"visitors/internal/store/storetest"
)

// TestLargePassLetsItsRoomGo: the flusher keeps at most maxScratch
// writes' and days' room between passes, so a pass that wrote every key
// with an earlier day held (the first after a midnight without a flush)
// does not hold its room for good. (Mutation testing, issue 28: with the
// days' bound negated in trimScratch (flush.go), the room stayed, and every
// test still passed.)
func TestLargePassLetsItsRoomGo(t *testing.T) {
	clock := storetest.NewClock(storetest.At(0, "12:00"))
	s := mustOpen(t, Options{Dir: t.TempDir(), FlushInterval: time.Hour, Now: clock.Now})
	defer mustClose(t, s)
	const keys = 2 * maxScratch
	for i := range keys {
		mustIncr(t, s, []byte("k"+strconv.Itoa(i)))
	}
	clock.Add(24 * time.Hour)
	s.Rollover()
	for i := range keys {
		mustIncr(t, s, []byte("k"+strconv.Itoa(i)))
	}
	s.flush(false) // the flusher is idle: an hour's interval, no sync visit
	if c := cap(s.writes); c > maxScratch {
		t.Errorf("after a pass of %d keys the flusher keeps room for %d writes, want at most %d", keys, c, maxScratch)
	}
	if c := cap(s.days); c > maxScratch {
		t.Errorf("after a pass of %d keys with a day held each the flusher keeps room for %d days, want at most %d", keys, c, maxScratch)
	}
	if c := cap(s.taken); c > maxScratch {
		t.Errorf("after a pass of %d keys the flusher keeps room for %d journal entries, want at most %d", keys, c, maxScratch)
	}
	if c := mustGet(t, s, []byte("k0")); c.Total != 2 || c.Today != 1 {
		t.Errorf("k0 = %+v, want total 2, today 1", c)
	}
}
