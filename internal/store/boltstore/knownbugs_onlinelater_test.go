//go:build knownbugs

package boltstore

import (
	"strings"
	"testing"
	"time"

	"visitors/internal/store"
	"visitors/internal/store/storetest"
)

// TestKnownBugOnlineImportedLaterDayReachedKeepsItsCount: as
// TestLaterDayReachedWithoutARestartKeepsItsCount, with the later day
// brought by an online import into the running store (Store.Import),
// merged into a key it holds and as a new key: 5 imported for tomorrow
// and 1 visit tomorrow are 6. It fails: applyImport (online.go) gives
// the key's new entry the later day in s.ahead but not in its tally
// (tally.Later), so the day starts at 0 when it comes, the visit is
// answered today 1, the pass writes the day record 1 over the import's
// 5, and a restart reads 1 (the totals are right). Found by the hostile
// review of the later days (branch tally); online.go is another
// helper's, so it is not fixed here.
func TestKnownBugOnlineImportedLaterDayReachedKeepsItsCount(t *testing.T) {
	for _, d := range []store.Durability{store.Batch, store.Sync} {
		t.Run(d.String(), func(t *testing.T) {
			dir := t.TempDir()
			clock := storetest.NewClock(storetest.At(0, "12:00"))
			today := store.DayOf(clock.Now())
			date := func(d store.Day) string { return d.Time().Format(time.DateOnly) }
			s := mustOpen(t, Options{Dir: dir, Now: clock.Now, Durability: d})
			mustIncr(t, s, []byte("held"))
			dump := `{"format":"visitors-export-1","hits":0,"keys":[` +
				`{"key":"held","total":5,"days":{"` + date(today+1) + `":5}},` +
				`{"key":"new","total":5,"days":{"` + date(today+1) + `":5}}]}`
			if err := s.Import(ctx, strings.NewReader(dump), false); err != nil {
				t.Fatal(err)
			}
			clock.Add(24 * time.Hour)
			s.Rollover()
			for _, k := range []string{"held", "new"} {
				if c := mustIncr(t, s, []byte(k)); c.Today != 6 {
					t.Errorf("%s: the later day's visit = %+v, want today 6 (the import's 5 and this one)", k, c)
				}
			}
			s = reopen(t, s, Options{Dir: dir, Now: clock.Now, Durability: d})
			defer mustClose(t, s)
			for _, k := range []string{"held", "new"} {
				if c := mustGet(t, s, []byte(k)); c.Today != 6 {
					t.Errorf("%s: reopened on that day, Get = %+v, want today 6", k, c)
				}
			}
		})
	}
}
