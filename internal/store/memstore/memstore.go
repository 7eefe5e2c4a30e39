// Package memstore is the in-memory [store.Store]: nothing is kept across
// restarts. It is the fastest backend, the one tests and benchmarks use,
// and the in-memory half of the durable store, which it tells which keys
// changed since the last flush.
//
// The global counter is one atomic integer, so numbers are handed out
// strictly in order without a lock. Per-key counters are atomic integers
// in a sync.Map, which since Go 1.24 is a concurrent hash-trie whose reads
// take no lock: requests for existing keys never wait for one another,
// and reading a count never blocks an increment. BenchmarkLookup compares
// it with a read-write-locked map on one hot key.
//
// Today's count and its day are packed into one atomic word, so a visit
// updates both with one compare-and-swap; the day itself is read from an
// atomic that a timer advances at each UTC midnight, so no request reads
// the clock.
package memstore

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"visitors/internal/store"
)

var _ store.Store = (*Store)(nil)

// Options configure a [Store]. The zero value is a store without limits
// on the real clock.
type Options struct {
	// MaxKeys is the most distinct keys held; <= 0 means no limit.
	MaxKeys int
	// Now is the clock that says which UTC day it is; nil means time.Now.
	Now func() time.Time
	// Track makes the store remember which keys changed since they were
	// last taken with [Store.TakeDirty], for a durable store to flush.
	Track bool
}

// Store is an in-memory [store.Store]. It is safe for concurrent use.
type Store struct {
	hits atomic.Uint64
	_    [56]byte // keeps hits on its own cache line
	day  atomic.Uint32
	keys atomic.Int64 // distinct keys held, never above maxKeys
	_    [52]byte
	// dirty is a lock-free stack of entries changed since TakeDirty,
	// each on it at most once (guarded by Entry.dirty).
	dirty atomic.Pointer[Entry]

	maxKeys int64
	track   bool
	now     func() time.Time
	m       sync.Map // string -> *Entry

	mu    sync.Mutex // guards timer
	timer *time.Timer
}

// Entry is one key's counters. Its methods may be called concurrently,
// except where they say they belong to the flusher.
type Entry struct {
	key   string
	total atomic.Uint64
	today atomic.Uint64 // packed: day<<countBits | count
	dirty atomic.Bool   // on the dirty stack, or about to be
	next  *Entry        // the dirty stack's link; written only by the pusher

	mu   sync.Mutex           // guards past
	past map[store.Day]uint64 // final counts of earlier days, kept at rollover

	// FlushedDay is the day of the last count a durable store wrote for
	// this entry. Only the one flusher reads or writes it.
	FlushedDay store.Day
}

const countBits = 40 // today's count: up to 1.1e12 visits a day

func pack(d store.Day, n uint64) uint64 { return uint64(d)<<countBits | n }

func unpack(v uint64) (store.Day, uint64) {
	return store.Day(v >> countBits), v & (1<<countBits - 1)
}

// New returns an empty Store. The caller must call Close to stop its
// midnight timer.
func New(o Options) *Store {
	s := &Store{maxKeys: int64(o.MaxKeys), track: o.Track, now: o.Now}
	if s.now == nil {
		s.now = time.Now
	}
	s.Rollover()
	return s
}

// Rollover reads the clock and, if a new UTC day has begun, makes it the
// day visits count towards. The store calls it itself at each UTC
// midnight; tests with a fake clock call it after moving the clock.
func (s *Store) Rollover() {
	now := s.now()
	if d := uint32(store.DayOf(now)); d > s.day.Load() {
		s.day.Store(d)
	}
	next := store.Day(s.day.Load() + 1).Time()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.timer != nil {
		s.timer.Stop()
	}
	s.timer = time.AfterFunc(next.Sub(now), s.Rollover)
}

// Today returns the UTC day visits now count towards.
func (s *Store) Today() store.Day { return store.Day(s.day.Load()) }

// Hit implements [store.Store].
func (s *Store) Hit(context.Context) (uint64, error) {
	return s.hits.Add(1), nil
}

// Incr implements [store.Store].
func (s *Store) Incr(_ context.Context, key []byte) (store.Counts, error) {
	e := s.lookup(key)
	if e == nil {
		var err error
		if e, err = s.insert(key); err != nil {
			return store.Counts{}, err
		}
	}
	today := e.countDay(s.Today())
	total := e.total.Add(1)
	if s.track && !e.dirty.Load() && e.dirty.CompareAndSwap(false, true) {
		s.push(e)
	}
	return store.Counts{Total: total, Today: today}, nil
}

// countDay counts one visit on day d and returns the day's new count. A
// visit stamped with an older day than the entry's (a request that read
// the day just before midnight) counts towards the newer day.
func (e *Entry) countDay(d store.Day) uint64 {
	for {
		old := e.today.Load()
		od, n := unpack(old)
		next := pack(max(od, d), n+1)
		if od < d {
			next = pack(d, 1)
		}
		if e.today.CompareAndSwap(old, next) {
			if od < d && n > 0 {
				e.keepPast(od, n)
			}
			_, c := unpack(next)
			return c
		}
	}
}

