// Package top keeps the most visited counters of visitors without
// scanning the store: the /top.json list and the landing page's "most
// visited" section.
//
// A [Board] watches every counted visit. For each UTC day it keeps the
// [Candidates] keys with the highest count that day, exactly: a key's
// daily count only grows, and the board sees every new value, so a key
// left out was below every key kept each time it was seen. Most visits
// are turned away by one atomic comparison, with no lock. The board
// remembers the candidates of the last [MaxDays] days.
//
// Ranking reads the last [MaxDays] days of every candidate of those days
// from the store ([store.Reader.Days]), once, and ranks them for each
// number of days; the lists are cached for a TTL, so the store is read
// at most once per TTL, whatever the requests ask. Because counts come from the store,
// they are exact and survive restarts; what a restart loses is the
// candidacy of earlier days: a key not visited since the process started
// is listed again from its next visit on. A key that never made any
// day's candidates (the 1,001st every day) is not listed, even if its
// sum over the days would rank it.
//
// The board needs nothing of a store beyond [store.Reader], so it works
// the same over every backend.
package top

import (
	"container/heap"
	"context"
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"visitors/internal/store"
)

// Limits of a list.
const (
	MaxDays    = 30   // a list covers 1 to MaxDays UTC days, today included
	MaxLimit   = 100  // a list holds at most MaxLimit keys
	Candidates = 1000 // keys kept per day
)

// ErrDays is returned for a list of fewer than 1 or more than [MaxDays]
// days.
var ErrDays = errors.New("days must be from 1 to 30")

// Entry is one key of a list and its visits over the list's days.
type Entry struct {
	Key   string `json:"key"`
	Count uint64 `json:"count"`
}

// Options configure a [Board].
type Options struct {
	// Store reads the candidates' counts. Required.
	Store store.Reader
	// Today says which UTC day visits count towards now. Required.
	Today func() store.Day
	// TTL is how long a list is served before it is ranked again.
	TTL time.Duration
	// Candidates per day; 0 means [Candidates].
	Candidates int
	// Now is the clock of the cache; nil means time.Now.
	Now func() time.Time
}

// Board keeps the candidates and serves lists. It is safe for
// concurrent use.
type Board struct {
	o   Options
	cur atomic.Pointer[day] // today's board

	mu   sync.Mutex         // guards past and pday
	past [MaxDays][]string  // candidates of earlier days, by day % MaxDays
	pday [MaxDays]store.Day // which day each of past holds

	cache struct {
		mu    sync.Mutex // held while ranking, so one request ranks and the rest wait for it
		ok    bool
		at    time.Time
		lists [MaxDays + 1][]Entry // by number of days
	}
}

// day is one UTC day's candidates: a min-heap by count, so the weakest
// is at the root, and an index by key.
type day struct {
	d    store.Day
	min  atomic.Uint64 // the root's count once the heap is full, else 0
	full atomic.Bool

	mu    sync.Mutex // guards h and byKey
	h     entries
	byKey map[string]*entry
}

type entry struct {
	key string
	n   uint64
	i   int // index in the heap
}

// entries is a min-heap of entries by count.
type entries []*entry

func (h entries) Len() int           { return len(h) }
func (h entries) Less(i, j int) bool { return h[i].n < h[j].n }
func (h entries) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].i, h[j].i = i, j
}
func (h *entries) Push(x any) { e := x.(*entry); e.i = len(*h); *h = append(*h, e) }
func (h *entries) Pop() any {
	old := *h
	e := old[len(old)-1]
	*h = old[:len(old)-1]
	return e
}

