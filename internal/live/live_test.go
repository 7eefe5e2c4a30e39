package live

import (
	"context"
	"sync"
	"testing"
	"time"

	"visitors/internal/store"
)

// counts is a key's counts that a test moves, read by the hub.
type counts struct {
	mu    sync.Mutex
	m     map[string]store.Counts
	reads int
}

func (c *counts) get(_ context.Context, key []byte) (store.Counts, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.reads++
	return c.m[string(key)], nil
}

func (c *counts) set(key string, total uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.m[key] = store.Counts{Total: total, Today: total}
}

func mustHub(t *testing.T, o Options) (*Hub, *counts) {
	t.Helper()
	c := &counts{m: map[string]store.Counts{}}
	o.Get = c.get
	h := New(o)
	t.Cleanup(h.Close)
	return h, c
}

// recv waits for a value on w, failing after a generous deadline.
func recv(t *testing.T, w *Watch) store.Counts {
	t.Helper()
	select {
	case c := <-w.C:
		return c
	case <-time.After(10 * time.Second):
		t.Fatal("no counts within 10s")
	}
	return store.Counts{}
}

func TestWatchLimits(t *testing.T) {
	h, _ := mustHub(t, Options{Max: 3, PerClient: 2, Interval: time.Hour})
	a1, err1 := h.Watch("k", "a")
	_, err2 := h.Watch("j", "a")
	if err1 != nil || err2 != nil {
		t.Fatalf("two watches of one client: %v, %v", err1, err2)
	}
	if _, err := h.Watch("k", "a"); err != ErrClientFull {
		t.Errorf("third watch of client a = %v, want ErrClientFull", err)
	}
	if _, err := h.Watch("k", "b"); err != nil {
		t.Errorf("watch of client b = %v", err)
	}
	if _, err := h.Watch("k", "c"); err != ErrFull {
		t.Errorf("fourth watch in all = %v, want ErrFull", err)
	}
	a1.Close()
	a1.Close() // twice is harmless
	if got := h.Streams(); got != 2 {
		t.Errorf("Streams() = %d after a close, want 2", got)
	}
	if _, err := h.Watch("k", "c"); err != nil {
		t.Errorf("a watch after one closed = %v", err)
	}
	h.Close()
	if _, err := h.Watch("k", "d"); err != ErrClosed {
		t.Errorf("Watch after Close = %v, want ErrClosed", err)
	}
	select {
	case <-h.Done():
	default:
		t.Error("Done is not closed after Close")
	}
}

// TestChangesReachEveryWatcher: a change reaches each watcher of the key
// once, watchers of another key not at all, and an unchanged key sends
// nothing more.
func TestChangesReachEveryWatcher(t *testing.T) {
	h, c := mustHub(t, Options{Max: 10, PerClient: 10, Interval: 5 * time.Millisecond})
	w1, _ := h.Watch("k", "a")
	w2, _ := h.Watch("k", "b")
	other, _ := h.Watch("j", "a")
	defer w1.Close()
	defer w2.Close()
	defer other.Close()
	recv(t, w1) // the first read is a change from nothing
	recv(t, w2)
	recv(t, other)
	c.set("k", 7)
	for _, w := range []*Watch{w1, w2} {
		if got := recv(t, w); got.Total != 7 {
			t.Errorf("watcher got %+v, want total 7", got)
		}
	}
	// Many more reads of an unchanged key send nothing.
	c.mu.Lock()
	start := c.reads
	c.mu.Unlock()
	for {
		c.mu.Lock()
		n := c.reads
		c.mu.Unlock()
		if n >= start+20 {
			break
		}
		time.Sleep(time.Millisecond)
	}
	for _, w := range []*Watch{w1, w2, other} {
		select {
		case got := <-w.C:
			t.Errorf("an unchanged key sent %+v", got)
		default:
		}
	}
}

// TestCoalesce: a watcher that does not take changes holds only the
// newest, and never blocks the poller.
func TestCoalesce(t *testing.T) {
	h, c := mustHub(t, Options{Max: 10, PerClient: 10, Interval: time.Millisecond})
	slow, _ := h.Watch("k", "a")
	fast, _ := h.Watch("k", "b")
	defer slow.Close()
	defer fast.Close()
	for i := uint64(1); i <= 50; i++ {
		c.set("k", i)
		for recv(t, fast).Total != i {
		}
	}
	if got := recv(t, slow); got.Total != 50 {
		t.Errorf("the slow watcher got %+v, want only the newest, total 50", got)
	}
}

// TestPollerStops: the key's poller stops when its last watcher leaves,
// and Close waits for every poller.
func TestPollerStops(t *testing.T) {
	h, c := mustHub(t, Options{Max: 10, PerClient: 10, Interval: time.Millisecond})
	w, _ := h.Watch("k", "a")
	recv(t, w)
	w.Close()
	h.mu.Lock()
	n := len(h.topics)
	h.mu.Unlock()
	if n != 0 {
		t.Fatalf("%d topics after the last watcher left, want 0", n)
	}
	h.Close() // returns only once the poller has stopped
	c.mu.Lock()
	reads := c.reads
	c.mu.Unlock()
	time.Sleep(20 * time.Millisecond)
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.reads != reads {
		t.Errorf("the store was read %d more times after Close", c.reads-reads)
	}
}

// TestClientLimitAfterClose: a client's closed watches give its slots
// back, one each, and no more: it holds PerClient at once, however many
// it opened and closed before, and a client with none left is
// forgotten.
func TestClientLimitAfterClose(t *testing.T) {
	h, _ := mustHub(t, Options{Max: 100, PerClient: 2, Interval: time.Hour})
	for round := range 3 {
		w1, err1 := h.Watch("k", "a")
		w2, err2 := h.Watch("j", "a")
		if err1 != nil || err2 != nil {
			t.Fatalf("round %d: two watches of one client: %v, %v", round, err1, err2)
		}
		w1.Close()
		w3, err := h.Watch("k", "a")
		if err != nil {
			t.Fatalf("round %d: a watch after one of two closed = %v", round, err)
		}
		if _, err := h.Watch("i", "a"); err != ErrClientFull {
			t.Errorf("round %d: a third watch at once = %v, want ErrClientFull", round, err)
		}
		w2.Close()
		w3.Close()
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.clients) != 0 || h.total != 0 {
		t.Errorf("after every watch closed: %d clients, %d watches held, want none", len(h.clients), h.total)
	}
}

// TestDefaultInterval: an Interval of 0 polls once a second.
func TestDefaultInterval(t *testing.T) {
	h, _ := mustHub(t, Options{Max: 1, PerClient: 1})
	if h.o.Interval != time.Second {
		t.Errorf("Interval = %v, want 1s", h.o.Interval)
	}
	w, err := h.Watch("k", "a")
	if err != nil {
		t.Fatal(err)
	}
	w.Close()
}