func (e *Entry) keepPast(d store.Day, n uint64) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.past == nil {
		e.past = make(map[store.Day]uint64)
	}
	e.past[d] += n
}

func (s *Store) insert(key []byte) (*Entry, error) {
	if n := s.keys.Add(1); s.maxKeys > 0 && n > s.maxKeys {
		s.keys.Add(-1)
		if e := s.lookup(key); e != nil { // inserted meanwhile by another visit
			return e, nil
		}
		return nil, store.ErrTooManyKeys
	}
	k := string(key) // copies: the caller's buffer is not retained
	e, loaded := s.m.LoadOrStore(k, &Entry{key: k})
	if loaded {
		s.keys.Add(-1)
	}
	return e.(*Entry), nil
}

// Get implements [store.Store].
func (s *Store) Get(_ context.Context, key []byte) (store.Counts, error) {
	e := s.lookup(key)
	if e == nil {
		return store.Counts{}, nil
	}
	return store.Counts{Total: e.total.Load(), Today: e.countOn(s.Today())}, nil
}

// countOn returns the entry's count for day d as far as memory knows.
func (e *Entry) countOn(d store.Day) uint64 {
	if td, n := unpack(e.today.Load()); td == d {
		return n
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.past[d]
}

// Days implements [store.Store]. Memory holds every day since the store
// was created or restored.
func (s *Store) Days(_ context.Context, key []byte, n int) (store.Daily, error) {
	today := s.Today()
	d := store.Daily{Last: today.Time(), Counts: make([]uint64, n)}
	if e := s.lookup(key); e != nil {
		for i := range d.Counts {
			d.Counts[i] = e.countOn(today - store.Day(n-1-i))
		}
	}
	return d, nil
}

// lookup returns key's entry, or nil. The key is viewed as a string
// without a copy: sync.Map.Load only hashes and compares it and keeps
// nothing, so the view never outlives the call. Insertions copy the key.
func (s *Store) lookup(key []byte) *Entry {
	if e, ok := s.m.Load(unsafe.String(unsafe.SliceData(key), len(key))); ok {
		return e.(*Entry)
	}
	return nil
}

// Keys implements [store.Store].
func (s *Store) Keys() int { return int(s.keys.Load()) }

// Close implements [store.Store]. It stops the midnight timer.
func (s *Store) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.timer != nil {
		s.timer.Stop()
	}
	return nil
}

// push puts e on the dirty stack. The caller holds e's dirty mark.
func (s *Store) push(e *Entry) {
	for {
		head := s.dirty.Load()
		e.next = head
		if s.dirty.CompareAndSwap(head, e) {
			return
		}
	}
}

// TakeDirty empties the set of entries changed since the last call and
// calls fn for each. fn must read the entry's counts only after calling
// [Entry.Clean], so that a visit racing with the flush is either in what
// fn reads or marks the entry dirty again. Only the one flusher may call
// TakeDirty.
func (s *Store) TakeDirty(fn func(*Entry)) {
	for e := s.dirty.Swap(nil); e != nil; {
		next := e.next
		fn(e)
		e = next
	}
}

// Clean clears e's dirty mark: a visit after it marks e dirty again.
func (e *Entry) Clean() { e.dirty.Store(false) }

// MarkDirty puts e back among the changed entries, as a flusher does when
// its write failed.
func (s *Store) MarkDirty(e *Entry) {
	if e.dirty.CompareAndSwap(false, true) {
		s.push(e)
	}
}

// Key returns the entry's key.
func (e *Entry) Key() string { return e.key }

// Snapshot returns the entry's total, the day of its latest visit and
// that day's count.
func (e *Entry) Snapshot() (total uint64, day store.Day, count uint64) {
	day, count = unpack(e.today.Load())
	return e.total.Load(), day, count
}

// Past returns the count memory kept for an earlier day d, if any.
func (e *Entry) Past(d store.Day) (uint64, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	n, ok := e.past[d]
	return n, ok
}

// SetHits sets the global counter; the next Hit returns n+1. It is for
// restoring a store before it serves.
func (s *Store) SetHits(n uint64) { s.hits.Store(n) }

// Hits returns the last number Hit handed out.
func (s *Store) Hits() uint64 { return s.hits.Load() }

// Restore sets key's total and its count for day d, as read back from
// disk, before the store serves. It bypasses MaxKeys: what was stored is
// never dropped. The entry is not marked dirty.
func (s *Store) Restore(key []byte, total uint64, d store.Day, count uint64) {
	k := string(key)
	v, loaded := s.m.LoadOrStore(k, &Entry{key: k})
	e := v.(*Entry)
	if !loaded {
		s.keys.Add(1)
	}
	e.total.Store(total)
	e.today.Store(pack(d, count))
	e.FlushedDay = d
}
