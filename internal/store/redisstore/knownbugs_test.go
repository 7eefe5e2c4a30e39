//go:build knownbugs

// Tests of bugs a review found (2026-11-22) and that are not fixed yet.
// They fail today, so they are kept out of the test command; run them
// with: go test -tags knownbugs ./internal/store/redisstore
// docs/testing.md lists them. Move a test back into review_test.go with
// its fix.

package redisstore

import (
	"bytes"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"visitors/internal/store"
)

// TestReviewRedisDaysDuringUnansweredRoundCountsOnce: a Batch round was
// applied by Redis but its answer was lost, and the resend has not got
// through yet. Days reads Redis (which already holds the round) and adds
// e.flight on top (the same visits again): the page shows the round's
// visits twice until the resend is answered. Get guards against this
// (refresh only when flightN == 0); Days does not.
// Suggested fix: in Days, while an entry's flight is non-empty, either do
// not add flight, or use the entry's base (as Get does) for today and
// add flight only for days the base does not cover; or keep roundMu held
// across retries of an unanswered round.
func TestReviewRedisDaysDuringUnansweredRoundCountsOnce(t *testing.T) {
	p := startEvalBlockingProxy(t, standalone.Addr)
	st, err := Open(Options{URL: p.url(), Prefix: prefixOf(t.TempDir()), Durability: store.Batch,
		FlushInterval: time.Hour, Timeout: 500 * time.Millisecond, CloseTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	key := []byte("days-twice")
	// Load the apply script first, so the armed EVALSHA runs (not NOSCRIPT).
	if _, err := st.Incr(t.Context(), []byte("warm")); err != nil {
		t.Fatal(err)
	}
	if err := st.Flush(); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if _, err := st.Incr(t.Context(), key); err != nil {
			t.Fatal(err)
		}
	}
	p.blocking.Store(true)
	p.armed.Store(true)
	flushed := make(chan error, 1)
	go func() { flushed <- st.Flush() }()
	deadline := time.Now().Add(5 * time.Second)
	for (p.lost.Load() == 0 || st.Stats().RoundErrors == 0) && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	if p.lost.Load() == 0 {
		t.Fatal("the test did not lose the round's answer")
	}
	var d store.Daily
	for i := 0; ; i++ {
		d, err = st.Days(t.Context(), key, 1)
		if err == nil || i > 20 {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err != nil {
		t.Fatalf("Days: %v", err)
	}
	c, _ := st.Get(t.Context(), key)
	t.Logf("days=%v get=%+v errs=%d lost=%d flight=%d", d.Counts, c, st.Stats().RoundErrors, p.lost.Load(), st.load(key).flightN)
	p.blocking.Store(false)
	if err := <-flushed; err != nil {
		t.Fatal(err)
	}
	if d.Counts[0] != 3 {
		t.Errorf("Days while the applied round's answer is lost = %v, want [3] (Get says %+v): the round is counted twice on the page", d.Counts, c)
	}
	if got := redisTotal(t, st, "days-twice"); got != 3 {
		t.Errorf("Redis total = %d, want 3", got)
	}
}

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
	p := startEvalBlockingProxy(t, standalone.Addr)
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

// evalBlockingProxy forwards TCP to one Redis. Armed, it lets the next
// script reach Redis and swallows Redis's answer (the round was applied
// and the store never hears so); then, for as long as blocking is set,
// it cuts any connection that sends a script, while reads (MGET) pass.
// That holds the store in the window between a lost answer and a resend
// that gets through.
type evalBlockingProxy struct {
	l        net.Listener
	to       string
	armed    atomic.Bool
	blocking atomic.Bool
	lost     atomic.Int64
	wg       sync.WaitGroup
}

func startEvalBlockingProxy(t *testing.T, to string) *evalBlockingProxy {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &evalBlockingProxy{l: l, to: to}
	p.wg.Go(func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			p.wg.Go(func() { p.serve(c) })
		}
	})
	t.Cleanup(func() { l.Close(); p.wg.Wait() })
	return p
}

func (p *evalBlockingProxy) serve(c net.Conn) {
	defer c.Close()
	r, err := net.Dial("tcp", p.to)
	if err != nil {
		return
	}
	defer r.Close()
	var drop atomic.Bool
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer r.Close()
		buf := make([]byte, 64<<10)
		for {
			n, err := c.Read(buf)
			if n > 0 {
				isEval := bytes.Contains(bytes.ToUpper(buf[:n]), []byte("EVAL"))
				if isEval && p.blocking.Load() && !p.armed.Load() {
					c.Close()
					return
				}
				if isEval && p.armed.CompareAndSwap(true, false) {
					drop.Store(true)
				}
				if _, err := r.Write(buf[:n]); err != nil {
					return
				}
			}
			if err != nil {
				return
			}
		}
	}()
	buf := make([]byte, 64<<10)
	for {
		n, err := r.Read(buf)
		if n > 0 {
			if drop.Load() {
				p.lost.Add(1)
				c.Close()
				r.Close()
				<-done
				return
			}
			if _, err := c.Write(buf[:n]); err != nil {
				break
			}
		}
		if err != nil {
			break
		}
	}
	c.Close()
	<-done
}

func (p *evalBlockingProxy) url() string { return "redis://" + p.l.Addr().String() + "/0" }
