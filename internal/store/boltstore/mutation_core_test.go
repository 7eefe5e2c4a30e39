package boltstore

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"visitors/internal/store"
	"visitors/internal/store/storetest"
)

// Tests of issue 16's fourth round (mutation testing of the flusher, the
// file, its format and the sketches): each states the promise a surviving
// mutant broke unseen.

// TestCloseReportsTheLogsCloseError: a healthy store whose write-ahead
// log cannot be closed says so from Close, naming the log: nothing else
// would tell the operator.
func TestCloseReportsTheLogsCloseError(t *testing.T) {
	s := openSyncLogOnly(t, t.TempDir())
	mustIncr(t, s, []byte("a"))
	// The log's file closed under the store: its Close fails, and
	// nothing else does (the last flush writes the bbolt file only).
	if err := s.log.f.Close(); err != nil {
		t.Fatal(err)
	}
	err := s.Close()
	if err == nil || !strings.Contains(err.Error(), LogName) {
		t.Fatalf("Close = %v, want the log's close error, naming %s", err, LogName)
	}
}

// TestTickLeavesTheLogsVisitsToTheLog: in sync mode the flush interval's
// tick brings the bbolt file up to date without taking the visits that
// wait for the next log record: while the file cannot be written and the
// log has room, no visit is refused. The flusher is held in a record's
// sync until a tick and the next visit are both pending, so that its
// next round may pick either (Go's select picks at random: 20 rounds).
func TestTickLeavesTheLogsVisitsToTheLog(t *testing.T) {
	defer func(f func() bool) { pipelineLog = f }(pipelineLog)
	pipelineLog = func() bool { return false } // the flusher syncs each record itself
	s := mustOpen(t, Options{Dir: t.TempDir(), Durability: store.Sync, FlushInterval: time.Millisecond})
	defer s.Close() // fails: the file cannot be written
	s.db.Close()    // every bbolt commit fails from here; the log works
	began, release, stop := holdSyncs(s)
	defer stop()
	incr := func(key string) <-chan error {
		res := make(chan error, 1)
		go func() { _, err := s.Incr(ctx, []byte(key)); res <- err }()
		return res
	}
	for i := range 20 {
		first := incr("a")
		<-began // the flusher is in the sync of a's record
		second := incr("b")
		waitForWaiters(t, s, 2)
		time.Sleep(3 * time.Millisecond) // a tick is pending too
		release(nil)
		if err := <-first; err != nil {
			t.Fatalf("round %d: the first visit: %v", i, err)
		}
		select {
		case <-began: // b's own record: the log took it
			release(nil)
			if err := <-second; err != nil {
				t.Fatalf("round %d: the second visit: %v", i, err)
			}
		case err := <-second:
			t.Fatalf("round %d: the second visit was answered without a log record of its own (%v): the tick took it to the file", i, err)
		}
	}
	if st := s.Stats(); st.LogRecords != 40 {
		t.Errorf("LogRecords = %d, want 40: one per visit", st.LogRecords)
	}
}

// TestPipelinedOnlyWithMoreThanOneP: log passes are pipelined (a syncer
// goroutine syncs one record while the flusher gathers the next) only
// with more than one P; with one, the flusher syncs each record itself,
// which docs/performance.md measured faster there.
func TestPipelinedOnlyWithMoreThanOneP(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	for _, tc := range []struct {
		procs int
		want  bool
	}{{1, false}, {2, true}, {4, true}} {
		runtime.GOMAXPROCS(tc.procs)
		if got := pipelineLog(); got != tc.want {
			t.Errorf("GOMAXPROCS %d: pipelineLog() = %v, want %v", tc.procs, got, tc.want)
		}
	}
}

// TestCheckRefusesALockOfAnotherValue: a lock record is the value 1; one
// with a right checksum and another value (0, 2) is a damaged record,
// which visitors check reports, naming the key and the value, and which
// Open refuses.
func TestCheckRefusesALockOfAnotherValue(t *testing.T) {
	for _, n := range []uint64{0, 2} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			dir := t.TempDir()
			s := mustOpen(t, Options{Dir: dir})
			if _, err := s.Lock(ctx, []byte("b"), true); err != nil {
				t.Fatal(err)
			}
			mustClose(t, s)
			db, err := bolt.Open(filepath.Join(dir, FileName), 0o644, nil)
			if err != nil {
				t.Fatal(err)
			}
			kp := keyPrefix([]byte("b"))
			err = db.Update(func(tx *bolt.Tx) error { return tx.Bucket(bucketLocks).Put(kp, record(tagLocks, kp, n)) })
			if cerr := db.Close(); err == nil {
				err = cerr
			}
			if err != nil {
				t.Fatal(err)
			}
			var out bytes.Buffer
			want := fmt.Sprintf(`the lock of key "b": value %d, want 1`, n)
			if err := Check(dir, &out, 0); err == nil || !strings.Contains(out.String(), want) {
				t.Errorf("Check = %v, %q; want the record refused: %s", err, out.String(), want)
			}
			if s, err := Open(Options{Dir: dir}); err == nil || !strings.Contains(err.Error(), want) {
				if err == nil {
					s.Close()
				}
				t.Errorf("Open = %v, want the record refused: %s", err, want)
			}
		})
	}
}

