package boltstore

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"visitors/internal/store"
	"visitors/internal/store/storetest"
)

// TestReviewWALFlushWritesTheFile: Flush promises a pass that begins after
// the call and writes everything counted before it to the bbolt file. In
// sync mode logPass reads the "full" flag before it takes the pass: a
// Flush that sets the flag between the two joins a pass that then goes
// to the log only, and Flush returns with the file behind (the storetest
// suite relies on Flush to empty memory of earlier days). Flushes at
// every point of a pass under constant sync load find it within about a
// thousand tries. Fix: take the pass first, then read the flag.
func TestReviewWALFlushWritesTheFile(t *testing.T) {
	s := mustOpen(t, Options{Dir: t.TempDir(), Durability: store.Sync, FlushInterval: time.Hour})
	defer mustClose(t, s)
	var acked atomic.Uint64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	storetest.VisitUntil(t, s, []byte("a"), stop, &wg, func(c store.Counts) {
		for {
			old := acked.Load()
			if c.Total <= old || acked.CompareAndSwap(old, c.Total) {
				break
			}
		}
	})
	defer func() { close(stop); wg.Wait() }()
	tk := keyPrefix([]byte("a"))
	for i := range 1500 {
		time.Sleep(time.Duration(i%20) * 50 * time.Microsecond) // Flush at every point of a pass
		before := acked.Load()
		if err := s.Flush(); err != nil {
			t.Fatal(err)
		}
		var n uint64
		s.db.View(func(tx *bolt.Tx) error {
			n, _ = readRecord(tagTotals, tk, tx.Bucket(bucketTotals).Get(tk))
			return nil
		})
		if n < before {
			t.Fatalf("flush %d: Flush returned with the file at %d, below the %d answered before it", i, n, before)
		}
	}
}
