// Package memstore is the in-memory [store.Store]: nothing is kept across
// restarts. It is the fastest backend and the one tests and benchmarks
// use.
//
// The global counter is one atomic integer, so numbers are handed out
// strictly in order without a lock. Per-key counts are [tally.Tally]
// values in a [tally.Map], whose reads take no lock: requests for existing
// keys never wait for one another, and reading a count never blocks an
// increment. BenchmarkLookup compares the map with a read-write-locked
// one on a hot key. Each key holds at most the last [store.MaxDays] days,
// the most anyone can read, so memory does not grow with time.
package memstore

import (
	"context"
	"maps"
	"slices"
	"sync"
	"time"

	"visitors/internal/store"
	"visitors/internal/store/tally"
)

var _ store.Store = (*Store)(nil)

// Options configure a [Store]. The zero value is a store without limits
// on the real clock.
type Options struct {
	// MaxKeys is the most distinct keys held; <= 0 means no limit.
	MaxKeys int
	// Now is the clock that says which UTC day it is; nil means time.Now.
	Now func() time.Time
}

// Store is an in-memory [store.Store]. It is safe for concurrent use.
type Store struct {
	hits tally.Counter
	cal  *tally.Calendar
	keys *tally.Map[entry]

	// mu guards tokens, and runs the owner's operations on a key (Set,
	// Add, Lock, Delete, Create) one at a time: each reads the key's
	// entry and changes it, or puts another in its place.
	mu     sync.Mutex
	tokens map[string]store.Token
}

// New returns an empty Store. The caller must call Close to stop its
// midnight timer.
func New(o Options) *Store {
	return &Store{
		cal:  tally.NewCalendar(o.Now),
		keys: tally.NewMap(o.MaxKeys, func(k string) *entry { return &entry{key: k} }, func(e *entry) string { return e.key }),
	}
}

// entry is one key's counts and the key.
type entry struct {
	tally.Tally
	key string
}

// Rollover makes a new UTC day, if one has begun on the store's clock,
// the day visits count towards. The store does it itself at each UTC
// midnight; tests with a manual clock call it after moving the clock.
func (s *Store) Rollover() { s.cal.Rollover() }

// Hit implements [store.Store].
func (s *Store) Hit(context.Context) (uint64, error) {
	for { // past MaxHits the counter stays
		h := s.hits.Load()
		if h >= store.MaxHits {
			return 0, store.ErrHiExhausted
		}
		if s.hits.CompareAndSwap(h, h+1) {
			return h + 1, nil
		}
	}
}

// Visit implements [store.Counter].
func (s *Store) Visit(_ context.Context, key []byte, create bool) (store.Counts, bool, error) {
	if !create {
		t := s.keys.Load(key)
		if t == nil {
			return store.Counts{}, false, store.ErrNewKey
		}
		return s.count(t), false, nil
	}
	t, made, err := s.keys.LoadOrMake(key)
	if err != nil {
		return store.Counts{}, false, err
	}
	return s.count(t), made, nil
}

// count counts one visit to t, unless it is locked.
func (s *Store) count(t *entry) store.Counts {
	if t.Locked() {
		return t.Counts(s.cal.Today())
	}
	v := t.Add(s.cal.Today())
	if v.Rolled {
		t.Prune(v.Day - store.MaxDays + 1)
	}
	return v.Counts
}

// Get implements [store.Store].
func (s *Store) Get(_ context.Context, key []byte) (store.Counts, error) {
	if t := s.keys.Load(key); t != nil {
		return t.Counts(s.cal.Today()), nil
	}
	return store.Counts{}, nil
}

// Days implements [store.Store].
func (s *Store) Days(_ context.Context, key []byte, n int) (store.Daily, error) {
	today := s.cal.Today()
	d := store.Daily{Last: today.Time(), Counts: make([]uint64, n)}
	if t := s.keys.Load(key); t != nil {
		for i := range d.Counts {
			d.Counts[i] = t.On(today - store.Day(n-1-i))
		}
	}
	return d, nil
}

