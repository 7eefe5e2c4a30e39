package redisstore

import (
	"bytes"
	"context"
	"errors"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"visitors/internal/store"
	"visitors/internal/store/redisstore/redistest"
	"visitors/internal/store/storetest"
)

// lossyProxy forwards TCP between clients and one Redis. Armed, it lets
// the next request that runs a script reach Redis, and then, instead of
// forwarding Redis's answer, closes the connection: the store sent a
// round that Redis applied, and never hears so. While blocking (and not
// armed) it also cuts any connection that sends a script, while reads
// pass: that holds the store between a lost answer and a resend that
// gets through.
type lossyProxy struct {
	l        net.Listener
	to       string
	armed    atomic.Bool
	blocking atomic.Bool
	lost     atomic.Int64  // answers swallowed
	lostc    chan struct{} // closed at the first answer swallowed
	cut      atomic.Value  // a string: a request holding it is cut before Redis sees it
	lostOnce sync.Once
	wg       sync.WaitGroup
}

// closeWithAnAnswerLost opens a sync store through p with timeout as
// its Options.Timeout, counts key once (which loads the script), then
// visits key again with p losing the answer, and closes the store while
// the visit waits. It returns the store and what the visit was
// answered.
func closeWithAnAnswerLost(t *testing.T, p *lossyProxy, key []byte, timeout time.Duration) (*Store, store.Counts, error) {
	t.Helper()
	st, err := Open(Options{URL: p.url(), Prefix: prefixOf(t.TempDir()), Durability: store.Sync,
		Timeout: timeout, CloseTimeout: 500 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := storetest.Incr(t.Context(), st, key); err != nil { // loads the script
		t.Fatal(err)
	}
	p.blocking.Store(true)
	p.armed.Store(true)
	errc := make(chan error, 1)
	var got store.Counts
	go func() {
		var err error
		got, err = storetest.Incr(t.Context(), st, key)
		errc <- err
	}()
	p.waitLost(t, time.Minute)
	st.Close()
	err = <-errc
	return st, got, err
}

// waitLost waits until the proxy has swallowed an answer, or fails the
// test at timeout: an event, not a poll, so a busy machine only makes it
// later.
func (p *lossyProxy) waitLost(t *testing.T, timeout time.Duration) {
	t.Helper()
	select {
	case <-p.lostc:
	case <-time.After(timeout):
		t.Fatalf("no answer was lost within %v: the test did not lose the round's answer", timeout)
	}
}

func startLossyProxy(t *testing.T, to string) *lossyProxy {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &lossyProxy{l: l, to: to, lostc: make(chan struct{})}
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

func (p *lossyProxy) serve(c net.Conn) {
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
		defer r.Close() // the client left: so does Redis's side
		buf := make([]byte, 64<<10)
		for {
			n, err := c.Read(buf)
			if n > 0 {
				if cut, _ := p.cut.Load().(string); cut != "" && bytes.Contains(buf[:n], []byte(cut)) {
					c.Close()
					return
				}
				script := bytes.Contains(bytes.ToUpper(buf[:n]), []byte("EVAL")) // EVAL and EVALSHA
				if script && p.blocking.Load() && !p.armed.Load() {
					c.Close()
					return
				}
				if script && p.armed.CompareAndSwap(true, false) {
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
				p.lostOnce.Do(func() { close(p.lostc) })
				c.Close() // the answer is lost with the connection
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

func (p *lossyProxy) url() string { return "redis://" + p.l.Addr().String() + "/0" }

func redisTotal(t *testing.T, st *Store, key string) uint64 {
	t.Helper()
	v, err := st.c.Do(context.Background(), st.c.B().Get().Key(total(st.n.tag([]byte(key)))).Build()).ToString()
	if err != nil {
		t.Fatal(err)
	}
	n, err := strconv.ParseUint(v, 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// TestLostAnswerCountsOnce loses Redis's answer to a round it applied.
// Sync: the visit is not refused (it counted); it waits for the resend,
// which Redis recognises, and gets its count; Redis holds it once.
// Batch: the resent round adds nothing more.
func TestLostAnswerCountsOnce(t *testing.T) {
	for _, d := range []store.Durability{store.Sync, store.Batch} {
		t.Run(d.String(), func(t *testing.T) {
			p := startLossyProxy(t, standalone.Addr)
			st, err := Open(Options{URL: p.url(), Prefix: prefixOf(t.TempDir()), Durability: d, FlushInterval: time.Hour, Timeout: 2 * time.Second})
			if err != nil {
				t.Fatal(err)
			}
			defer st.Close()
			key := []byte("lost")
			if _, err := storetest.Incr(t.Context(), st, key); err != nil { // admitted, and (sync) counted
				t.Fatal(err)
			}
			if d == store.Batch {
				if err := st.Flush(); err != nil {
					t.Fatal(err)
				}
			}
			p.armed.Store(true)
			c, err := storetest.Incr(t.Context(), st, key)
			if err != nil {
				t.Fatalf("Incr whose round's answer was lost = %v; it counted, so it must not be refused", err)
			}
			if c.Total != 2 {
				t.Errorf("Incr = %+v, want total 2", c)
			}
			if d == store.Batch {
				if err := st.Flush(); err != nil {
					t.Fatal(err)
				}
			}
			if p.lost.Load() != 1 || st.Stats().RoundErrors == 0 {
				t.Fatalf("answers lost = %d, round errors = %d: the test did not lose the round's answer", p.lost.Load(), st.Stats().RoundErrors)
			}
			if got := redisTotal(t, st, "lost"); got != 2 {
				t.Errorf("Redis holds total %d after a resent round, want 2", got)
			}
			if _, err := storetest.Incr(t.Context(), st, key); err != nil {
				t.Fatal(err)
			}
			if d == store.Batch {
				st.Flush()
			}
			if got := redisTotal(t, st, "lost"); got != 3 {
				t.Errorf("Redis holds total %d after one more visit, want 3", got)
			}
		})
	}
}

// TestDaysDuringUnansweredRoundCountsOnce: a Batch round was
// applied by Redis but its answer was lost, and the resend has not got
// through yet. Days reads Redis (which already holds the round) and adds
// e.flight on top (the same visits again): the page shows the round's
// visits twice until the resend is answered. Get guards against this
// (refresh only when flightN == 0); Days does not.
// Suggested fix: in Days, while an entry's flight is non-empty, either do
// not add flight, or use the entry's base (as Get does) for today and
// add flight only for days the base does not cover; or keep roundMu held
// across retries of an unanswered round.
// Found by review (was TestReviewRedisDaysDuringUnansweredRoundCountsOnce).
func TestDaysDuringUnansweredRoundCountsOnce(t *testing.T) {
	p := startLossyProxy(t, standalone.Addr)
	st, err := Open(Options{URL: p.url(), Prefix: prefixOf(t.TempDir()), Durability: store.Batch,
		FlushInterval: time.Hour, Timeout: 500 * time.Millisecond, CloseTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	key := []byte("days-twice")
	// Load the apply script first, so the armed EVALSHA runs (not NOSCRIPT).
	if _, err := storetest.Incr(t.Context(), st, []byte("warm")); err != nil {
		t.Fatal(err)
	}
	if err := st.Flush(); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if _, err := storetest.Incr(t.Context(), st, key); err != nil {
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

// TestSyncCloseDoesNotRefuseACountedVisit: the package
// promises that in Sync "an error means the visit did not count", and a
// visit whose round got no answer waits for the resend. When Close gave
// up on an unanswered round after CloseTimeout, round() handed the
// waiting visits an error although Redis may have applied the round:
// here it did (the answer was lost), so the client was told 503 for a
// visit Redis holds, and a retry counted it twice. Fixed: Close asks
// Redis, with a plain command, whether the round landed (settle).
// Found by review (was TestReviewRedisSyncCloseDoesNotRefuseACountedVisit).
func TestSyncCloseDoesNotRefuseACountedVisit(t *testing.T) {
	storetest.NoDate(t)
	p := startLossyProxy(t, standalone.Addr)
	// Nothing here waits for Timeout to pass: the answer is lost and
	// the resends are cut by closed connections, at once. A Timeout
	// short enough to pass under load only failed Close's question to
	// Redis (settle) on a busy machine, and the visit was answered with
	// an error: a flake. CloseTimeout is what Close waits for before it
	// settles.
	key := []byte("close-ambiguous")
	st, got, err := closeWithAnAnswerLost(t, p, key, 30*time.Second)
	st2, oerr := Open(Options{URL: standalone.URL(), Prefix: st.o.Prefix, Durability: store.Sync})
	if oerr != nil {
		t.Fatal(oerr)
	}
	defer st2.Close()
	c, _ := st2.Get(t.Context(), key)
	if err != nil && c.Total == 2 {
		t.Errorf("the visit was answered %v, yet Redis holds it (total %d): a refused visit counted", err, c.Total)
	}
	if err != nil || got.Total != 2 || c.Total != 2 {
		t.Errorf("the visit was answered %+v, %v; Redis holds total %d; want total 2, no error", got, err, c.Total)
	}
}

// TestSyncCloseFencesARoundThatDidNotLand: a round that never reached
// Redis when Close gives up on it is answered with an error that is not
// ErrOutcomeUnknown (the visit did not count), and it is fenced: sent
// after that, it adds nothing.
func TestSyncCloseFencesARoundThatDidNotLand(t *testing.T) {
	storetest.NoDate(t)
	p := startLossyProxy(t, standalone.Addr)
	// As in TestSyncCloseDoesNotRefuseACountedVisit, nothing
	// waits for Timeout: the proxy cuts every script at once. A short one
	// only let Close's question to Redis (settle) time out under load.
	st, err := Open(Options{URL: p.url(), Prefix: prefixOf(t.TempDir()), Durability: store.Sync,
		Timeout: 30 * time.Second, CloseTimeout: 500 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	key := []byte("close-not-landed")
	if _, err := storetest.Incr(t.Context(), st, key); err != nil {
		t.Fatal(err)
	}
	p.blocking.Store(true) // every script is cut before it reaches Redis
	errc := make(chan error, 1)
	go func() {
		_, err := storetest.Incr(t.Context(), st, key)
		errc <- err
	}()
	waitRoundRefused(t, st, time.Minute)
	if cerr := st.Close(); cerr == nil {
		t.Error("Close = nil with a visit that could not be sent")
	}
	err = <-errc
	if err == nil || errors.Is(err, ErrOutcomeUnknown) {
		t.Errorf("a visit whose round never reached Redis was answered %v, want an error that says it did not count", err)
	}
	st2 := instance(t, "standalone", st.o.Prefix, store.Sync)
	if c, _ := st2.Get(t.Context(), key); c.Total != 1 {
		t.Errorf("Redis holds total %d, want 1", c.Total)
	}
	// The same round, arriving now, adds nothing.
	tag := st.n.tag(key)
	sc := script{src: applySrc, sha: applySHA,
		keys: []string{st.n.seq(st.groupOf(tag), st.id), total(tag), dayKey(tag, st.cal.Today()), genKey(tag), lockKey(tag)},
		args: []string{strconv.FormatUint(st.seq, 10), "60", strconv.Itoa(DayTTL), "*", "1", "0"}}
	if err := st2.doScripts(t.Context(), []script{sc})[0].Error(); err != nil {
		t.Fatal(err)
	}
	if c, _ := st2.Get(t.Context(), key); c.Total != 1 {
		t.Errorf("the fenced round, sent late, made the total %d, want 1", c.Total)
	}
}

// TestSyncCloseOutcomeUnknownWhileRedisIsDown: Redis gone, Close cannot
// learn whether the round landed, and says so: ErrOutcomeUnknown.
func TestSyncCloseOutcomeUnknownWhileRedisIsDown(t *testing.T) {
	rs := redistest.StartTest(t)
	st, err := Open(Options{URL: rs.URL(), Durability: store.Sync, Timeout: 300 * time.Millisecond, CloseTimeout: 500 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	key := []byte("close-unknown")
	if _, err := storetest.Incr(t.Context(), st, key); err != nil {
		t.Fatal(err)
	}
	rs.Kill()
	errc := make(chan error, 1)
	go func() {
		_, err := storetest.Incr(t.Context(), st, key)
		errc <- err
	}()
	waitRoundRefused(t, st, 10*time.Second)
	st.Close()
	if err := <-errc; !errors.Is(err, ErrOutcomeUnknown) {
		t.Errorf("a visit whose round Close gave up on with Redis down = %v, want ErrOutcomeUnknown", err)
	}
}

// TestSyncCloseAnswersALandedRoundExactly: when Close gives up on a Sync
// round that Redis applied (its answer was lost), the visit is answered
// with the counts Redis holds: total, today's count, and unlocked.
func TestSyncCloseAnswersALandedRoundExactly(t *testing.T) {
	p := startLossyProxy(t, standalone.Addr)
	key := []byte("close-landed")
	_, got, err := closeWithAnAnswerLost(t, p, key, 2*time.Second) // a round trip may be slow on a busy machine
	if err != nil || got != (store.Counts{Total: 2, Today: 2}) {
		t.Errorf("a visit whose round landed and whose answer was lost was answered %+v, %v at Close; want total 2, today 2, unlocked", got, err)
	}
}
