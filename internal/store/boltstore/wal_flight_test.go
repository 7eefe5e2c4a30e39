package boltstore

import (
	"path/filepath"
	"testing"
)

// TestLogAtMostFourRecordsWritten: with four records' syncs held, no
// fifth record is written (nor synced): the visits that come meanwhile
// wait outside the log. docs/durability.md promises four in flight;
// TestLogFlightsAreBounded reads the bound from maxFlying and cannot see
// it raised, nor a fifth record written and queued behind four busy
// syncers (both planted: maxFlying = 5, and `>` for `>=` in logPass).
func TestLogAtMostFourRecordsWritten(t *testing.T) {
	defer func(f func(bool) bool) { pipelineLog = f }(pipelineLog)
	pipelineLog = func(bool) bool { return true }
	const four = 4
	dir := t.TempDir()
	s := openSyncLogOnly(t, dir)
	defer mustClose(t, s)
	began, stop := holdEachSync(s)
	defer stop()
	res, _, queued := fillFlights(t, s, began, four)
	recs, err := readLog(filepath.Join(dir, LogName), s.log.id, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != four {
		t.Errorf("the log holds %d records with %d syncs held, want %d: at most four in flight", len(recs), four, four)
	}
	stop()
	for i, r := range append(res, queued...) {
		if err := <-r; err != nil {
			t.Errorf("visit %d = %v", i, err)
		}
	}
}

// TestLogHoleStopsTheReplay: with records in flight side by side, a power
// cut can leave a later record on the disk and an earlier one not (its
// blocks never written, or torn). None of them was answered: a record is
// answered only after every record before it is durable. The replay takes
// the records before the hole and none after it, even whole ones: their
// absolute counts include the missing record's visits.
func TestLogHoleStopsTheReplay(t *testing.T) {
	s := openSyncLogOnly(t, t.TempDir())
	keys := []string{"k1", "k2", "k3", "k4", "k5"}
	for _, k := range keys {
		mustIncr(t, s, []byte(k)) // one at a time: a record each
	}
	crashed, offs := crashedLog(t, s, len(keys))
	start, end := offs[2], offs[3] // k3's record
	for _, tc := range []struct {
		name string
		harm func(b []byte) []byte
	}{
		{"never written", func(b []byte) []byte { clear(b[start:end]); return b }},
		{"torn in the middle", func(b []byte) []byte { clear(b[start+(end-start)/2 : end]); return b }},
		{"header only", func(b []byte) []byte { clear(b[start+logHeader : end]); return b }},
		{"a flipped byte", func(b []byte) []byte { b[end-1] ^= 0x40; return b }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := harmedCopy(t, crashed, tc.harm)
			for i, k := range keys {
				want := uint64(0)
				if i < 2 {
					want = 1
				}
				if n := readTotal(t, dir, k); n != want {
					t.Errorf("%s = %d with record 3 of 5 missing, want %d", k, n, want)
				}
			}
		})
	}
}

// readTotalInFile returns key's total in the data file of s as it is now,
// without the log.
func readTotalInFile(t *testing.T, s *Store, key string) uint64 {
	t.Helper()
	return readTotal(t, fileCopy(t, s), key)
}
