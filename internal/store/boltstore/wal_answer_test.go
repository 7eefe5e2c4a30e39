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
	"visitors/internal/store/storetest"
)

// holdSyncs makes every log fdatasync of s wait, after its record is
// written, until the test lets it go: it returns a channel that gets a
// value each time a sync is about to begin, a function that lets one sync
// go on (nil) or fail with err, and one that lets every sync through from
// then on (defer it, so that a failed test still closes the store).
func holdSyncs(s *Store) (began <-chan struct{}, release func(err error), stop func()) {
	b := make(chan struct{}, 16)
	r := make(chan error)
	stop = holdLogSyncs(s, b, func() (struct{}, <-chan error) { return struct{}{}, r })
	return b, func(err error) { r <- err }, stop
}

// holdEachSync makes every log sync of s wait, after its record is
// written, until the test lets that one go: each time a sync is about to
// begin, began gets a function that lets it go on (nil) or fail with err.
// Syncs begin in the order their records were written only when one is
// in flight at a time; a test that starts a visit and waits for began
// knows whose sync it holds. stop lets every sync through from then on
// (defer it, so that a failed test still closes the store).
func holdEachSync(s *Store) (began <-chan func(err error), stop func()) {
	b := make(chan func(error), 16)
	return b, holdLogSyncs(s, b, func() (func(error), <-chan error) {
		r := make(chan error, 1)
		return func(err error) { r <- err }, r
	})
}