// New returns a Board for o.
func New(o Options) *Board {
	if o.Candidates <= 0 {
		o.Candidates = Candidates
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	b := &Board{o: o}
	b.cur.Store(newDay(o.Today(), o.Candidates))
	return b
}

func newDay(d store.Day, n int) *day {
	return &day{d: d, h: make(entries, 0, n), byKey: make(map[string]*entry, n)}
}

// Observe tells the board that a visit to key left it with counts c.
// It allocates only when key becomes a candidate.
func (b *Board) Observe(key []byte, c store.Counts) {
	cur := b.cur.Load()
	if d := b.o.Today(); cur.d != d {
		cur = b.roll(d)
	}
	if c.Today <= cur.min.Load() && cur.full.Load() {
		return // below every candidate: the common case
	}
	cur.mu.Lock()
	defer cur.mu.Unlock()
	if e, ok := cur.byKey[string(key)]; ok {
		if c.Today > e.n {
			e.n = c.Today
			heap.Fix(&cur.h, e.i)
		}
	} else if len(cur.h) < b.o.Candidates {
		e := &entry{key: string(key), n: c.Today}
		cur.byKey[e.key] = e
		heap.Push(&cur.h, e)
	} else if root := cur.h[0]; c.Today > root.n {
		delete(cur.byKey, root.key)
		root.key, root.n = string(key), c.Today
		cur.byKey[root.key] = root
		heap.Fix(&cur.h, 0)
	}
	if len(cur.h) == b.o.Candidates {
		cur.min.Store(cur.h[0].n)
		cur.full.Store(true)
	}
}

// roll makes d the board's day, keeping the candidates of the day
// before, and returns d's board.
func (b *Board) roll(d store.Day) *day {
	b.mu.Lock()
	defer b.mu.Unlock()
	cur := b.cur.Load()
	if cur.d >= d {
		return cur // another visit rolled it, or a late one from the day before
	}
	b.keep(cur)
	next := newDay(d, b.o.Candidates)
	b.cur.Store(next)
	return next
}

// keep stores old's candidates among the past days. b.mu is held.
func (b *Board) keep(old *day) {
	old.mu.Lock()
	keys := make([]string, 0, len(old.h))
	for _, e := range old.h {
		keys = append(keys, e.key)
	}
	old.mu.Unlock()
	b.past[old.d%MaxDays], b.pday[old.d%MaxDays] = keys, old.d
}

// candidates returns the keys that were candidates on any of the last
// MaxDays days, without duplicates.
func (b *Board) candidates() []string {
	cur := b.cur.Load()
	if d := b.o.Today(); cur.d != d {
		cur = b.roll(d)
	}
	seen := map[string]struct{}{}
	cur.mu.Lock()
	for k := range cur.byKey {
		seen[k] = struct{}{}
	}
	cur.mu.Unlock()
	b.mu.Lock()
	for i := 1; i < MaxDays; i++ {
		d := cur.d - store.Day(i)
		if b.pday[d%MaxDays] == d {
			for _, k := range b.past[d%MaxDays] {
				seen[k] = struct{}{}
			}
		}
	}
	b.mu.Unlock()
	keys := make([]string, 0, len(seen))
	for k := range seen {
		keys = append(keys, k)
	}
	return keys
}

// List returns the at most [MaxLimit] most visited keys over the last n
// UTC days, today included (1 <= n <= [MaxDays]), most visited first,
// ties by key; keys without visits in those days are left out. The list
// is at most TTL old. The caller must not modify it.
func (b *Board) List(ctx context.Context, n int) ([]Entry, error) {
	if n < 1 || n > MaxDays {
		return nil, ErrDays
	}
	b.cache.mu.Lock()
	defer b.cache.mu.Unlock()
	now := b.o.Now()
	if b.cache.ok && now.Sub(b.cache.at) < b.o.TTL {
		return b.cache.lists[n], nil
	}
	lists, err := b.rank(ctx)
	if err != nil {
		return nil, err
	}
	b.cache.lists, b.cache.at, b.cache.ok = lists, now, true
	return lists[n], nil
}

// rank reads the last MaxDays days of every candidate from the store,
// once, and ranks them for each number of days.
func (b *Board) rank(ctx context.Context) (lists [MaxDays + 1][]Entry, _ error) {
	keys := b.candidates()
	sums := make([][MaxDays]uint64, len(keys)) // sums[i][n-1]: key i's visits in the last n days
	var buf []byte
	for i, k := range keys {
		buf = append(buf[:0], k...)
		d, err := b.o.Store.Days(ctx, buf, MaxDays)
		if err != nil {
			return lists, err
		}
		var sum uint64
		for n := 1; n <= MaxDays; n++ {
			sum += d.Counts[len(d.Counts)-n]
			sums[i][n-1] = sum
		}
	}
	for n := 1; n <= MaxDays; n++ {
		best := make(ranking, 0, MaxLimit+1)
		for i, k := range keys {
			c := sums[i][n-1]
			if c == 0 || len(best) == MaxLimit && !better(Entry{k, c}, best[0]) {
				continue
			}
			heap.Push(&best, Entry{k, c})
			if len(best) > MaxLimit {
				heap.Pop(&best)
			}
		}
		slices.SortFunc(best, func(x, y Entry) int {
			if better(x, y) {
				return -1
			}
			return 1
		})
		lists[n] = slices.Clip(best)
	}
	return lists, nil
}

// better reports whether x ranks above y: more visits, or as many and a
// smaller key.
func better(x, y Entry) bool {
	if x.Count != y.Count {
		return x.Count > y.Count
	}
	return x.Key < y.Key
}

// ranking is a min-heap of entries by rank: the lowest ranked at the
// root, to be dropped when a better one comes.
type ranking []Entry

func (h ranking) Len() int           { return len(h) }
func (h ranking) Less(i, j int) bool { return better(h[j], h[i]) }
func (h ranking) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *ranking) Push(x any)        { *h = append(*h, x.(Entry)) }
func (h *ranking) Pop() any {
	old := *h
	e := old[len(old)-1]
	*h = old[:len(old)-1]
	return e
}