// TestOpenWithTheFirstMetaPageTorn: bbolt keeps two meta pages and reads
// the valid one, so a store whose first meta page is damaged (a torn
// write) and whose second holds the last commit opens with every count:
// the check of the meta pages before bbolt maps the file looks for the
// second at the machine's page size when the first cannot say where it
// is, and does not refuse the file.
func TestOpenWithTheFirstMetaPageTorn(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, FileName)
	s := mustOpen(t, Options{Dir: dir})
	mustIncrN(t, s, "a", 3)
	mustClose(t, s)
	metas := func() (m0, m1 boltMeta) {
		t.Helper()
		f, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		if m0, err = readMeta(f, 0); err != nil {
			t.Fatal(err)
		}
		if m1, err = readMeta(f, int64(m0.pageSize)); err != nil {
			t.Fatal(err)
		}
		return m0, m1
	}
	// The last commit on the second page: an empty commit moves it there
	// if it is on the first (bbolt alternates).
	if m0, m1 := metas(); m0.txid > m1.txid {
		db, err := bolt.Open(path, 0o644, nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := db.Update(func(*bolt.Tx) error { return nil }); err != nil {
			t.Fatal(err)
		}
		if err := db.Close(); err != nil {
			t.Fatal(err)
		}
		if m0, m1 = metas(); m0.txid > m1.txid {
			t.Fatalf("the last commit is still on the first meta page (txids %d, %d)", m0.txid, m1.txid)
		}
	}
	corrupt(t, path, pageHeaderSize+metaChecksumOff, pageHeaderSize+metaChecksumOff+8) // its checksum
	r, err := Open(Options{Dir: dir})
	if err != nil {
		t.Fatalf("Open with the first meta page torn: %v", err)
	}
	defer mustClose(t, r)
	if c := mustGet(t, r, []byte("a")); c.Total != 3 {
		t.Errorf("a = %+v, want total 3", c)
	}
}

// TestOpenPageSizesOfOtherMachines: bbolt writes a file with the page
// size of the machine that made it (64 KiB on some arm64 and ppc64le
// kernels) or the one it is told, any power of two from 512 bytes to 64
// KiB; a store moved from such a machine opens here, counts and reopens.
func TestOpenPageSizesOfOtherMachines(t *testing.T) {
	for _, ps := range []int{512, 1024, 16 << 10, 64 << 10} {
		t.Run(fmt.Sprint(ps), func(t *testing.T) {
			dir := t.TempDir()
			db, err := bolt.Open(filepath.Join(dir, FileName), 0o644, &bolt.Options{PageSize: ps})
			if err != nil {
				t.Fatal(err)
			}
			err = db.Update(func(tx *bolt.Tx) error {
				if err := createBuckets(tx); err != nil {
					return err
				}
				kp := keyPrefix([]byte("a"))
				return tx.Bucket(bucketTotals).Put(kp, record(tagTotals, kp, 41))
			})
			if cerr := db.Close(); err == nil {
				err = cerr
			}
			if err != nil {
				t.Fatal(err)
			}
			s, err := Open(Options{Dir: dir})
			if err != nil {
				t.Fatalf("Open of a file with %d-byte pages: %v", ps, err)
			}
			mustIncr(t, s, []byte("a"))
			mustClose(t, s)
			s = mustOpen(t, Options{Dir: dir})
			if c := mustGet(t, s, []byte("a")); c.Total != 42 {
				t.Errorf("%d-byte pages: a = %+v after a visit and a reopen, want total 42", ps, c)
			}
			mustClose(t, s)
		})
	}
}

