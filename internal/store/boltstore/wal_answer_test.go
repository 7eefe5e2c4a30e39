package boltstore

import (
	"errors"
	"fmt"
	"hash/crc32"
	"strconv"
	"sync"
	"testing"
	"time"

	"visitors/internal/store"
)

// holdSyncs makes every log fdatasync of s wait, after its record is
// written, until the test lets it go: it returns a channel that gets a
// value each time a sync is about to begin, a function that lets one sync
// go on (nil) or fail with err, and one that lets every sync through from
// then on (defer it, so that a failed test still closes the store).
func holdSyncs(s *Store) (began <-chan struct{}, release func(err error), stop func()) {
	b := make(chan struct{}, 16)
	r := make(chan error)
	quit := make(chan struct{})
	fault := func() error {
		select {
		case b <- struct{}{}:
		case <-quit:
			return nil
		}
		select {
		case err := <-r:
			return err
		case <-quit:
			return nil
		}
	}
	s.logFault.Store(&fault)
	return b, func(err error) { r <- err }, func() { close(quit); healLog(s) }
}

// inBothModes runs test with the log's passes pipelined, then with one
// goroutine doing each pass whole (see pipelineLog).
func inBothModes(t *testing.T, test func(t *testing.T)) {
	defer func(f func() bool) { pipelineLog = f }(pipelineLog)
	for _, on := range []bool{true, false} {
		pipelineLog = func() bool { return on }
		name := "pipelined"
		if !on {
			name = "one-goroutine"
		}
		t.Run(name, test)
	}
}

// TestLogAnswersOnlyAfterItsSync: a sync visit is answered only once the
// record holding it is written and its fdatasync has returned, and the
// visits that arrive meanwhile wait for a record of their own, written
// only after it: records reach the disk in order, one pass at a time.
func TestLogAnswersOnlyAfterItsSync(t *testing.T) {
	inBothModes(t, func(t *testing.T) {
		s := openSyncLogOnly(t, t.TempDir())
		defer mustClose(t, s)
		began, release, stop := holdSyncs(s)
		defer stop()

		first := make(chan error, 1)
		go func() { _, err := s.Incr(ctx, []byte("a")); first <- err }()
		<-began // a's record is written, its sync held
		second := make(chan error, 1)
		go func() { _, err := s.Incr(ctx, []byte("b")); second <- err }()
		select {
		case err := <-first:
			t.Fatalf("Incr(a) returned (%v) while its record was not yet written and synced", err)
		case err := <-second:
			t.Fatalf("Incr(b) returned (%v) before its record was even begun", err)
		case <-began:
			t.Fatal("a second sync began while the first was held: records must reach the disk in order")
		case <-time.After(100 * time.Millisecond):
		}
		release(nil)
		if err := <-first; err != nil {
			t.Fatalf("Incr(a) = %v once its record was durable", err)
		}
		<-began // b's own record
		select {
		case err := <-second:
			t.Fatalf("Incr(b) returned (%v) while its record was not yet written and synced", err)
		case <-time.After(100 * time.Millisecond):
		}
		release(nil)
		if err := <-second; err != nil {
			t.Fatalf("Incr(b) = %v once its record was durable", err)
		}
		if got := s.Stats().LogRecords; got != 2 {
			t.Errorf("LogRecords = %d, want 2: one record for each pass", got)
		}
	})
}

