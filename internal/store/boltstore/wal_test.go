package boltstore

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"visitors/internal/store"
	"visitors/internal/store/dump"
	"visitors/internal/store/storetest"
)

// openSyncLogOnly opens a sync store whose bbolt file never catches up
// on its own (an hour's flush interval): acknowledged visits are in the
// log alone until Close or Flush.
func openSyncLogOnly(t *testing.T, dir string) *Store {
	t.Helper()
	return mustOpen(t, Options{Dir: dir, Durability: store.Sync, FlushInterval: time.Hour})
}

// openWithAFailingKey is openSyncLogOnly with every write of key bad to
// bbolt failing: the file stays behind the log, which holds bad's visits
// alone.
func openWithAFailingKey(t *testing.T, dir, bad string) *Store {
	t.Helper()
	s := openSyncLogOnly(t, dir)
	fault := func(key string) error {
		if key == bad {
			return errors.New("planted key failure")
		}
		return nil
	}
	s.putFault.Store(&fault)
	return s
}

// TestLogReplaysAfterCrash: every key class, counted in sync mode and in
// the log only, is back, exact, after a crash and a restart; the /hi
// counter goes on from the last number handed out.
func TestLogReplaysAfterCrash(t *testing.T) {
	s := openSyncLogOnly(t, t.TempDir())
	keys := storetest.HostileKeys()
	for i, k := range keys {
		for range i%3 + 1 {
			mustIncr(t, s, k)
		}
	}
	var last uint64
	for range 5 {
		n, err := s.Hit(ctx)
		if err != nil {
			t.Fatal(err)
		}
		last = n
	}
	crashed := crashCopy(t, s)
	mustClose(t, s)

	// The bbolt file alone has none of it: the log carries every visit.
	fileOnly := t.TempDir()
	copyFile(t, filepath.Join(crashed, FileName), filepath.Join(fileOnly, FileName))
	if n := readTotal(t, fileOnly, string(keys[1])); n != 0 {
		t.Fatalf("the file alone holds %d visits of a key counted in sync mode, want 0 (did a pass commit to the file?)", n)
	}

	r := mustOpen(t, Options{Dir: crashed})
	defer mustClose(t, r)
	if st := r.Stats(); st.Replayed == 0 {
		t.Errorf("Stats().Replayed = 0 after a crash, want the log's records")
	}
	for i, k := range keys {
		want := uint64(i%3 + 1)
		if c := mustGet(t, r, k); c.Total != want || c.Today != want {
			t.Errorf("key %q after the crash: %+v, want total and today %d", k, c, want)
		}
	}
	n, err := r.Hit(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if n <= last {
		t.Errorf("after the crash /hi gave %d, want more than the last number handed out, %d", n, last)
	}
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// logOffsets returns where each record of the log in dir starts, and
// where the last ends.
func logOffsets(t *testing.T, dir string, id uint64) []int {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, LogName))
	if err != nil {
		t.Fatal(err)
	}
	var offs []int
	off := 0
	for {
		_, n, ok := parseRecord(data[off:], id)
		if !ok {
			break
		}
		offs = append(offs, off)
		off += n
	}
	return append(offs, off)
}

