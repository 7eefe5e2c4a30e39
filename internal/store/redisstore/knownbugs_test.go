//go:build knownbugs

// Tests of bugs a review found (2026-11-22) and that are not fixed yet.
// They fail today, so they are kept out of the test command; run them
// with: go test -tags knownbugs ./internal/store/redisstore
// docs/testing.md lists them. Move a test back into review_test.go with
// its fix.

package redisstore

import (
	"testing"
	"time"

	"visitors/internal/store"
)

// TestReviewRedisSyncCloseDoesNotRefuseACountedVisit: the package
// promises that in Sync "an error means the visit did not count", and a
// visit whose round got no answer waits for the resend. But when Close
// gives up on an unanswered round after CloseTimeout, round() hands the
// waiting visits an error although Redis may have applied the round:
// here it did (the answer was lost), so the client is told 503 for a
// visit Redis holds, and a retry counts it twice.
// Suggested fix: at close, answer an ambiguous round's visits with an
// error that is not "did not count" (e.g. leave them to their context,
// or a distinct ErrUnknownOutcome the web layer maps to a non-retry
// answer), and say so in the package doc.
func TestReviewRedisSyncCloseDoesNotRefuseACountedVisit(t *testing.T) {
	p := startLossyProxy(t, standalone.Addr)
	st, err := Open(Options{URL: p.url(), Prefix: prefixOf(t.TempDir()), Durability: store.Sync,
		Timeout: 300 * time.Millisecond, CloseTimeout: 500 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	key := []byte("close-ambiguous")
	if _, err := st.Incr(t.Context(), key); err != nil { // loads the script
		t.Fatal(err)
	}
	p.blocking.Store(true)
	p.armed.Store(true)
	errc := make(chan error, 1)
	go func() {
		_, err := st.Incr(t.Context(), key)
		errc <- err
	}()
	deadline := time.Now().Add(5 * time.Second)
	for p.lost.Load() == 0 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	if p.lost.Load() == 0 {
		t.Fatal("the test did not lose the round's answer")
	}
	st.Close()
	err = <-errc
	st2, oerr := Open(Options{URL: standalone.URL(), Prefix: st.o.Prefix, Durability: store.Sync})
	if oerr != nil {
		t.Fatal(oerr)
	}
	defer st2.Close()
	c, _ := st2.Get(t.Context(), key)
	if err != nil && c.Total == 2 {
		t.Errorf("the visit was answered %v, yet Redis holds it (total %d): a refused visit counted", err, c.Total)
	}
}