// Set implements [store.Store]. A new entry takes the old one's place,
// so a visit racing with it counts on the old one (before the Set, and
// overwritten) or on the new one (after it). Reset in place, the day's
// count and the total were written apart, and a visit between them left
// the day above the total for good.
func (s *Store) Set(_ context.Context, key []byte, total uint64) (store.Counts, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	t, err := s.keys.LoadOrNew(key)
	if err != nil {
		return store.Counts{}, err
	}
	today := s.cal.Today()
	t2 := &entry{key: t.key}
	t2.Restore(total, today, 0)
	t2.SetLocked(t.Locked())
	s.keys.Swap(t.key, t, t2) // t is the key's: only Delete takes it out, under s.mu
	return t2.Counts(today), nil
}

// Add implements [store.Store].
func (s *Store) Add(_ context.Context, key []byte, n int64) (store.Counts, error) {
	if err := store.CheckAdd(store.Counts{}, n); err != nil {
		return store.Counts{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	t, err := s.keys.LoadOrNew(key)
	if err != nil {
		return store.Counts{}, err
	}
	today := s.cal.Today()
	if err := store.CheckAdd(t.Counts(today), n); err != nil {
		return store.Counts{}, err
	}
	return t.Shift(n, today), nil
}

// Lock implements [store.Store].
func (s *Store) Lock(_ context.Context, key []byte, locked bool) (store.Counts, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	t, err := s.keys.LoadOrNew(key)
	if err != nil {
		return store.Counts{}, err
	}
	t.SetLocked(locked)
	return t.Counts(s.cal.Today()), nil
}

// Delete implements [store.Store].
func (s *Store) Delete(_ context.Context, key []byte) (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	t := s.keys.Load(key)
	return t != nil && s.keys.Delete(string(key), t), nil
}

// List implements [store.Store].
func (s *Store) List(_ context.Context, prefix, after []byte, limit int) ([]store.Entry, error) {
	today := s.cal.Today()
	keys, tallies := s.keys.List(prefix, after, limit)
	out := make([]store.Entry, len(keys))
	for i, k := range keys {
		out[i] = store.Entry{Key: []byte(k), Counts: tallies[i].Counts(today)}
	}
	return out, nil
}

// Create implements [store.Store]: the key's entry is made by one
// compare-and-swap, which a visit's makes too, under the lock of the
// tokens.
func (s *Store) Create(_ context.Context, key []byte, t store.Token) (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, made, err := s.keys.LoadOrMake(key); err != nil || !made {
		return false, err
	}
	if s.tokens == nil {
		s.tokens = make(map[string]store.Token)
	}
	s.tokens[t.ID] = t
	return true, nil
}

// PutToken implements [store.Store].
func (s *Store) PutToken(_ context.Context, t store.Token) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.tokens == nil {
		s.tokens = make(map[string]store.Token)
	}
	s.tokens[t.ID] = t
	return nil
}

// AddToken implements [store.Store].
func (s *Store) AddToken(_ context.Context, t store.Token) (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.tokens[t.ID]; ok {
		return false, nil
	}
	if s.tokens == nil {
		s.tokens = make(map[string]store.Token)
	}
	s.tokens[t.ID] = t
	return true, nil
}

// Token implements [store.Store].
func (s *Store) Token(_ context.Context, id string) (store.Token, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	t, ok := s.tokens[id]
	return t, ok, nil
}

// DeleteToken implements [store.Store].
func (s *Store) DeleteToken(_ context.Context, id string) (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.tokens[id]
	delete(s.tokens, id)
	return ok, nil
}

// DeleteTokenIf implements [store.Store].
func (s *Store) DeleteTokenIf(_ context.Context, id string, hash [32]byte) (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if t, ok := s.tokens[id]; !ok || t.Hash != hash {
		return false, nil
	}
	delete(s.tokens, id)
	return true, nil
}

// Tokens implements [store.Store].
func (s *Store) Tokens(context.Context) ([]store.Token, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ids := slices.Sorted(maps.Keys(s.tokens))
	out := make([]store.Token, len(ids))
	for i, id := range ids {
		out[i] = s.tokens[id]
	}
	return out, nil
}

// Keys implements [store.Store].
func (s *Store) Keys() int { return s.keys.Len() }

// Health implements [store.Store]: memory is always healthy.
func (s *Store) Health() error { return nil }

// Close implements [store.Store]. It stops the midnight timer.
func (s *Store) Close() error {
	s.cal.Stop()
	return nil
}

// Held reports how many earlier days key's tally holds in memory.
func (s *Store) Held(key []byte) int {
	if t := s.keys.Load(key); t != nil {
		return t.Held()
	}
	return 0
}