// TestLogTornRecord: a record a crash cut short, or one whose bytes
// changed, ends the replay there; the records before it all count.
func TestLogTornRecord(t *testing.T) {
	s := openSyncLogOnly(t, t.TempDir())
	for range 5 {
		mustIncr(t, s, []byte("a")) // one at a time: a record each
	}
	crashed := crashCopy(t, s)
	id := s.log.id
	mustClose(t, s)
	offs := logOffsets(t, crashed, id)
	if len(offs) != 6 {
		t.Fatalf("the log holds %d records, want 5 (one per sequential visit)", len(offs)-1)
	}
	lastStart, end := offs[4], offs[5]
	for _, tc := range []struct {
		name string
		harm func(b []byte) []byte
	}{
		{"cut short", func(b []byte) []byte { return b[:end-3] }},
		{"header only", func(b []byte) []byte { return b[:lastStart+logHeader] }},
		{"a flipped byte", func(b []byte) []byte { b[end-1] ^= 0x40; return b }},
		{"a flipped seq", func(b []byte) []byte { b[lastStart+16] ^= 1; return b }},
		{"zeroed header", func(b []byte) []byte { copy(b[lastStart:], make([]byte, logHeader)); return b }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			copyFile(t, filepath.Join(crashed, FileName), filepath.Join(dir, FileName))
			b, err := os.ReadFile(filepath.Join(crashed, LogName))
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, LogName), tc.harm(b), 0o644); err != nil {
				t.Fatal(err)
			}
			if n := readTotal(t, dir, "a"); n != 4 {
				t.Errorf("total = %d with the last of 5 records harmed, want 4", n)
			}
		})
	}
}

// TestLogOfAnotherFileIsIgnored: a log left beside a file it does not
// belong to (the file was moved away to start empty) replays nothing.
func TestLogOfAnotherFileIsIgnored(t *testing.T) {
	s := openSyncLogOnly(t, t.TempDir())
	mustIncrN(t, s, "a", 3)
	crashed := crashCopy(t, s)
	mustClose(t, s)
	if err := os.Remove(filepath.Join(crashed, FileName)); err != nil {
		t.Fatal(err)
	}
	r := mustOpen(t, Options{Dir: crashed, Durability: store.Sync})
	if c := mustGet(t, r, []byte("a")); c.Total != 0 {
		t.Errorf("a new file took %d visits from a log of another file", c.Total)
	}
	mustIncrN(t, r, "b", 1) // the log is this file's now
	mustClose(t, r)
	if n := readTotal(t, crashed, "a"); n != 0 {
		t.Errorf("after a reopen a = %d, want 0", n)
	}
}

// TestLogNewerThanFileIsRefused: a file restored from an older copy
// beside the current log would miss the records between; the store
// refuses to open and leaves both files alone.
func TestLogNewerThanFileIsRefused(t *testing.T) {
	dir := t.TempDir()
	s := openSyncLogOnly(t, dir)
	mustIncrN(t, s, "a", 1) // record 1
	early := crashCopy(t, s)
	if err := s.Flush(); err != nil { // the file holds record 1; the log starts over
		t.Fatal(err)
	}
	mustIncrN(t, s, "b", 1) // record 2, at the log's start
	late := crashCopy(t, s)
	mustClose(t, s)
	copyFile(t, filepath.Join(late, LogName), filepath.Join(early, LogName))
	before, _ := os.ReadFile(filepath.Join(early, FileName))
	_, err := Open(Options{Dir: early})
	if err == nil || !strings.Contains(err.Error(), "older than its log") || !strings.Contains(err.Error(), LogName) {
		t.Fatalf("Open = %v, want a refusal naming the log", err)
	}
	after, _ := os.ReadFile(filepath.Join(early, FileName))
	if !bytes.Equal(before, after) {
		t.Error("the refused open changed the data file")
	}
}

// TestLogFullCatchesUp: a log too small for the traffic makes the file
// catch up and starts over, many times, and nothing acknowledged is lost.
func TestLogFullCatchesUp(t *testing.T) {
	defer func(n int64) { logSize = n }(logSize)
	logSize = 1024
	s := openSyncLogOnly(t, t.TempDir())
	long := strings.Repeat("k", store.MaxKeyBytes)
	for i := range 40 {
		mustIncr(t, s, []byte(long))
		mustIncrN(t, s, string(rune('a'+i%5)), 1)
	}
	st := s.Stats()
	if st.LogRecords == 0 || st.LogRecords == st.Passes {
		t.Errorf("Stats() = %+v: want passes through the log and passes that made the file catch up", st)
	}
	crashed := crashCopy(t, s)
	mustClose(t, s)
	r := mustOpen(t, Options{Dir: crashed})
	defer mustClose(t, r)
	if c := mustGet(t, r, []byte(long)); c.Total != 40 {
		t.Errorf("long key after the crash: %d, want 40", c.Total)
	}
	for i := range 5 {
		if c := mustGet(t, r, []byte{byte('a' + i)}); c.Total != 8 {
			t.Errorf("key %c after the crash: %d, want 8", 'a'+i, c.Total)
		}
	}
}

