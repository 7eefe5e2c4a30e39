package boltstore

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"visitors/internal/store"
	"visitors/internal/store/storetest"
)

// TestOnlineImportKeepsTheFilesLaterDay: a key whose file holds a day
// after today (its store ran with the clock three days ahead, then
// restarted with the clock right) takes an online import of a dump, is
// visited, and the store restarts on that later day, the dated total as
// the pass after the import wrote it (a start before that day would read
// the days again and mend it). The later day's
// count is the file's, merged with the dump's where the dump has the
// same day; a dump with a later day still keeps its own; a replace
// drops the file's days, the later one too. Mutation survivors of
// applyImport (issue 28, the start-time work's waits): the merge not
// carrying the old entry's later day (online.go `ok && old != nil`
// negated, and `a.Day > later.Day` negated), which wrote the total
// dated today and lost the later day's 5 on its start, the file's day
// taken over the merged one when they are the same day (`>=`), which
// lost the dump's 2 of it, and (planted by hand, not a gremlins mutant)
// a replace keeping the old entry's later day, which the replace had
// emptied: 5 visits on it from nowhere.
func TestOnlineImportKeepsTheFilesLaterDay(t *testing.T) {
	tests := []struct {
		name    string
		days    map[int]uint64 // the dump's days of the key, by offset from today
		replace bool
		later   int    // the later day the store restarts on, from today
		want    uint64 // its count after one visit on it
	}{
		{"merge of today's visits", map[int]uint64{0: 2}, false, 3, 5 + 1},
		{"merge of the same later day", map[int]uint64{0: 2, 3: 2}, false, 3, 5 + 2 + 1},
		{"merge of a day after it", map[int]uint64{0: 2, 5: 4}, false, 5, 4 + 1},
		{"replace", map[int]uint64{0: 2}, true, 3, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			clock := storetest.NewClock(storetest.At(0, "12:00"))
			today := store.DayOf(clock.Now())
			open := func() *Store { return mustOpen(t, Options{Dir: dir, Now: clock.Now}) }

			clock.Add(3 * 24 * time.Hour) // the clock ahead: 5 visits on today+3
			s := open()
			mustIncrN(t, s, "k", 5)
			mustClose(t, s)
			clock.Add(-3 * 24 * time.Hour)

			var total uint64
			var days []string
			for off, n := range tt.days {
				days = append(days, `"`+(today+store.Day(off)).Time().Format(time.DateOnly)+`":`+strconv.FormatUint(n, 10))
				total += n
			}
			dump := `{"format":"visitors-export-1","hits":0,"keys":[{"key":"k","total":` + strconv.FormatUint(total, 10) +
				`,"days":{` + strings.Join(days, ",") + `}}]}`
			s = open() // the file's later day is read back at load
			if err := s.Import(ctx, strings.NewReader(dump), tt.replace); err != nil {
				t.Fatal(err)
			}
			mustIncr(t, s, []byte("k")) // the pass after the import writes k's total
			mustClose(t, s)

			clock.Add(time.Duration(tt.later) * 24 * time.Hour)
			s = open()
			defer mustClose(t, s)
			wantTotal := total + 1 + 1
			if !tt.replace {
				wantTotal += 5
			}
			if c := mustIncr(t, s, []byte("k")); c.Today != tt.want || c.Total != wantTotal {
				t.Errorf("a visit on today+%d = %+v, want today %d, total %d", tt.later, c, tt.want, wantTotal)
			}
		})
	}
}
