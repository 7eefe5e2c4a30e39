package boltstore

import (
	"errors"
	"testing"
	"time"
)

// TestHitInAFailedRecordIsRefused: a /hi number is acknowledged only once
// a record holding it is durable. A Hit whose number a record in flight
// already holds, but that joined the next pass (its increment came before
// the pass read the counter, its join after the pass was taken), waits in
// a pass with nothing to write; when that record's sync fails and the
// file cannot take its pass either, the Hit is refused, not answered.
// The race is made here by joining the pass by hand. (Mutation testing,
// issue 28: with the test of the broken log after settle negated,
// in logPass (flush.go), that Hit was answered, and every test still
// passed.)
func TestHitInAFailedRecordIsRefused(t *testing.T) {
	defer func(f func(bool) bool) { pipelineLog = f }(pipelineLog)
	pipelineLog = func(bool) bool { return true }
	s := openSyncLogOnly(t, t.TempDir())
	began, stop := holdEachSync(s)
	defer stop()
	first := make(chan error, 1)
	go func() { _, err := s.Hit(ctx); first <- err }()
	rel := nextSync(t, began, "the record of /hi number 1")
	// The racing Hit: number 1 is in the record in flight; it waits for
	// the pass after.
	p := s.join(nil)
	second := make(chan error, 1)
	go func() { second <- s.wait(ctx, p) }()
	for deadline := time.Now().Add(10 * time.Second); s.next.Load() == p; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the flusher did not take the pass within 10s")
		}
	}
	// The flusher now waits for the record in flight (settle).
	path := s.db.Path()
	s.db.Close() // the bbolt file's writes fail too
	rel(errors.New("planted: the disk is gone"))
	if err := <-first; err == nil {
		t.Error("Hit() succeeded while its record and the file failed")
	}
	if err := <-second; err == nil {
		t.Error("the Hit waiting in the pass after its record succeeded while the record and the file failed")
	}
	diskBack(t, s, path)
	stop()
	mustClose(t, s)
}
