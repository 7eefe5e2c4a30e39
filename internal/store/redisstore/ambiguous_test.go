package redisstore

import (
	"bytes"
	"context"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"visitors/internal/store"
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
	if _, err := st.Incr(t.Context(), key); err != nil { // loads the script
		t.Fatal(err)
	}
	p.blocking.Store(true)
	p.armed.Store(true)
	errc := make(chan error, 1)
	var got store.Counts
	go func() {
		var err error
		got, err = st.Incr(t.Context(), key)
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
			if _, err := st.Incr(t.Context(), key); err != nil { // admitted, and (sync) counted
				t.Fatal(err)
			}
			if d == store.Batch {
				if err := st.Flush(); err != nil {
					t.Fatal(err)
				}
			}
			p.armed.Store(true)
			c, err := st.Incr(t.Context(), key)
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
			if _, err := st.Incr(t.Context(), key); err != nil {
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