// TestEmptySketch: a sketch's data is opaque bytes, the empty included:
// stored, it reads back as itself (four bytes on disk: its checksum
// alone), never as damage; a stored value shorter than a checksum is
// damage, refused.
func TestEmptySketch(t *testing.T) {
	dir := t.TempDir()
	s := mustOpen(t, Options{Dir: dir})
	d := store.DayOf(storetest.Anchor())
	if err := s.PutSketches(d, []store.Sketch{{Key: []byte("a"), Data: []byte{}}, {Key: []byte("b"), Data: []byte("x")}}); err != nil {
		t.Fatal(err)
	}
	mustClose(t, s)
	s = mustOpen(t, Options{Dir: dir})
	got := map[string]string{}
	if err := s.LoadSketches(d, func(k, data []byte) error { got[string(k)] = string(data); return nil }); err != nil {
		t.Fatalf("LoadSketches with an empty sketch: %v", err)
	}
	if a, ok := got["a"]; !ok || a != "" || got["b"] != "x" || len(got) != 2 {
		t.Errorf("LoadSketches = %q, want a empty and b \"x\"", got)
	}
	if _, err := s.SketchDays([]byte("a"), d, 2); err != nil {
		t.Errorf("SketchDays of a key with an empty sketch: %v", err)
	}
	// Three bytes: not even a checksum.
	err := s.db.Update(func(tx *bolt.Tx) error {
		return tx.Bucket(bucketUniques).Put(sketchKey(d, []byte("a")), []byte{1, 2, 3})
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.LoadSketches(d, func(k, data []byte) error { return nil }); err == nil || !strings.Contains(err.Error(), "sketch of 3 bytes") {
		t.Errorf("LoadSketches with a 3-byte value = %v, want it refused", err)
	}
	if _, err := s.SketchDays([]byte("a"), d, 1); err == nil {
		t.Errorf("SketchDays of a 3-byte value succeeded, want it refused")
	}
	mustClose(t, s)
}

// TestSketchDaysNamesTheDamagedDay: a damaged sketch among a key's days
// fails SketchDays with an error that names the key and the day of the
// damaged one, so that the operator knows which record to look at.
func TestSketchDaysNamesTheDamagedDay(t *testing.T) {
	s := mustOpen(t, Options{Dir: t.TempDir()})
	defer mustClose(t, s)
	last := store.DayOf(storetest.Anchor())
	for d := last - 2; d <= last; d++ {
		if err := s.PutSketches(d, []store.Sketch{{Key: []byte("a"), Data: []byte("sketch")}}); err != nil {
			t.Fatal(err)
		}
	}
	flip := func(d store.Day) { // the checksum no longer matches, or again
		t.Helper()
		err := s.db.Update(func(tx *bolt.Tx) error {
			k := sketchKey(d, []byte("a"))
			v := bytes.Clone(tx.Bucket(bucketUniques).Get(k))
			v[0] ^= 1
			return tx.Bucket(bucketUniques).Put(k, v)
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	for _, bad := range []store.Day{last - 1, last} {
		flip(bad)
		want := fmt.Sprintf(`the sketch of key "a" on %s`, bad.Time().Format(time.DateOnly))
		if _, err := s.SketchDays([]byte("a"), last, 3); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("SketchDays with the sketch of %s damaged = %v, want it named: %s", bad.Time().Format(time.DateOnly), err, want)
		}
		if _, err := s.SketchDays([]byte("a"), bad-1, 1); err != nil {
			t.Errorf("SketchDays of the day before the damaged one: %v", err)
		}
		flip(bad)
	}
}

// TestCheckOfAStoreInUseIsRefused: visitors check of a directory whose
// store another process (here another Open) holds is refused at once,
// saying so, rather than waiting for the lock for ever.
func TestCheckOfAStoreInUseIsRefused(t *testing.T) {
	dir := t.TempDir()
	s := mustOpen(t, Options{Dir: dir})
	defer mustClose(t, s)
	done := make(chan error, 1)
	go func() { done <- Check(dir, new(bytes.Buffer), 0) }()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "another process has it open") {
			t.Errorf("Check of a store in use = %v, want it refused: another process has it open", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Check of a store in use still waits for its lock after 10 s")
	}
}

// TestOpenWhileTheStoreIsReadIsRefused: a store that another process
// reads (visitors check or export: a read-only open, which shares the
// file's lock, so the check of the file before Open passes) is refused
// by Open at once, saying so, rather than waited for.
func TestOpenWhileTheStoreIsReadIsRefused(t *testing.T) {
	dir := t.TempDir()
	mustClose(t, mustOpen(t, Options{Dir: dir}))
	reader, err := bolt.Open(filepath.Join(dir, FileName), 0o644, &bolt.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	type opened struct {
		s   *Store
		err error
	}
	done := make(chan opened, 1)
	go func() { s, err := Open(Options{Dir: dir}); done <- opened{s, err} }()
	select {
	case o := <-done:
		if o.err == nil {
			o.s.Close()
		}
		if o.err == nil || !strings.Contains(o.err.Error(), "another process has it open") {
			t.Errorf("Open of a store being read = %v, want it refused: another process has it open", o.err)
		}
		reader.Close()
	case <-time.After(10 * time.Second):
		reader.Close()
		if o := <-done; o.err == nil {
			o.s.Close()
		}
		t.Fatal("Open of a store being read still waited for its lock after 10 s")
	}
}