// holdLogSyncs makes every log sync of s wait, after its record is
// written: it sends the value next makes on began and returns what then
// comes on next's channel (nil once stop is called). stop lets every sync
// through from then on.
func holdLogSyncs[T any](s *Store, began chan<- T, next func() (T, <-chan error)) (stop func()) {
	quit := make(chan struct{})
	fault := func() error {
		v, r := next()
		select {
		case began <- v:
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
	setHooks(s, func(h *hooks) { h.logFault = fault })
	return sync.OnceFunc(func() { close(quit); healLog(s) })
}

// fillFlights puts flights records in flight on s, one visit each with
// its sync held by holdEachSync's began, then three visits more, and waits
// until those three wait outside the log; it fails the test if a sync
// begins meanwhile. It returns the first visits' answers, their syncs'
// releases (oldest first) and the queued visits' answers.
func fillFlights(t *testing.T, s *Store, began <-chan func(error), flights int) (res []<-chan error, rel []func(error), queued []<-chan error) {
	t.Helper()
	for i := range flights {
		res = append(res, incrAsync(s, strconv.Itoa(i)))
		rel = append(rel, nextSync(t, began, "record "+strconv.Itoa(i)))
	}
	for i := range 3 {
		queued = append(queued, incrAsync(s, "q"+strconv.Itoa(i)))
	}
	waitForWaiters(t, s, flights+3)
	select {
	case <-began:
		t.Fatalf("a sync began with %d records in flight", flights)
	case <-time.After(100 * time.Millisecond):
	}
	return res, rel, queued
}

// nextSync returns the release of the next held sync of holdEachSync,
// failing the test if none begins within 10s.
func nextSync(t *testing.T, began <-chan func(error), what string) func(error) {
	t.Helper()
	select {
	case r := <-began:
		return r
	case <-time.After(10 * time.Second):
		t.Fatalf("no sync of %s began within 10s", what)
		return nil
	}
}

// notAnswered fails the test if a visit of res is answered within 100ms.
func notAnswered(t *testing.T, what string, res ...<-chan error) {
	t.Helper()
	time.Sleep(100 * time.Millisecond)
	for i, r := range res {
		select {
		case err := <-r:
			t.Fatalf("%s: visit %d of %d was answered (%v)", what, i, len(res), err)
		default:
		}
	}
}

// incrAsync starts Incr(key) and returns where its error goes.
func incrAsync(s *Store, key string) <-chan error {
	res := make(chan error, 1)
	go func() { _, err := storetest.Incr(ctx, s, []byte(key)); res <- err }()
	return res
}

// inBothModes runs test with the log's passes pipelined, then with one
// goroutine doing each pass whole (see pipelineLog).
func inBothModes(t *testing.T, test func(t *testing.T)) {
	defer func(f func(bool) bool) { pipelineLog = f }(pipelineLog)
	for _, on := range []bool{true, false} {
		pipelineLog = func(bool) bool { return on }
		name := "pipelined"
		if !on {
			name = "one-goroutine"
		}
		t.Run(name, test)
	}
}

// TestLogAnswersOnlyAfterItsSync: a sync visit is answered only once the
// record holding it is written and its fdatasync has returned, and the
// syncs of every record before it too: a record is never answered before
// the records ahead of it are durable (replay stops at the first record
// missing). The visits that arrive meanwhile wait for a record of their
// own. Pipelined, that record is written and synced beside the first; its
// sync returning first answers nothing. One goroutine: it is written only
// once the first is durable.
func TestLogAnswersOnlyAfterItsSync(t *testing.T) {
	inBothModes(t, func(t *testing.T) {
		pipelined := pipelineLog(false)
		s := openSyncLogOnly(t, t.TempDir())
		defer mustClose(t, s)
		began, stop := holdEachSync(s)
		defer stop()

		first := incrAsync(s, "a")
		relA := nextSync(t, began, "a's record") // written, its sync held
		second := incrAsync(s, "b")
		waitForWaiters(t, s, 2)
		var relB func(error)
		if pipelined {
			relB = nextSync(t, began, "b's record, beside a's")
			relB(nil)
			notAnswered(t, "b's record durable, a's sync held", first, second)
		} else {
			select {
			case <-began:
				t.Fatal("a second sync began while the first was held: one goroutine syncs one record at a time")
			case <-time.After(100 * time.Millisecond):
			}
			notAnswered(t, "a's sync held", first, second)
		}
		relA(nil)
		if err := <-first; err != nil {
			t.Fatalf("Incr(a) = %v once its record was durable", err)
		}
		if !pipelined {
			relB = nextSync(t, began, "b's record")
			notAnswered(t, "b's sync held", second)
			relB(nil)
		}
		if err := <-second; err != nil {
			t.Fatalf("Incr(b) = %v once its record was durable", err)
		}
		if got := s.Stats().LogRecords; got != 2 {
			t.Errorf("LogRecords = %d, want 2: one record for each pass", got)
		}
	})
}

// TestLogFlightsAreBounded: pipelined, at most maxFlying records are in
// flight; the next pass is taken only once the oldest is durable, and
// takes every visit that queued meanwhile: one record.
func TestLogFlightsAreBounded(t *testing.T) {
	defer func(f func(bool) bool) { pipelineLog = f }(pipelineLog)
	pipelineLog = func(bool) bool { return true }
	s := openSyncLogOnly(t, t.TempDir())
	defer mustClose(t, s)
	began, stop := holdEachSync(s)
	defer stop()
	res, rel, queued := fillFlights(t, s, began, maxFlying)
	for i := len(rel) - 1; i > 0; i-- { // the later ones first: none is answered
		rel[i](nil)
	}
	notAnswered(t, "the oldest record's sync held", append(res, queued...)...)
	rel[0](nil)
	for i, r := range res {
		if err := <-r; err != nil {
			t.Fatalf("visit %d = %v", i, err)
		}
	}
	relQ := nextSync(t, began, "the queued visits' record")
	notAnswered(t, "the queued visits' sync held", queued...)
	relQ(nil)
	for i, r := range queued {
		if err := <-r; err != nil {
			t.Fatalf("queued visit %d = %v", i, err)
		}
	}
	if got := s.Stats().LogRecords; got != maxFlying+1 {
		t.Errorf("LogRecords = %d, want %d: the queued visits in one record", got, maxFlying+1)
	}
}

// TestLogFailedSyncWithAPassWaiting: while a record is being made
// durable, visits of the next pass gather; its fdatasync fails. The failed
// record's visits go to the bbolt file; the waiting ones, one goroutine,
// to the log, or, pipelined, those whose record was already in flight
// (and its sync returned first, answering nothing) to the file with the
// failed one;
// none lost, none counted twice. The log is used again at once, and a
// crash then keeps every acknowledged visit.
func TestLogFailedSyncWithAPassWaiting(t *testing.T) {
	inBothModes(t, func(t *testing.T) {
		pipelined := pipelineLog(false)
		s := openSyncLogOnly(t, t.TempDir())
		began, stop := holdEachSync(s)
		defer stop()
		first := incrAsync(s, "a")
		relA := nextSync(t, began, "the first record")
		var waiting []<-chan error
		for range 4 {
			waiting = append(waiting, incrAsync(s, "a"))
		}
		waitForWaiters(t, s, 5) // the four, and the first
		if pipelined {
			nextSync(t, began, "the waiting visits' record")(nil)
			notAnswered(t, "the first record's sync held", append(waiting, first)...)
		}

		relA(errors.New("planted: fdatasync failed"))
		done := make(chan struct{})
		defer close(done)
		go func() { // later records sync at once
			for {
				select {
				case r := <-began:
					r(nil)
				case <-done:
					return
				}
			}
		}()
		if err := <-first; err != nil {
			t.Errorf("Incr(a) = %v, want it answered from the bbolt file", err)
		}
		for _, r := range waiting {
			if err := <-r; err != nil {
				t.Errorf("a waiting Incr(a) = %v, want it answered from the bbolt file or the log", err)
			}
		}
		// The failed record's visit; pipelined, and the record after it,
		// in flight (the four may have joined more than one record: the
		// later ones go to the log).
		lo, hi := uint64(1), uint64(1)
		if pipelined {
			lo, hi = 2, 5
		}
		if n := readTotal(t, fileCopy(t, s), "a"); n < lo || n > hi {
			t.Errorf("the file holds a = %d after the failed sync, want %d to %d", n, lo, hi)
		}
		if n := readTotal(t, crashCopy(t, s), "a"); n != 5 {
			t.Errorf("a crash keeps a = %d, want 5", n)
		}
		logUsedAgain(t, s, 7)
	})
}

// TestLogFailedSyncOnADeadDisk: a record's fdatasync fails and so does the
// bbolt file: its visits and the ones that gathered behind it (pipelined:
// in a record whose sync returned) are all refused, and none of them
// counts after the disk comes back.
func TestLogFailedSyncOnADeadDisk(t *testing.T) {
	inBothModes(t, func(t *testing.T) {
		pipelined := pipelineLog(false)
		s := openSyncLogOnly(t, t.TempDir())
		mustIncrN(t, s, "a", 1)
		began, stop := holdEachSync(s)
		defer stop()
		first := incrAsync(s, "a")
		relA := nextSync(t, began, "the first record")
		second := incrAsync(s, "a")
		waitForWaiters(t, s, 2)
		if pipelined {
			nextSync(t, began, "the second record")(nil)
		}
		path := s.db.Path()
		s.db.Close() // the bbolt file's writes fail too
		relA(errors.New("planted: the disk is gone"))
		if err := <-first; err == nil {
			t.Error("Incr(a) succeeded while its record and the file failed")
		}
		if err := <-second; err == nil {
			t.Error("the waiting Incr(a) succeeded while the log and the file failed")
		}
		diskBack(t, s, path)
		stop()
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
						if _, err := storetest.Incr(ctx, s, key); err != nil {
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
