package boltstore

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"visitors/internal/store/storetest"
)

// TestRefusedVisitsNeverReplayAfterACrash: a record whose fdatasync
// failed, on a disk where the bbolt file failed too, answers its visits
// with an error; a crash after that and before the next commit of the
// file never replays it, even though its bytes reached the log: its
// header is blanked (the crash copy shows zeros where it began, after the
// records acknowledged before it), and the copy opens with the
// acknowledged visits alone. Once the disk is back, the store counts on
// from them.
func TestRefusedVisitsNeverReplayAfterACrash(t *testing.T) {
	inBothModes(t, func(t *testing.T) {
		dir := t.TempDir()
		s := openSyncLogOnly(t, dir)
		mustIncrN(t, s, "a", 2) // two records, acknowledged
		if _, err := s.Hit(ctx); err != nil {
			t.Fatal(err)
		}
		id := s.log.id
		path := failDisk(s) // the next record's sync fails, and so does the file
		for range 3 {
			if _, err := storetest.Incr(ctx, s, []byte("a")); err == nil {
				t.Fatal("Incr(a) succeeded while the log's sync and the file failed")
			}
		}
		if _, err := s.Hit(ctx); err == nil {
			t.Fatal("Hit succeeded while the log's sync and the file failed")
		}
		diskBack(t, s, path)
		crashed := crashCopy(t, s) // before the next commit

		offs := logOffsets(t, crashed, id)
		if len(offs) != 4 {
			t.Errorf("the crash copy's log holds %d records, want 3 (two visits and a /hi, acknowledged)", len(offs)-1)
		}
		log, err := os.ReadFile(filepath.Join(crashed, LogName))
		if err != nil {
			t.Fatal(err)
		}
		if len(offs) < 4 {
			t.Fatal("the acknowledged records are not all in the crash copy's log")
		}
		if end := offs[3]; !bytes.Equal(log[end:end+logHeader], make([]byte, logHeader)) {
			t.Errorf("the failed record's header at %d = %x, want %d zero bytes (blanked)", end, log[end:end+logHeader], logHeader)
		}
		r := mustOpen(t, Options{Dir: crashed})
		if c := mustGet(t, r, []byte("a")); c.Total != 2 || c.Today != 2 {
			t.Errorf("after a crash a = %+v, want total and today 2: the refused visits do not count", c)
		}
		if n, err := r.Hit(ctx); err != nil || n != 2 {
			t.Errorf("after a crash Hit = %d, %v; want 2 (the refused /hi handed nothing out)", n, err)
		}
		mustClose(t, r)

		healLog(s)
		if c := mustIncr(t, s, []byte("a")); c.Total != 3 {
			t.Errorf("after the disk came back Incr(a) = %d, want 3", c.Total)
		}
		mustClose(t, s)
		if n := readTotal(t, dir, "a"); n != 3 {
			t.Errorf("on disk after Close: a = %d, want 3", n)
		}
	})
}
