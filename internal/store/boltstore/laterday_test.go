package boltstore

import (
	"strings"
	"testing"
	"time"

	"visitors/internal/store"
	"visitors/internal/store/storetest"
)

// TestLaterDayReachedWithoutARestartKeepsItsCount: a key whose file
// holds a later day (an import of a store whose clock ran ahead, or a
// clock set back), reached at midnight while the store runs, keeps that
// day's count from the file: 5 imported and 1 visit are 6 that day.
// Found by the mutation run of issue 28 (flush.go's `a.Day >
// dated.Day`) as a known bug: the tally started the day at 0, the pass
// wrote the day record 1 over the file's 5 and the dated total 1, and a
// restart read 1 (the total, 9, was right). The load now gives the tally
// the later days (tally.Later), and it counts on from them.
func TestLaterDayReachedWithoutARestartKeepsItsCount(t *testing.T) {
	dir := t.TempDir()
	clock := storetest.NewClock(storetest.At(0, "12:00"))
	today := store.DayOf(clock.Now())
	date := func(d store.Day) string { return d.Time().Format(time.DateOnly) }
	dump := `{"format":"visitors-export-1","hits":0,"keys":[{"key":"k","total":7,"days":{"` +
		date(today) + `":2,"` + date(today+1) + `":5}}]}`
	if err := (Offline{Dir: dir}).Import(strings.NewReader(dump), false); err != nil {
		t.Fatal(err)
	}
	s := mustOpen(t, Options{Dir: dir, Now: clock.Now})
	mustIncr(t, s, []byte("k"))
	clock.Add(24 * time.Hour)
	s.Rollover()
	if c := mustIncr(t, s, []byte("k")); c.Today != 6 {
		t.Errorf("the later day's visit = %+v, want today 6 (the file's 5 and this one)", c)
	}
	s = reopen(t, s, Options{Dir: dir, Now: clock.Now})
	defer mustClose(t, s)
	if c, d := mustGet(t, s, []byte("k")), mustDays(t, s, []byte("k"), 2); c.Total != 9 || c.Today != 6 || d.Counts[0] != 3 || d.Counts[1] != 6 {
		t.Errorf("reopened on that day: Get = %+v, Days(2) = %v; want total 9, today 6, days [3 6]", c, d.Counts)
	}
}
