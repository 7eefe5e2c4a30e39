package boltstore

import (
	"path/filepath"
	"testing"
	"time"

	"visitors/internal/store"
)

// TestOwnerOperationAtCloseWaitsForTheCheck: an owner operation still
// waiting for the check after Open when the store is closed is run by
// Close, which reaches runOps without the flusher's look at the check:
// runOps' own wait (awaitFile) keeps it from the file until the check
// ends, and then writes it on a sound file and refuses it on a damaged
// one, which stays as it was. Planted: runOps taking the damage found so
// far (damaged) instead of waiting: in Sync the lock was written before
// the check, into the damaged file too (in Batch the flusher's pass,
// with the /hi reservation to write, waits for the check before Close
// reaches runOps). TestNothingIsWrittenBeforeTheCheck's owner operation
// runs from the flusher, which looks at the check first.
func TestOwnerOperationAtCloseWaitsForTheCheck(t *testing.T) {
	for _, damaged := range []bool{false, true} {
		for _, d := range []store.Durability{store.Batch, store.Sync} {
			t.Run(map[bool]string{false: "sound", true: "damaged"}[damaged]+"/"+d.String(), func(t *testing.T) {
				dir := t.TempDir()
				mustFill(t, dir)
				path := filepath.Join(dir, FileName)
				if damaged {
					dk := dayKey([]byte("key-7"), store.DayOf(time.Now()))
					flip(t, path, record(tagDays, dk, 1), 7)
				}
				before := fileSum(t, path)
				hold := make(chan struct{})
				s := mustOpen(t, Options{Dir: dir, Durability: d, holdCheck: hold})
				locked := make(chan error, 1)
				go func() { _, err := s.Lock(ctx, []byte("key-2"), true); locked <- err }()
				within(t, waitLimit, "the Lock's queueing", func() {
					for !s.opsPending.Load() {
						time.Sleep(time.Millisecond)
					}
				})
				closed := make(chan error, 1)
				go func() { closed <- s.Close() }()
				time.Sleep(50 * time.Millisecond)
				if fileSum(t, path) != before {
					close(hold)
					t.Fatal("Close wrote an owner operation before the check ended")
				}
				select {
				case err := <-locked:
					t.Errorf("Lock returned %v before the check ended", err)
				default:
				}
				close(hold)
				var lockErr, closeErr error
				within(t, waitLimit, "Lock after the check", func() { lockErr = <-locked })
				within(t, waitLimit, "Close after the check", func() { closeErr = <-closed })
				if damaged {
					if lockErr == nil {
						t.Error("Lock on a damaged file returned no error")
					}
					if fileSum(t, path) != before {
						t.Error("the damaged file was written")
					}
					return
				}
				if lockErr != nil || closeErr != nil {
					t.Fatalf("Lock = %v, Close = %v after the check; want nil", lockErr, closeErr)
				}
				s = mustOpen(t, Options{Dir: dir})
				defer mustClose(t, s)
				if c := mustGet(t, s, []byte("key-2")); !c.Locked {
					t.Errorf("key-2 reopened = %+v, want locked", c)
				}
			})
		}
	}
}
