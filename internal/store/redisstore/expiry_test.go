package redisstore

import (
	"strings"
	"testing"

	"visitors/internal/store"
	"visitors/internal/store/storetest"
)

// TestExpiriesCountFromTheStoresClock: every expiry the store asks Redis
// for is a duration from the store's own clock, never a time on Redis's:
// a day's count written by a flush round, by an owner's Add and by an
// import, a day's unique visitors, and the day's seed each live as long
// as the store's clock says, whatever Redis's clock reads. With an
// absolute time (EXPIREAT, EXAT) put back in any of them, this fails at
// the anchors ./scripts/test.sh runs 400 days ahead and back (and the
// seed's a day's absolute EXAT fails at any anchor more than an hour
// from the real now).
func TestExpiriesCountFromTheStoresClock(t *testing.T) {
	for _, where := range []string{"standalone", "cluster"} {
		t.Run(where, func(t *testing.T) {
			clock := storetest.NewClock(storetest.At(2, "09:00"))
			in := mustInstance(t, where, t.TempDir(), store.Batch, clock.Now)
			st := in.st
			d := store.DayOf(clock.Now())
			in.visit(t, "flushed", 1, "ua")
			if _, err := st.Add(t.Context(), []byte("added"), 3); err != nil {
				t.Fatal(err)
			}
			dump := storetest.Dated(`{"format":"visitors-export-1","hits":0,"keys":[{"key":"imported","total":2,"days":{"$D+1":1,"$D+2":1}}]}`)
			if err := st.Import(t.Context(), strings.NewReader(dump), false); err != nil {
				t.Fatal(err)
			}
			in.flush(t)
			if _, err := st.DaySeed(t.Context(), d); err != nil {
				t.Fatal(err)
			}
			// The slack is the seconds Redis counts down while the test
			// runs: an hour, for a busy machine.
			check := func(name string, want int64) {
				t.Helper()
				ttl, err := st.c.Do(t.Context(), st.c.B().Ttl().Key(name).Build()).AsInt64()
				if err != nil || ttl > want || ttl < want-3600 {
					t.Errorf("%s lives %d s more (%v), want %d s, less at most an hour (by the store's clock)", name, ttl, err, want)
				}
			}
			now := clock.Now().Unix()
			lives := func(d store.Day) int64 { return int64(d)*86400 + DayTTL - now } // DayTTL after d began
			for _, k := range []string{"flushed", "added", "imported"} {
				check(dayKey(st.n.tag([]byte(k)), d), lives(d))
			}
			check(dayKey(st.n.tag([]byte("imported")), d-1), lives(d-1))
			check(uniqueKey(st.n.tag([]byte("flushed")), d), lives(d))
			check(st.n.seedKey(d), (int64(d)+1)*86400+SeedGrace-now)
		})
	}
}
