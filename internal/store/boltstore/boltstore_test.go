package boltstore

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"
	bolt "go.etcd.io/bbolt"

	"visitors/internal/race"
	"visitors/internal/store"
	"visitors/internal/store/storetest"
	"visitors/internal/store/tally"
)

var ctx = context.Background()

func mustOpen(t *testing.T, o Options) *Store {
	t.Helper()
	s, err := Open(o)
	if err != nil {
		t.Fatalf("Open(%s): %v", o.Dir, err)
	}
	return s
}

// mustClose closes s, and fails the test if Close fails or has not
// returned within waitLimit (Close waits for the check after Open:
// one that never ends hung the package until go test's timeout).
func mustClose(t *testing.T, s *Store) {
	t.Helper()
	var err error
	within(t, waitLimit, "Close", func() { err = s.Close() })
	if err != nil {
		t.Fatalf("Close: %v", err)
	}
}

// waitLimit bounds each wait of a test on the store: a Hit, a Close, the
// end of the check after Open. Each takes milliseconds; a store that
// never answers fails the test with a message, well within go test's
// timeout, rather than hanging the package.
const waitLimit = 10 * time.Second

// waitChecked waits for the check after Open to end, and fails the test
// if it has not within waitLimit.
func waitChecked(t *testing.T, s *Store) {
	t.Helper()
	within(t, waitLimit, "the check after Open", func() { <-s.checked })
}

// reopen closes s and opens o (its directory, as a restart would).
func reopen(t *testing.T, s *Store, o Options) *Store {
	t.Helper()
	mustClose(t, s)
	return mustOpen(t, o)
}

func TestReopenKeepsEverything(t *testing.T) {
	for _, d := range []store.Durability{store.Batch, store.Sync} {
		t.Run(d.String(), func(t *testing.T) {
			dir := t.TempDir()
			s := mustOpen(t, Options{Dir: dir, Durability: d})
			var last uint64
			for range 5 {
				last = mustHit(t, s)
			}
			for _, k := range []string{"a", "b", "a", "octocat/hello-world", "a"} {
				if _, err := storetest.Incr(ctx, s, []byte(k)); err != nil {
					t.Fatal(err)
				}
			}
			s = reopen(t, s, Options{Dir: dir, Durability: d})
			defer mustClose(t, s)
			if n := mustHit(t, s); n <= last {
				t.Errorf("after reopening, Hit() = %d, want more than %d", n, last)
			}
			for k, want := range map[string]uint64{"a": 3, "b": 1, "octocat/hello-world": 1, "c": 0} {
				if c := mustGet(t, s, []byte(k)); c.Total != want || c.Today != want {
					t.Errorf("after reopening, Get(%s) = %+v, want total and today %d", k, c, want)
				}
			}
			if s.Keys() != 3 {
				t.Errorf("Keys() = %d, want 3", s.Keys())
			}
		})
	}
}

// TestBatchReservesHitNumbersAhead: in batch mode a /hi number is handed
// out only once a reservation covering it is on disk, and reservations
// run ahead, so that most numbers need no write at all. A crash (the file
// as it is between two writes) must never give a number again.
func TestBatchReservesHitNumbersAhead(t *testing.T) {
	dir := t.TempDir()
	s := mustOpen(t, Options{Dir: dir, FlushInterval: time.Hour}) // no timed flush
	var last uint64
	for range 500 {
		n, err := s.Hit(ctx)
		if err != nil {
			t.Fatal(err)
		}
		last = n
	}
	if last != 500 {
		t.Fatalf("500th Hit() = %d", last)
	}
	if got := s.Stats().Passes; got != 1 {
		t.Errorf("500 numbers took %d writes, want 1: one reservation ahead of them", got)
	}
	for r := s.reserved.Load(); last < r; { // up to the last reserved number
		last = mustHit(t, s)
	}
	if got := s.Stats().Passes; got != 1 {
		t.Errorf("%d numbers, the whole first reservation, took %d writes, want 1", last, got)
	}
	c := crashAndReopen(t, s)
	if n := mustHit(t, c); n <= last {
		t.Errorf("after a crash, Hit() = %d, want more than the %d already handed out", n, last)
	}
}

// crashAndReopen closes s after a copy of its file as a crash would
// leave it now, and opens that copy, closed when t ends.
func crashAndReopen(t *testing.T, s *Store) *Store {
	t.Helper()
	crashed := crashCopy(t, s)
	mustClose(t, s)
	c := mustOpen(t, Options{Dir: crashed})
	t.Cleanup(func() {
		if err := c.Close(); err != nil {
			t.Errorf("Close of the crashed copy: %v", err)
		}
	})
	return c
}