// TestLogFailureFallsBackToTheFile: while the log cannot be written, a
// pass commits to the bbolt file instead (slower, still durable); once it
// can, the log is used again.
func TestLogFailureFallsBackToTheFile(t *testing.T) {
	s := openSyncLogOnly(t, t.TempDir())
	mustIncrN(t, s, "a", 1)
	fault := func() error { return errors.New("planted log failure") }
	s.logFault.Store(&fault)
	mustIncrN(t, s, "a", 2)
	if n := readTotal(t, fileCopy(t, s), "a"); n != 3 {
		t.Errorf("the file holds a = %d while the log fails, want 3", n)
	}
	if err := s.Health(); err != nil {
		t.Errorf("Health() = %v after the file took the passes, want nil", err)
	}
	healLog(s)
	before := s.Stats().LogRecords
	mustIncrN(t, s, "a", 2)
	if s.Stats().LogRecords <= before {
		t.Error("the log was not used again once it could be written")
	}
	crashed := crashCopy(t, s)
	mustClose(t, s)
	if n := readTotal(t, crashed, "a"); n != 5 {
		t.Errorf("after a crash a = %d, want 5", n)
	}
}

// fileCopy copies the bbolt file of s alone, without its log.
func fileCopy(t *testing.T, s *Store) string {
	t.Helper()
	dir := crashCopy(t, s)
	os.Remove(filepath.Join(dir, LogName))
	return dir
}

// TestOfflineCommandsSeeTheLog: check reports records a crash left in
// the log, export includes them, and an import that replaces the store
// can never have them replayed onto it.
func TestOfflineCommandsSeeTheLog(t *testing.T) {
	s := openSyncLogOnly(t, t.TempDir())
	mustIncrN(t, s, "a", 3)
	crashed := crashCopy(t, s)
	mustClose(t, s)

	var out bytes.Buffer
	if err := Check(crashed, &out, 0); err != nil {
		t.Fatalf("Check: %v", err)
	}
	if !strings.Contains(out.String(), LogName+" holds 3 records") {
		t.Errorf("Check said %q, want the log's 3 pending records", out.String())
	}

	exportDir := t.TempDir()
	copyFile(t, filepath.Join(crashed, FileName), filepath.Join(exportDir, FileName))
	copyFile(t, filepath.Join(crashed, LogName), filepath.Join(exportDir, LogName))
	var exported bytes.Buffer
	if err := Export(exportDir, &exported); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(exported.String(), `"key":"a","total":3`) {
		t.Errorf("export = %s, want a's 3 visits from the log", out.String())
	}

	empty := `{"format":"` + dump.Format + `","hits":0,"keys":[]}`
	if err := Import(crashed, strings.NewReader(empty), true); err != nil {
		t.Fatal(err)
	}
	if n := readTotal(t, crashed, "a"); n != 0 {
		t.Errorf("after an import that replaced the store, a = %d, want 0 (the old log replayed?)", n)
	}
}

// TestSyncVisitAfterCloseIsRefused: a visit after Close gets an error at
// once (join used to spin forever on the last, sealed pass).
func TestSyncVisitAfterCloseIsRefused(t *testing.T) {
	s := openSyncLogOnly(t, t.TempDir())
	mustIncrN(t, s, "a", 1)
	mustClose(t, s)
	done := make(chan error, 1)
	go func() {
		_, err := s.Incr(ctx, []byte("a"))
		done <- err
	}()
	select {
	case err := <-done:
		if err == nil {
			t.Error("Incr after Close succeeded")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Incr after Close did not return in 10s")
	}
}
