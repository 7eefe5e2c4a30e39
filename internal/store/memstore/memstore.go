// Package memstore is the in-memory [store.Store]: nothing is kept across
// restarts. It is the fastest backend and the one tests and benchmarks use.
//
// The global counter is one atomic integer, so numbers are handed out
// strictly in order without a lock. Per-key counters are atomic integers
// in a sync.Map, which since Go 1.24 is a concurrent hash-trie whose reads
// take no lock: requests for existing keys never wait for one another,
// and reading a count never blocks an increment. BenchmarkLookup compares
// it with a read-write-locked map on one hot key.
package memstore

import (
	"context"
	"sync"
	"sync/atomic"
	"unsafe"

	"visitors/internal/store"
)

var _ store.Store = (*Store)(nil)

// Store is an in-memory [store.Store]. It is safe for concurrent use.
type Store struct {
	hits    atomic.Uint64
	_       [56]byte     // keeps hits on its own cache line
	keys    atomic.Int64 // distinct keys held, never above maxKeys
	maxKeys int64
	m       sync.Map // string -> *atomic.Uint64
}

// New returns an empty Store that holds at most maxKeys distinct keys;
// maxKeys <= 0 means no limit. Close is a no-op, so callers need not call it.
func New(maxKeys int) *Store {
	return &Store{maxKeys: int64(maxKeys)}
}

// Hit implements [store.Store].
func (s *Store) Hit(context.Context) (uint64, error) {
	return s.hits.Add(1), nil
}

// Incr implements [store.Store].
func (s *Store) Incr(_ context.Context, key []byte) (uint64, error) {
	if c := s.lookup(key); c != nil {
		return c.Add(1), nil
	}
	if n := s.keys.Add(1); s.maxKeys > 0 && n > s.maxKeys {
		s.keys.Add(-1)
		if c := s.lookup(key); c != nil { // inserted meanwhile by another visit
			return c.Add(1), nil
		}
		return 0, store.ErrTooManyKeys
	}
	c, loaded := s.m.LoadOrStore(string(key), new(atomic.Uint64)) // string(key) copies
	if loaded {
		s.keys.Add(-1)
	}
	return c.(*atomic.Uint64).Add(1), nil
}

// Count implements [store.Store].
func (s *Store) Count(_ context.Context, key []byte) (uint64, error) {
	if c := s.lookup(key); c != nil {
		return c.Load(), nil
	}
	return 0, nil
}

// lookup returns key's counter, or nil. The key is viewed as a string
// without a copy: sync.Map.Load only hashes and compares it and keeps
// nothing, so the view never outlives the call. Insertions copy the key.
func (s *Store) lookup(key []byte) *atomic.Uint64 {
	if c, ok := s.m.Load(unsafe.String(unsafe.SliceData(key), len(key))); ok {
		return c.(*atomic.Uint64)
	}
	return nil
}

// Keys implements [store.Store].
func (s *Store) Keys() int { return int(s.keys.Load()) }

// Close implements [store.Store]. It does nothing.
func (s *Store) Close() error { return nil }
