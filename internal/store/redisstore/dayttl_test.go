package redisstore

import (
	"testing"
	"time"

	"visitors/internal/store"
	"visitors/internal/store/storetest"
)

// TestDayFlushedAfterMidnightLivesFromItsStart: every day's count lives
// DayTTL from the day's start, by the store's clock, including a day
// whose visits reach Redis only after its midnight: a batch round sent
// at 06:00 writes yesterday's count (visited at 23:00) with DayTTL from
// yesterday's start, not from the round, nor from today's start; and
// today's with DayTTL from today's start.
func TestDayFlushedAfterMidnightLivesFromItsStart(t *testing.T) {
	for _, where := range []string{"standalone", "cluster"} {
		t.Run(where, func(t *testing.T) {
			clock := storetest.NewClock(storetest.At(1, "23:00"))
			st, err := Open(at(where, Options{Prefix: prefixOf(t.TempDir()), Durability: store.Batch, FlushInterval: time.Hour, Now: clock.Now}))
			if err != nil {
				t.Fatal(err)
			}
			defer st.Close()
			key := []byte("late")
			tag := st.n.tag(key)
			yesterday := store.DayOf(clock.Now())
			check := func(when string, d store.Day) {
				t.Helper()
				ttl, err := st.c.Do(t.Context(), st.c.B().Ttl().Key(dayKey(tag, d)).Build()).AsInt64()
				// From the day's start by the store's clock; the slack is
				// the seconds Redis counts down while the test runs, an
				// hour for a busy machine (a TTL from the round or from
				// the next day's start is 6 h or more too long).
				want := int64(d)*86400 + DayTTL - clock.Now().Unix()
				if err != nil || ttl > want || ttl < want-3600 {
					t.Errorf("%s: day %s's key lives %d s more (%v), want %d s (DayTTL from its start), less at most an hour",
						when, d.Time().Format(time.DateOnly), ttl, err, want)
				}
			}
			for range 3 {
				if _, err := storetest.Incr(t.Context(), st, key); err != nil {
					t.Fatal(err)
				}
			}
			clock.Add(7 * time.Hour) // 06:00 the day after
			st.Rollover()
			if _, err := storetest.Incr(t.Context(), st, key); err != nil {
				t.Fatal(err)
			}
			if err := st.Flush(); err != nil {
				t.Fatal(err)
			}
			check("flushed at 06:00 the day after", yesterday)
			check("flushed at 06:00 the day after", yesterday+1)
			if d := mustDaysOf(t, st, key); d[0] != 3 || d[1] != 1 {
				t.Errorf("the last two days = %v, want [3 1]", d)
			}
		})
	}
}

// mustDaysOf returns key's counts of the last two days, oldest first.
func mustDaysOf(t *testing.T, st *Store, key []byte) []uint64 {
	t.Helper()
	d, err := st.Days(t.Context(), key, 2)
	if err != nil {
		t.Fatal(err)
	}
	return d.Counts
}
