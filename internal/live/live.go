// Package live fans a counter's counts out to the clients watching it,
// for the Server-Sent Events streams of internal/web.
//
// A [Hub] reads each watched key from the store once per interval, with
// one goroutine per key however many watch it, and hands a change to
// every [Watch] of that key. A Watch holds at most one pending value: a
// watcher that has not taken the last change gets only the newest one
// (changes coalesce), so a slow client never holds memory or the poller
// back. Polling costs the counting path nothing, and it sees visits
// counted by other processes sharing the store too.
//
// The hub bounds how many watches it holds, in total and per client,
// and [Hub.Close] ends them all, for a clean shutdown.
package live

import (
	"context"
	"errors"
	"sync"
	"time"

	"visitors/internal/store"
)

// Errors of [Hub.Watch].
var (
	ErrFull       = errors.New("too many live streams")
	ErrClientFull = errors.New("too many live streams from one client")
	ErrClosed     = errors.New("shutting down")
)

// Options configure a [Hub].
type Options struct {
	// Get reads a key's counts without counting a visit. Required.
	Get func(ctx context.Context, key []byte) (store.Counts, error)
	// Max is the most watches held at once; past it Watch fails.
	Max int
	// PerClient is the most watches one client holds at once.
	PerClient int
	// Interval is how often a watched key is read: at most one change a
	// key per interval reaches a watcher.
	Interval time.Duration
}

// Hub fans counts out to watchers. It is safe for concurrent use.
type Hub struct {
	o    Options
	done chan struct{} // closed by Close

	mu      sync.Mutex        // guards the fields below
	topics  map[string]*topic // by key
	clients map[string]int    // watches per client
	total   int
	closed  bool
	polls   sync.WaitGroup // one per topic's poller
}

// topic is one watched key and its watchers.
type topic struct {
	key     string
	watches map[*Watch]struct{} // guarded by Hub.mu
	stop    chan struct{}       // closed when the last watcher leaves
}

// Watch is one watcher's subscription to a key. C receives the key's
// counts each time the hub sees them change; only the newest is kept.
type Watch struct {
	C      <-chan store.Counts
	c      chan store.Counts
	hub    *Hub
	t      *topic
	client string
	once   sync.Once
}

// New returns a Hub with options o. The caller must call Close.
func New(o Options) *Hub {
	if o.Interval <= 0 {
		o.Interval = time.Second
	}
	return &Hub{o: o, done: make(chan struct{}), topics: map[string]*topic{}, clients: map[string]int{}}
}

// Watch subscribes client to key. It fails with ErrFull, ErrClientFull
// or, once the hub is closed, ErrClosed. The caller must Close the
// Watch.
func (h *Hub) Watch(key, client string) (*Watch, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	switch {
	case h.closed:
		return nil, ErrClosed
	case h.total >= h.o.Max:
		return nil, ErrFull
	case h.clients[client] >= h.o.PerClient:
		return nil, ErrClientFull
	}
	t := h.topics[key]
	if t == nil {
		t = &topic{key: key, watches: map[*Watch]struct{}{}, stop: make(chan struct{})}
		h.topics[key] = t
		h.polls.Add(1)
		go h.poll(t)
	}
	c := make(chan store.Counts, 1)
	w := &Watch{C: c, c: c, hub: h, t: t, client: client}
	t.watches[w] = struct{}{}
	h.clients[client]++
	h.total++
	return w, nil
}

// Close ends the watch. It may be called more than once.
func (w *Watch) Close() {
	w.once.Do(func() {
		h := w.hub
		h.mu.Lock()
		defer h.mu.Unlock()
		delete(w.t.watches, w)
		if len(w.t.watches) == 0 {
			close(w.t.stop)
			delete(h.topics, w.t.key)
		}
		if h.clients[w.client]--; h.clients[w.client] == 0 {
			delete(h.clients, w.client)
		}
		h.total--
	})
}

// poll reads t's key every interval until its last watcher leaves, and
// hands each change to every watcher.
func (h *Hub) poll(t *topic) {
	defer h.polls.Done()
	tick := time.NewTicker(h.o.Interval)
	defer tick.Stop()
	key := []byte(t.key)
	var last store.Counts
	first := true
	for {
		select {
		case <-t.stop:
			return
		case <-h.done:
			return
		case <-tick.C:
		}
		ctx, cancel := context.WithTimeout(context.Background(), h.o.Interval) // a read never outlasts a tick
		c, err := h.o.Get(ctx, key)
		cancel()
		if err != nil || (c == last && !first) {
			continue // a failed read is tried again next tick
		}
		last, first = c, false
		h.mu.Lock()
		for w := range t.watches {
			w.offer(c)
		}
		h.mu.Unlock()
	}
}

// offer hands c to the watcher, replacing a value it has not taken.
// Only the topic's poller sends, so the drain and send cannot race
// another sender.
func (w *Watch) offer(c store.Counts) {
	select {
	case w.c <- c:
		return
	default:
	}
	select {
	case <-w.c:
	default:
	}
	select {
	case w.c <- c:
	default:
	}
}

// Done returns a channel closed when the hub closes: every stream should
// end then.
func (h *Hub) Done() <-chan struct{} { return h.done }

// Streams reports how many watches the hub holds.
func (h *Hub) Streams() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.total
}

// Close makes every later Watch fail, closes the Done channel and waits
// for the pollers to stop. Watches already handed out must still be
// closed by their holders. It may be called more than once.
func (h *Hub) Close() {
	h.mu.Lock()
	if !h.closed {
		h.closed = true
		close(h.done)
	}
	h.mu.Unlock()
	h.polls.Wait()
}
