package redisstore

import (
	"strings"
	"testing"
	"time"

	"visitors/internal/store"
	"visitors/internal/store/storetest"
)

// TestLaterDayReachedKeepsItsCount: a key imported with a day after
// today (a dump of a store whose clock ran ahead, or a clock set back),
// by the offline import (visitors import) and by the online one into a
// running instance that holds the key, counts on from the dump's count
// when that day comes while the instance runs: 5 imported and 1 visit
// are 6 that day, in Redis, in Days, and for a new instance. (Redis
// keeps each day in a name of its own that every visit of the day adds
// to, and the import gives it DayTTL from the day, not from now; the
// embedded store needed tally.Later for the same.) A Batch instance
// answers the first visits of the day from its own count until a round
// reads the day (as for another instance's visits): only a Sync answer
// is checked before a flush.
func TestLaterDayReachedKeepsItsCount(t *testing.T) {
	for _, where := range []string{"standalone", "cluster"} {
		for _, d := range []store.Durability{store.Batch, store.Sync} {
			t.Run(where+"/"+d.String(), func(t *testing.T) {
				dir := t.TempDir()
				clock := storetest.NewClock(storetest.At(0, "12:00"))
				today := store.DayOf(clock.Now())
				date := func(d store.Day) string { return d.Time().Format(time.DateOnly) }
				dumpOf := func(key string) string {
					return `{"format":"visitors-export-1","hits":0,"keys":[{"key":"` + key + `","total":7,"days":{"` +
						date(today) + `":2,"` + date(today+1) + `":5}}]}`
				}
				open := func() *Store {
					st := backend(where, d).Open(t, storetest.Config{Dir: dir, Now: clock.Now}).(*Store)
					t.Cleanup(func() { st.Close() })
					return st
				}
				o := at(where, Options{Prefix: prefixOf(dir), Now: clock.Now})
				mustImportOpts(t, o, dumpOf("offline"), false)
				st := open()
				m := musts{t}
				for _, k := range []string{"offline", "online"} {
					m.c(storetest.Incr(t.Context(), st, []byte(k)))
				}
				if err := st.Import(t.Context(), strings.NewReader(dumpOf("online")), false); err != nil {
					t.Fatal(err)
				}
				flushed(t, st)
				clock.Add(24 * time.Hour)
				st.Rollover()
				for _, k := range []string{"offline", "online"} {
					if c := m.c(storetest.Incr(t.Context(), st, []byte(k))); d == store.Sync && (c.Today != 6 || c.Total != 9) {
						t.Errorf("%s: the later day's visit = %+v, want today 6 (the dump's 5 and this one), total 9", k, c)
					}
				}
				flushed(t, st)
				for _, k := range []string{"offline", "online"} {
					c := m.c(st.Get(t.Context(), []byte(k)))
					days, err := st.Days(t.Context(), []byte(k), 2)
					m.fail(err)
					if c.Today != 6 || c.Total != 9 || days.Counts[0] != 3 || days.Counts[1] != 6 {
						t.Errorf("%s: on the later day, Get = %+v, Days(2) = %v; want today 6, total 9, days [3 6]", k, c, days.Counts)
					}
				}
				other := open()
				for _, k := range []string{"offline", "online"} {
					if c := m.c(other.Get(t.Context(), []byte(k))); c.Today != 6 || c.Total != 9 {
						t.Errorf("%s: another instance's Get = %+v, want today 6, total 9", k, c)
					}
				}
				st.Close()
				other.Close()
			})
		}
	}
}