// crashCopy copies the store's file, as a crash would leave it now (the
// last commit), into a new directory, and returns that directory.
func crashCopy(t *testing.T, s *Store) string {
	t.Helper()
	dir := t.TempDir()
	err := s.db.View(func(tx *bolt.Tx) error { return tx.CopyFile(filepath.Join(dir, FileName), 0o644) })
	if err != nil {
		t.Fatal(err)
	}
	// What a crash leaves of the log: every record written so far (the
	// test calls this while the flusher is idle).
	if log, err := os.ReadFile(filepath.Join(s.o.Dir, LogName)); err == nil {
		if err := os.WriteFile(filepath.Join(dir, LogName), log, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// failDisk makes every write of s fail, the bbolt file's and the log's,
// as a dead disk would. It returns the file's path, to reopen it with
// and put back in s.db; the log heals with healLog.
func failDisk(s *Store) string {
	path := s.db.Path()
	s.db.Close() // bbolt's writes fail with ErrDatabaseNotOpen
	fault := func() error { return errors.New("planted: the disk is gone") }
	setHooks(s, func(h *hooks) { h.logFault = fault })
	return path
}

func healLog(s *Store) { setHooks(s, func(h *hooks) { h.logFault = nil }) }

func TestDaysSurviveReopenAndMidnight(t *testing.T) {
	dir := t.TempDir()
	clock := storetest.NewClock(storetest.At(0, "12:00"))
	s := mustOpen(t, Options{Dir: dir, Now: clock.Now, FlushInterval: time.Hour})
	key := []byte("badge")
	for range 4 {
		mustIncr(t, s, key)
	}
	s.flush(false) // day 1 is on disk
	clock.Add(24 * time.Hour)
	s.Rollover()
	for range 2 {
		mustIncr(t, s, key)
	}
	mustClose(t, s)

	clock.Add(24 * time.Hour)
	s = mustOpen(t, Options{Dir: dir, Now: clock.Now})
	defer mustClose(t, s)
	mustIncr(t, s, key)
	d, err := s.Days(ctx, key, 4)
	if err != nil {
		t.Fatal(err)
	}
	if want := []uint64{0, 4, 2, 1}; fmt.Sprint(d.Counts) != fmt.Sprint(want) {
		t.Errorf("Days(4) = %v, want %v", d.Counts, want)
	}
	if c := mustGet(t, s, key); c.Total != 7 || c.Today != 1 {
		t.Errorf("Get = %+v, want total 7, today 1", c)
	}
}

// TestSecondOpenIsRefused: a second Open of a directory in use is
// refused, within its short wait for the file's lock. A wait of 0
// (file.go's `200 * time.Millisecond` as `200 / time.Millisecond`) is
// bbolt's "wait for ever": the second Open hung the package until go
// test's timeout; it now fails here after waitLimit.
func TestSecondOpenIsRefused(t *testing.T) {
	dir := t.TempDir()
	s := mustOpen(t, Options{Dir: dir})
	type opened struct {
		s   *Store
		err error
	}
	done := make(chan opened, 1)
	go func() { s2, err := Open(Options{Dir: dir}); done <- opened{s2, err} }()
	select {
	case o := <-done:
		mustClose(t, s)
		if o.err == nil {
			o.s.Close()
			t.Fatal("a second Open of the same directory succeeded")
		}
		if !strings.Contains(o.err.Error(), "another process") {
			t.Errorf("second Open error = %q, want it to say another process has it", o.err)
		}
	case <-time.After(waitLimit):
		mustClose(t, s) // the waiting Open takes the lock, and is closed
		if o := <-done; o.err == nil {
			o.s.Close()
		}
		t.Fatalf("a second Open of the same directory still waited for its lock after %v", waitLimit)
	}
}

// TestFlushFailureKeepsCountsAndRetries closes the file under the store
// so that every write fails, then reopens it: the counts made while it
// was failing reach the disk on the retry.
func TestFlushFailureKeepsCountsAndRetries(t *testing.T) {
	dir := t.TempDir()
	s := mustOpen(t, Options{Dir: dir, FlushInterval: time.Hour})
	mustIncr(t, s, []byte("k"))
	s.flush(false)
	if err := s.db.Close(); err != nil { // writes now fail with bolt's ErrDatabaseNotOpen
		t.Fatal(err)
	}
	mustIncr(t, s, []byte("k"))
	s.flush(false)
	if err := s.Health(); err == nil || !strings.Contains(err.Error(), FileName) {
		t.Fatalf("Health() = %v after a failed flush, want an error naming the file", err)
	}
	db, err := bolt.Open(filepath.Join(dir, FileName), 0o644, nil) // the disk is back
	if err != nil {
		t.Fatal(err)
	}
	s.db = db
	s.flush(false)
	if err := s.Health(); err != nil {
		t.Fatalf("Health() = %v after a successful retry, want nil", err)
	}
	s = reopen(t, s, Options{Dir: dir})
	defer mustClose(t, s)
	if c := mustGet(t, s, []byte("k")); c.Total != 2 {
		t.Errorf("after the retry and a reopen, total = %d, want 2", c.Total)
	}
}

func TestSyncFailureIsNotAcknowledged(t *testing.T) {
	dir := t.TempDir()
	s := mustOpen(t, Options{Dir: dir, Durability: store.Sync, FlushInterval: time.Hour}) // no timed retries
	if _, err := storetest.Incr(ctx, s, []byte("k")); err != nil {
		t.Fatal(err)
	}
	path := failDisk(s) // every write fails from here
	if _, err := storetest.Incr(ctx, s, []byte("k")); err == nil {
		t.Error("Incr in sync mode succeeded while writes fail, want an error")
	}
	if _, err := s.Hit(ctx); err == nil {
		t.Error("Hit in sync mode succeeded while writes fail, want an error")
	}
	diskBack(t, s, path)
	healLog(s)
	if _, err := storetest.Incr(ctx, s, []byte("k")); err != nil {
		t.Errorf("Incr after the disk came back: %v", err)
	}
	mustClose(t, s)
}

func TestConcurrentSyncVisitsAreAllCounted(t *testing.T) {
	dir := t.TempDir()
	s := mustOpen(t, Options{Dir: dir, Durability: store.Sync})
	var wg sync.WaitGroup
	for g := range 32 {
		wg.Go(func() {
			for range 20 {
				if _, err := storetest.Incr(ctx, s, fmt.Appendf(nil, "k%d", g%4)); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	s = reopen(t, s, Options{Dir: dir})
	defer mustClose(t, s)
	for i := range 4 {
		if c := mustGet(t, s, fmt.Appendf(nil, "k%d", i)); c.Total != 160 {
			t.Errorf("k%d total = %d, want 160", i, c.Total)
		}
	}
}

// TestBatchHotPathAllocatesNothing: in batch mode a visit to a known key,
// and a /hi number inside the reservation, touch only memory.
func TestBatchHotPathAllocatesNothing(t *testing.T) {
	if race.Enabled {
		t.Skip("allocation budgets are checked without -race")
	}
	s := mustOpen(t, Options{Dir: t.TempDir()})
	defer mustClose(t, s)
	key := []byte("gopher")
	mustIncr(t, s, key)
	mustHit(t, s) // makes the first reservation durable
	if got := testing.AllocsPerRun(500, func() { storetest.Incr(ctx, s, key) }); got != 0 {
		t.Errorf("batch Incr allocs = %v, want 0", got)
	}
	if got := testing.AllocsPerRun(200, func() { s.Hit(ctx) }); got != 0 {
		t.Errorf("batch Hit allocs = %v, want 0", got)
	}
}

// diskBack reopens the file at path as s's, after a test closed it
// under s to make its writes fail: the disk is back.
func diskBack(t *testing.T, s *Store, path string) {
	t.Helper()
	db, err := bolt.Open(path, 0o644, nil)
	if err != nil {
		t.Fatal(err)
	}
	s.db = db
}

// openBench opens a store with o in a temporary directory, closed when b
// ends.
func openBench(b *testing.B, o Options) *Store {
	o.Dir = b.TempDir()
	s, err := Open(o)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close() })
	return s
}

func BenchmarkIncr(b *testing.B) {
	for _, d := range []store.Durability{store.Batch, store.Sync} {
		b.Run("durability="+d.String(), func(b *testing.B) {
			s := openBench(b, Options{Durability: d})
			key := []byte("gopher")
			b.ReportAllocs()
			for b.Loop() {
				if _, err := storetest.Incr(ctx, s, key); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkIncrParallel is group commit at work in sync mode: every
// goroutine waits for its own visit to be on disk, and they share commits.
func BenchmarkIncrParallel(b *testing.B) {
	for _, d := range []store.Durability{store.Batch, store.Sync} {
		b.Run("durability="+d.String(), func(b *testing.B) {
			s := openBench(b, Options{Durability: d})
			b.ReportAllocs()
			b.SetParallelism(32) // 64 waiters on 2 cores, like 64 connections
			b.RunParallel(func(pb *testing.PB) {
				key := []byte("gopher")
				for pb.Next() {
					if _, err := storetest.Incr(ctx, s, key); err != nil {
						b.Error(err)
						return
					}
				}
			})
		})
	}
}

func TestConformance(t *testing.T) {
	for _, d := range []store.Durability{store.Batch, store.Sync} {
		t.Run(d.String(), func(t *testing.T) {
			storetest.Run(t, storetest.Backend{
				Durable: true,
				Open: func(t *testing.T, c storetest.Config) store.Store {
					// An hour: only Close and Flush write in batch mode, so
					// the suite's midnights fall between two flushes.
					return mustOpen(t, Options{Dir: c.Dir, Durability: d, MaxKeys: c.MaxKeys, Now: c.Now, FlushInterval: time.Hour})
				},
			})
		})
	}
}

// TestEmptyNameDoesNotStopFlushes is the review's reproduction: a visit
// to the empty key (/hello with no name) next to another key; both reach
// the disk, every later flush works, and a clean restart keeps them.
func TestEmptyNameDoesNotStopFlushes(t *testing.T) {
	dir := t.TempDir()
	s := mustOpen(t, Options{Dir: dir, FlushInterval: time.Hour})
	for _, k := range []string{"a", "", "a"} {
		if _, err := storetest.Incr(ctx, s, []byte(k)); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Flush(); err != nil {
		t.Fatalf("Flush with the empty key: %v", err)
	}
	if err := s.Health(); err != nil {
		t.Fatalf("Health() = %v", err)
	}
	mustIncr(t, s, []byte("b"))
	if err := s.Flush(); err != nil {
		t.Fatalf("a later Flush: %v", err)
	}
	crashed := crashCopy(t, s)
	mustClose(t, s)
	for _, d := range []string{dir, crashed} {
		s := mustOpen(t, Options{Dir: d})
		for k, want := range map[string]uint64{"a": 2, "": 1, "b": 1} {
			if c := mustGet(t, s, []byte(k)); c.Total != want {
				t.Errorf("%s: Get(%q) = %d, want %d", d, k, c.Total, want)
			}
		}
		mustClose(t, s)
	}
}

// TestOneFailingKeyDoesNotBlockTheOthers plants a write failure tied to
// one key: the other keys still reach the disk in the same passes, the
// failing key is reported (Health, Stats, the log) and retried, and it is
// written once it can be.
func TestOneFailingKeyDoesNotBlockTheOthers(t *testing.T) {
	for _, tc := range []struct {
		name   string
		d      store.Durability
		logged bool // a sync visit is durable in the log: acknowledged
	}{
		{"batch", store.Batch, false},
		{"sync", store.Sync, true},
		{"sync-log-failing", store.Sync, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := tc.d
			dir := t.TempDir()
			var logged bytes.Buffer
			s := mustOpen(t, Options{Dir: dir, Durability: d, FlushInterval: time.Hour, Log: zerolog.New(&logged)})
			if d == store.Sync && !tc.logged {
				// bad is a counter already, set by its owner: a refused
				// visit that made it would take it back, leaving no key
				// to fail.
				if _, err := s.Set(ctx, []byte("bad"), 0); err != nil {
					t.Fatal(err)
				}
			}
			fault := func(key string) error {
				if key == "bad" {
					return errors.New("planted failure")
				}
				return nil
			}
			setHooks(s, func(h *hooks) { h.putFault = fault })
			if d == store.Sync && !tc.logged {
				logFault := func() error { return errors.New("planted log failure") }
				setHooks(s, func(h *hooks) { h.logFault = logFault })
			}
			_, badErr := storetest.Incr(ctx, s, []byte("bad"))
			for range 3 {
				if _, err := storetest.Incr(ctx, s, []byte("good")); err != nil {
					t.Fatalf("Incr(good) while another key fails: %v", err)
				}
			}
			s.Flush()
			switch {
			case d == store.Sync && !tc.logged && badErr == nil:
				t.Error("sync Incr(bad) succeeded though neither the log nor the file took it")
			case d == store.Sync && tc.logged && badErr != nil:
				t.Errorf("sync Incr(bad) = %v, though the log holds it", badErr)
			}
			err := s.Health()
			if err == nil || !strings.Contains(err.Error(), `"bad"`) {
				t.Errorf("Health() = %v, want it to name the key that fails", err)
			}
			if st := s.Stats(); st.FailingKeys != 1 || st.KeyErrors == 0 {
				t.Errorf("Stats() = %+v, want 1 failing key and key errors counted", st)
			}
			if !strings.Contains(logged.String(), `"key":"bad"`) {
				t.Errorf("log = %s, want a line naming the key", logged.String())
			}
			// good is on disk already, while bad still fails; a crash
			// now keeps bad's visit if the log acknowledged it.
			crashed := crashCopy(t, s)
			if c := readTotal(t, crashed, "good"); c != 3 {
				t.Errorf("on disk while another key fails, good = %d, want 3", c)
			}
			if c := readTotal(t, crashed, "bad"); tc.logged && c != 1 {
				t.Errorf("after a crash while bad fails, bad = %d, want 1 (acknowledged from the log)", c)
			}
			setHooks(s, func(h *hooks) { h.putFault = nil }) // the cause is gone
			if err := s.Flush(); err != nil {
				t.Fatal(err)
			}
			if err := s.Health(); err != nil {
				t.Errorf("Health() after the retry = %v, want nil", err)
			}
			want := uint64(1)
			if d == store.Sync && !tc.logged {
				want = 0 // its visit was refused, so it did not count
			}
			if c := readTotal(t, crashCopy(t, s), "bad"); c != want {
				t.Errorf("on disk after the retry, bad = %d, want %d", c, want)
			}
			mustClose(t, s)
		})
	}
}

// readTotal opens the store in dir and returns key's total.
func readTotal(t *testing.T, dir, key string) uint64 {
	t.Helper()
	s := mustOpen(t, Options{Dir: dir})
	defer mustClose(t, s)
	c, err := s.Get(ctx, []byte(key))
	if err != nil {
		t.Fatal(err)
	}
	return c.Total
}

// TestSyncErrorMeansNotCounted: a client that retries after a sync-mode
// error is counted once, not twice.
func TestSyncErrorMeansNotCounted(t *testing.T) {
	dir := t.TempDir()
	s := mustOpen(t, Options{Dir: dir, Durability: store.Sync, FlushInterval: time.Hour})
	mustIncrN(t, s, "k", 2)
	path := failDisk(s) // every write fails from here
	for range 3 {
		if _, err := storetest.Incr(ctx, s, []byte("k")); err == nil {
			t.Fatal("Incr succeeded while writes fail")
		}
	}
	if c := mustGet(t, s, []byte("k")); c.Total != 2 || c.Today != 2 {
		t.Errorf("after three refused visits Get = %+v, want total and today 2", c)
	}
	diskBack(t, s, path) // the disk is back
	healLog(s)
	c, err := storetest.Incr(ctx, s, []byte("k")) // the client's retry
	if err != nil || c.Total != 3 {
		t.Errorf("the retry = %+v, %v; want total 3", c, err)
	}
	mustClose(t, s)
	if got := readTotal(t, dir, "k"); got != 3 {
		t.Errorf("on disk: %d, want 3", got)
	}
}

func mustIncrN(t *testing.T, s *Store, key string, n int) {
	t.Helper()
	for range n {
		if _, err := storetest.Incr(ctx, s, []byte(key)); err != nil {
			t.Fatal(err)
		}
	}
}

// TestCleanRestartContinuesHi: after a clean stop the next /hi number is
// the last one handed out plus 1, in both modes.
func TestCleanRestartContinuesHi(t *testing.T) {
	for _, d := range []store.Durability{store.Batch, store.Sync} {
		t.Run(d.String(), func(t *testing.T) {
			dir := t.TempDir()
			for round := range 3 {
				s := mustOpen(t, Options{Dir: dir, Durability: d})
				for i := range 10 {
					n, err := s.Hit(ctx)
					if err != nil {
						t.Fatal(err)
					}
					if want := uint64(round*10 + i + 1); n != want {
						t.Fatalf("round %d: Hit() = %d, want %d", round, n, want)
					}
				}
				mustClose(t, s)
			}
		})
	}
}

// TestMidnightsBetweenFailedFlushes: the disk fails for three days; when
// it comes back, every day's count reaches it.
func TestMidnightsBetweenFailedFlushes(t *testing.T) {
	dir := t.TempDir()
	clock := storetest.NewClock(storetest.At(0, "12:00"))
	var logged bytes.Buffer
	s := mustOpen(t, Options{Dir: dir, Now: clock.Now, FlushInterval: time.Hour, Log: zerolog.New(&logged)})
	mustIncrN(t, s, "k", 1)
	if err := s.Flush(); err != nil {
		t.Fatal(err)
	}
	if logged.Len() != 0 {
		t.Errorf("a healthy pass logged %s, want nothing", logged.String())
	}
	path := s.db.Path()
	s.db.Close()
	for day := 1; day <= 3; day++ {
		clock.Add(24 * time.Hour)
		s.Rollover()
		mustIncrN(t, s, "k", day+1)
		if err := s.Flush(); err == nil {
			t.Fatal("Flush succeeded on a closed file")
		}
	}
	if got := s.Held([]byte("k")); got != 3 {
		t.Errorf("while the disk fails, memory holds %d earlier days, want the 3 not written", got)
	}
	diskBack(t, s, path)
	if err := s.Flush(); err != nil {
		t.Fatalf("Flush after the disk came back: %v", err)
	}
	if got := s.Held([]byte("k")); got != 0 {
		t.Errorf("once written, memory holds %d earlier days, want 0", got)
	}
	if got := strings.Count(logged.String(), "flush failed"); got != 1 {
		t.Errorf("three failed passes logged %d failure lines, want 1:\n%s", got, logged.String())
	}
	if got := strings.Count(logged.String(), "flush recovered"); got != 1 {
		t.Errorf("the recovery logged %d lines, want 1:\n%s", got, logged.String())
	}
	s = reopen(t, s, Options{Dir: dir, Now: clock.Now})
	defer mustClose(t, s)
	d, err := s.Days(ctx, []byte("k"), 4)
	if err != nil {
		t.Fatal(err)
	}
	if want := "[1 2 3 4]"; fmt.Sprint(d.Counts) != want {
		t.Errorf("Days(4) = %v, want %s", d.Counts, want)
	}
	if s.Held([]byte("k")) != 0 {
		t.Errorf("Held = %d after everything reached the disk, want 0", s.Held([]byte("k")))
	}
}

func mustIncr(t *testing.T, s *Store, key []byte) store.Counts {
	t.Helper()
	c, err := storetest.Incr(ctx, s, key)
	noErr(t, err, "Incr(%q)", key)
	return c
}

// mustHit returns the next /hi number, and fails the test if Hit fails
// or has not answered within waitLimit (a Hit that needs a reservation
// waits for the flusher, which waits for the check after Open).
func mustHit(t *testing.T, s *Store) uint64 {
	t.Helper()
	var n uint64
	var err error
	within(t, waitLimit, "Hit", func() { n, err = s.Hit(ctx) })
	noErr(t, err, "Hit")
	return n
}

func mustGet(t *testing.T, s *Store, key []byte) store.Counts {
	t.Helper()
	c, err := s.Get(ctx, key)
	noErr(t, err, "Get(%q)", key)
	return c
}

func mustDays(t *testing.T, s *Store, key []byte, n int) store.Daily {
	t.Helper()
	d, err := s.Days(ctx, key, n)
	noErr(t, err, "Days(%q, %d)", key, n)
	return d
}

// wantKeys fails the test unless s holds n keys (Keys), saying when.
func wantKeys(t *testing.T, s *Store, n int, when string) {
	t.Helper()
	if s.Keys() != n {
		t.Errorf("%s: Keys() = %d, want %d", when, s.Keys(), n)
	}
}

// noErr fails the test if err is not nil, naming the call (a format and
// its arguments) that returned it.
func noErr(t *testing.T, err error, call string, args ...any) {
	t.Helper()
	if err != nil {
		t.Fatalf(call+": %v", append(args, err)...)
	}
}

func TestReservation(t *testing.T) {
	tests := []struct {
		name                 string
		reserved, hits, used uint64
		want                 uint64
	}{
		{"first: at least 1,000 ahead", 0, 1, 0, 1001},
		{"more than half left: unchanged", 1001, 400, 399, 1001},
		{"exactly half left: unchanged", 1500, 1000, 999, 1500},
		{"less than half left: ten intervals of the rate ahead", 1001, 600, 500, 600 + 1000},
		{"a fast rate: ten intervals", 10_000, 9_000, 4_000, 9_000 + 50_000},
		{"past the reservation", 1000, 1200, 1100, 1200 + 1000},
		{"at most 10 million", 0, 5_000_000, 0, 5_000_000 + 10_000_000},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := &Store{used: tt.used}
			s.reserved.Store(tt.reserved)
			if got := s.reservation(tt.hits); got != tt.want {
				t.Errorf("reservation(hits %d, reserved %d, used %d) = %d, want %d", tt.hits, tt.reserved, tt.used, got, tt.want)
			}
		})
	}
}

// TestHealthNamesTheFirstFailingKey: with several keys failing, /healthz
// names the first in byte order, so the message does not change from
// one pass to the next.
func TestHealthNamesTheFirstFailingKey(t *testing.T) {
	s := mustOpen(t, Options{Dir: t.TempDir(), FlushInterval: time.Hour})
	fault := func(key string) error {
		if key != "ok" {
			return errors.New("planted failure")
		}
		return nil
	}
	setHooks(s, func(h *hooks) { h.putFault = fault })
	for _, k := range []string{"zz", "b", "ok", "a", "m"} {
		mustIncrN(t, s, k, 1)
	}
	for range 3 {
		s.Flush()
		err := s.Health()
		if err == nil || !strings.Contains(err.Error(), `4 keys`) || !strings.Contains(err.Error(), `key "a"`) {
			t.Fatalf("Health() = %v, want 4 keys failing, naming \"a\"", err)
		}
	}
	setHooks(s, func(h *hooks) { h.putFault = nil })
	mustClose(t, s)
}

// TestCloseTriesTwice: a last flush that fails once is tried again before
// Close gives up, and then nothing is lost.
func TestCloseTriesTwice(t *testing.T) {
	dir := t.TempDir()
	s := mustOpen(t, Options{Dir: dir, FlushInterval: time.Hour})
	mustIncrN(t, s, "k", 2)
	var calls atomic.Int32
	fault := func(string) error {
		if calls.Add(1) == 1 {
			return errors.New("planted failure, once")
		}
		return nil
	}
	setHooks(s, func(h *hooks) { h.putFault = fault })
	mustClose(t, s)
	if got := readTotal(t, dir, "k"); got != 2 {
		t.Errorf("after a Close whose first try failed, k = %d on disk, want 2", got)
	}
}

// TestDaysAfterTheClockWentBack: a store written while the clock was a
// day ahead, reopened with the clock right, reads its days without
// looking past today.
func TestDaysAfterTheClockWentBack(t *testing.T) {
	dir := t.TempDir()
	clock := storetest.NewClock(storetest.At(1, "12:00"))
	s := mustOpen(t, Options{Dir: dir, Now: clock.Now})
	mustIncrN(t, s, "k", 3)
	mustClose(t, s)
	clock.Add(-24 * time.Hour) // the record written is now tomorrow's
	s = mustOpen(t, Options{Dir: dir, Now: clock.Now})
	defer mustClose(t, s)
	mustIncrN(t, s, "k", 1)
	if d := mustDays(t, s, []byte("k"), 2); fmt.Sprint(d.Counts) != "[0 1]" {
		t.Errorf("Days(2) = %v, want [0 1]: the day ahead is not in the window", d.Counts)
	}
}

// TestPendingAndOnFlush: while the disk fails, Pending counts the
// acknowledged visits not on disk and dates them from the first failed
// pass; OnFlush sees every pass with its error; once written, nothing is
// pending.
func TestPendingAndOnFlush(t *testing.T) {
	var mu sync.Mutex
	var passes []error
	onFlush := func(_ time.Time, d time.Duration, err error) {
		mu.Lock()
		defer mu.Unlock()
		if d <= 0 {
			t.Errorf("OnFlush got a duration of %v", d)
		}
		passes = append(passes, err)
	}
	s := mustOpen(t, Options{Dir: t.TempDir(), FlushInterval: time.Hour, OnFlush: onFlush})
	mustIncrN(t, s, "a", 2)
	if err := s.Flush(); err != nil {
		t.Fatal(err)
	}
	if n, oldest, w := s.Pending(); n != 0 || !oldest.IsZero() || w != 0 {
		t.Errorf("after a written pass Pending() = %d, %v, %d; want nothing", n, oldest, w)
	}
	path := s.db.Path()
	s.db.Close()
	before := time.Now()
	mustIncrN(t, s, "a", 3)
	mustIncrN(t, s, "b", 1)
	s.Flush()
	mustIncrN(t, s, "b", 1)
	s.Flush()
	n, oldest, _ := s.Pending()
	if n != 5 || oldest.Before(before) || oldest.After(time.Now()) {
		t.Errorf("while writes fail Pending() = %d, %v; want 5 visits, dated from the first failed pass (after %v)", n, oldest, before)
	}
	diskBack(t, s, path)
	if err := s.Flush(); err != nil {
		t.Fatal(err)
	}
	if n, oldest, _ := s.Pending(); n != 0 || !oldest.IsZero() {
		t.Errorf("once written Pending() = %d, %v; want nothing", n, oldest)
	}
	mustClose(t, s)
	mu.Lock()
	defer mu.Unlock()
	if len(passes) < 4 || passes[0] != nil || passes[1] == nil || passes[2] == nil || passes[3] != nil {
		t.Errorf("OnFlush saw %v, want nil, an error, an error, nil, ...", passes)
	}
}

// TestPendingCountsNoRefusedSyncVisit: in sync mode a visit whose pass
// failed was refused, so it is not pending.
func TestPendingCountsNoRefusedSyncVisit(t *testing.T) {
	s := mustOpen(t, Options{Dir: t.TempDir(), Durability: store.Sync, FlushInterval: time.Hour})
	mustIncrN(t, s, "a", 1)
	path := failDisk(s) // every write fails from here
	if _, err := storetest.Incr(ctx, s, []byte("a")); err == nil {
		t.Fatal("sync Incr succeeded while writes fail")
	}
	if n, _, _ := s.Pending(); n != 0 {
		t.Errorf("Pending() = %d after a refused sync visit, want 0", n)
	}
	diskBack(t, s, path)
	healLog(s)
	mustClose(t, s)
}

// TestHitDuringCloseIsNeverRepeated (claim 6: numbers may be
// skipped, never repeated). A batch Hit that runs while Close's final
// pass commits takes a number above the exact counter that pass writes,
// but still inside the old reservation, so it is handed out without
// waiting; the restart then hands the same number out again. The app
// closes the store after an http.Server.Shutdown that can time out with
// handlers still running, so this is reachable.
// Found by review (was TestReviewHitDuringCloseIsNeverRepeated).
func TestHitDuringCloseIsNeverRepeated(t *testing.T) {
	for round := range 20 {
		dir := t.TempDir()
		s := mustOpen(t, Options{Dir: dir, FlushInterval: time.Hour})
		mustHit(t, s) // a reservation of 1,000 on disk
		var maxGiven atomic.Uint64
		var stop atomic.Bool
		var wg sync.WaitGroup
		for range 4 {
			wg.Go(func() {
				for !stop.Load() {
					n, err := s.Hit(ctx)
					if err != nil {
						return
					}
					for {
						m := maxGiven.Load()
						if n <= m || maxGiven.CompareAndSwap(m, n) {
							break
						}
					}
					if n > 900 { // stay inside the reservation
						return
					}
					runtime.Gosched()
				}
			})
		}
		time.Sleep(100 * time.Microsecond)
		s.Close()
		stop.Store(true)
		wg.Wait()
		s = mustOpen(t, Options{Dir: dir})
		n := mustHit(t, s)
		mustClose(t, s)
		if n <= maxGiven.Load() {
			t.Fatalf("round %d: after a clean restart Hit() = %d, but %d was already handed out (during Close)", round, n, maxGiven.Load())
		}
	}
}

// TestMidnightDuringSnapshotLosesNoDay (claim 3). Snapshot reads
// the latest day, then the earlier days: a rollover in between makes
// latest = (d, n) and past hold (d, n+k). put writes past, then latest,
// so day d is written as n, and Forget drops d from memory: k visits of
// day d are lost for good (the total keeps them: days no longer add up
// to the total).
// Found by review (was TestReviewMidnightDuringSnapshotLosesNoDay).
func TestMidnightDuringSnapshotLosesNoDay(t *testing.T) {
	dir := t.TempDir()
	clock := storetest.NewClock(storetest.At(0, "12:00"))
	s := mustOpen(t, Options{Dir: dir, Now: clock.Now, FlushInterval: time.Hour})
	key := []byte("k")
	mustIncr(t, s, key)
	var stop atomic.Bool
	var wg sync.WaitGroup
	for range 2 {
		wg.Go(func() {
			for !stop.Load() {
				mustIncr(t, s, key)
			}
		})
	}
	wg.Go(func() { // a midnight every 200µs
		for !stop.Load() {
			time.Sleep(200 * time.Microsecond)
			clock.Add(24 * time.Hour)
			s.Rollover()
		}
	})
	// Many snapshots: the flusher's own, in a loop.
	deadline := time.Now().Add(2 * time.Second)
	for time.Now().Before(deadline) {
		e := s.keys.Load(key)
		var buf []tally.DayCount
		for range 10000 {
			_, latest, past := e.Snapshot(buf[:0])
			buf = past
			for _, dc := range past {
				if dc.Day == latest.Day && dc.Count != latest.Count {
					stop.Store(true)
					wg.Wait()
					s.Close()
					t.Fatalf("Snapshot returned day %d twice: latest %d, past %d; put writes past then latest, so day %d is written as %d and %d visits are lost", dc.Day, latest.Count, dc.Count, dc.Day, latest.Count, dc.Count-latest.Count)
				}
			}
		}
	}
	stop.Store(true)
	wg.Wait()
	mustClose(t, s)
}

// TestSyncErrorAfterClientGoneMeansNotCounted (claim 7, store
// contract "a call that returns an error counted nothing"): a sync Incr
// whose context ends while its pass is running must not return an error
// for a visit that then counts. The store waits for the pass: the answer
// and the count agree.
// Found by review (was TestReviewSyncErrorAfterClientGoneMeansNotCounted).
func TestSyncErrorAfterClientGoneMeansNotCounted(t *testing.T) {
	dir := t.TempDir()
	s := mustOpen(t, Options{Dir: dir, Durability: store.Sync, FlushInterval: time.Hour})
	block := make(chan struct{})
	var once sync.Once
	f := func(string) error { once.Do(func() { <-block }); return nil }
	setHooks(s, func(h *hooks) { h.putFault = f })
	go storetest.Incr(ctx, s, []byte("first")) // holds the flusher in its pass
	time.Sleep(20 * time.Millisecond)
	c, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { _, err := storetest.Incr(c, s, []byte("k")); done <- err }()
	time.Sleep(20 * time.Millisecond)
	cancel()
	close(block)
	err := <-done
	if err := s.Flush(); err != nil {
		t.Fatal(err)
	}
	got := mustGet(t, s, []byte("k"))
	if (err == nil) != (got.Total == 1) {
		t.Errorf("Incr returned %v, and the visit's total is %d: an error must mean not counted, success counted", err, got.Total)
	}
	mustClose(t, s)
}

// TestHitAtTheReservationEdge guards the batch /hi reservation: the
// number just past the durable reservation must wait for a write, so a
// crash right after it is handed out cannot give it again. (Passes; no
// other test fails if Hit compares with reserved+1.)
// Found by review (was TestReviewHitAtTheReservationEdge).
func TestHitAtTheReservationEdge(t *testing.T) {
	dir := t.TempDir()
	s := mustOpen(t, Options{Dir: dir, FlushInterval: time.Hour})
	last := mustHit(t, s) // makes the first reservation durable
	for edge := s.reserved.Load() + 1; last < edge; {
		last = mustHit(t, s) // up to the first number past it
	}
	c := crashAndReopen(t, s)
	if n := mustHit(t, c); n <= last {
		t.Errorf("after a crash, Hit() = %d, but %d was already handed out", n, last)
	}
}

// TestSetBounds: Set takes a total up to store.MaxTotal (2^62), the most
// the API sets, and refuses one more, changing nothing.
func TestSetBounds(t *testing.T) {
	s := mustOpen(t, Options{Dir: t.TempDir()})
	defer mustClose(t, s)
	if got := mustSet(t, s, "k", store.MaxTotal); got.Total != store.MaxTotal {
		t.Errorf("Set(k, 2^62) = %+v, want total 2^62", got)
	}
	if _, err := s.Set(ctx, []byte("k"), store.MaxTotal+1); err == nil {
		t.Error("Set(k, 2^62+1) = nil error, want a refusal")
	}
	if got := mustGet(t, s, []byte("k")); got.Total != store.MaxTotal {
		t.Errorf("Get(k) after a refused Set = %+v, want total 2^62", got)
	}
}

// TestRefusedSyncVisitLeavesNoKey: in sync mode a visit refused because
// its pass could not be written (the whole disk, or the key alone)
// leaves no key behind: the key is not listed, not counted in Keys, and
// takes no place under MaxKeys, so that once the disk is back new keys
// are made up to the limit. A key that existed at 0 before its refused
// visit stays. Before, each refused visit left its key at 0: a hostile
// review counted 80 such keys taking -max-keys places in one run.
func TestRefusedSyncVisitLeavesNoKey(t *testing.T) {
	dir := t.TempDir()
	s := mustOpen(t, Options{Dir: dir, Durability: store.Sync, FlushInterval: time.Hour, MaxKeys: 4})
	if _, err := s.Set(ctx, []byte("zero"), 0); err != nil {
		t.Fatal(err)
	}
	path := failDisk(s)
	for i := range 5 {
		if _, _, err := s.Visit(ctx, fmt.Appendf(nil, "new%d", i), true); err == nil {
			t.Fatalf("Visit(new%d) in sync mode succeeded while writes fail", i)
		}
	}
	if _, _, err := s.Visit(ctx, []byte("zero"), true); err == nil {
		t.Fatal("Visit(zero) in sync mode succeeded while writes fail")
	}
	if n := s.Keys(); n != 1 {
		t.Errorf("Keys() = %d after refused visits, want 1 (zero)", n)
	}
	diskBack(t, s, path)
	healLog(s)
	// One key alone fails now: its refused visit leaves no key either.
	fault := func(key string) error {
		if key == "bad" {
			return errors.New("planted failure")
		}
		return nil
	}
	setHooks(s, func(h *hooks) { h.putFault = fault })
	logFault := func() error { return errors.New("planted log failure") }
	setHooks(s, func(h *hooks) { h.logFault = logFault })
	if _, _, err := s.Visit(ctx, []byte("bad"), true); err == nil {
		t.Fatal("Visit(bad) succeeded though neither the log nor the file took it")
	}
	setHooks(s, func(h *hooks) { h.putFault = nil })
	healLog(s)
	es, err := s.List(ctx, nil, nil, 100)
	if err != nil {
		t.Fatal(err)
	}
	if len(es) != 1 || string(es[0].Key) != "zero" {
		t.Errorf("List after refused visits = %+v, want only zero", es)
	}
	// The places are free: three new keys are made, up to MaxKeys 4.
	for i := range 3 {
		c, made, err := s.Visit(ctx, fmt.Appendf(nil, "new%d", i), true)
		if err != nil || !made || c.Total != 1 {
			t.Errorf("Visit(new%d) after the disk came back = %+v, %v, %v; want a new key at 1", i, c, made, err)
		}
	}
	if _, _, err := s.Visit(ctx, []byte("new4"), true); !errors.Is(err, store.ErrTooManyKeys) {
		t.Errorf("a fifth key = %v, want ErrTooManyKeys", err)
	}
	s = reopen(t, s, Options{Dir: dir, Durability: store.Sync})
	defer mustClose(t, s)
	if n := s.Keys(); n != 4 {
		t.Errorf("after a reopen Keys() = %d, want 4", n)
	}
	if c := mustGet(t, s, []byte("new0")); c.Total != 1 {
		t.Errorf("after a reopen new0 = %+v, want 1", c)
	}
}