// TestLogFailedSyncWithAPassWaiting: while a record is being made
// durable, visits of the next pass gather; its fdatasync fails. The failed
// record's visits go to the bbolt file, the waiting ones to the log (none
// lost, none counted twice), the log is used again at once, and a crash
// then keeps every acknowledged visit.
func TestLogFailedSyncWithAPassWaiting(t *testing.T) {
	inBothModes(t, func(t *testing.T) {
		s := openSyncLogOnly(t, t.TempDir())
		began, release, stop := holdSyncs(s)
		defer stop()
		first := make(chan error, 1)
		go func() { _, err := s.Incr(ctx, []byte("a")); first <- err }()
		<-began
		var wg sync.WaitGroup
		errs := make(chan error, 4)
		for range 4 {
			wg.Go(func() {
				_, err := s.Incr(ctx, []byte("a"))
				errs <- err
			})
		}
		waitForWaiters(t, s, 5) // the four, and the first

		release(errors.New("planted: fdatasync failed"))
		done := make(chan struct{})
		defer close(done)
		go func() { // later records sync at once
			for {
				select {
				case <-began:
					release(nil)
				case <-done:
					return
				}
			}
		}()
		if err := <-first; err != nil {
			t.Errorf("Incr(a) = %v, want it answered from the bbolt file", err)
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			if err != nil {
				t.Errorf("a waiting Incr(a) = %v, want it answered from the bbolt file", err)
			}
		}
		if n := readTotal(t, fileCopy(t, s), "a"); n != 1 {
			t.Errorf("the file holds a = %d after the failed sync, want 1: the failed record's visit", n)
		}
		if n := readTotal(t, crashCopy(t, s), "a"); n != 5 {
			t.Errorf("a crash keeps a = %d, want 5: the waiting visits went to the log", n)
		}
		logUsedAgain(t, s, 7)
	})
}

// TestLogFailedSyncOnADeadDisk: a record's fdatasync fails and so does the
// bbolt file: its visits and the ones that gathered behind it are all
// refused, and none of them counts after the disk comes back.
func TestLogFailedSyncOnADeadDisk(t *testing.T) {
	inBothModes(t, func(t *testing.T) {
		s := openSyncLogOnly(t, t.TempDir())
		mustIncrN(t, s, "a", 1)
		began, release, stop := holdSyncs(s)
		defer stop()
		first := make(chan error, 1)
		go func() { _, err := s.Incr(ctx, []byte("a")); first <- err }()
		<-began
		second := make(chan error, 1)
		go func() { _, err := s.Incr(ctx, []byte("a")); second <- err }()
		waitForWaiters(t, s, 2)
		path := s.db.Path()
		s.db.Close() // the bbolt file's writes fail too
		release(errors.New("planted: the disk is gone"))
		if err := <-first; err == nil {
			t.Error("Incr(a) succeeded while its record and the file failed")
		}
		if err := <-second; err == nil {
			t.Error("the waiting Incr(a) succeeded while the log and the file failed")
		}
		diskBack(t, s, path)
		healLog(s)
		if c := mustIncr(t, s, []byte("a")); c.Total != 2 {
			t.Errorf("after the disk came back Incr(a) = %d, want 2: the refused visits do not count", c.Total)
		}
		mustClose(t, s)
	})
}

// waitForWaiters waits until n visits of s wait for a pass.
func waitForWaiters(t *testing.T, s *Store, n int) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(time.Millisecond) {
		_, _, w := s.Pending()
		if w == n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d visits wait for a pass, want %d", w, n)
		}
	}
}

// BenchmarkSyncVisitsWithWork models the sync server under a closed-loop
// load test: 64 goroutines, each doing some CPU work per request (the
// handler's: parse, rules, write the answer) and then one visit. With
// -cpu 1 it is the server pinned to one core: the ratio of sync to batch
// is what cmd/loadtest measures against memory, without the network.
// work is a count of CRC-32C blocks of 1 KiB; 250 took about 40 µs here
// (batch: 38-53 µs a visit with one P while other sessions loaded the
// machine).
func BenchmarkSyncVisitsWithWork(b *testing.B) {
	for _, work := range []int{0, 250} {
		for _, d := range []store.Durability{store.Batch, store.Sync} {
			b.Run(fmt.Sprintf("work=%d/durability=%s", work, d), func(b *testing.B) {
				s := openBench(b, Options{Durability: d})
				b.ReportAllocs()
				b.SetParallelism(64)
				var next sync.Mutex
				n := 0
				b.RunParallel(func(pb *testing.PB) {
					next.Lock()
					key := []byte("k" + strconv.Itoa(n%8))
					n++
					next.Unlock()
					block := make([]byte, 1024)
					var sum uint32
					for pb.Next() {
						for range work {
							sum = crc32.Update(sum, castagnoli, block)
						}
						if _, err := s.Incr(ctx, key); err != nil {
							b.Error(err)
							return
						}
					}
					block[0] = byte(sum) // keep the work
				})
				st := s.Stats()
				if st.Passes > 0 && d == store.Sync {
					b.ReportMetric(float64(st.SyncVisits)/float64(st.Passes), "visits/pass")
				}
			})
		}
	}
}
