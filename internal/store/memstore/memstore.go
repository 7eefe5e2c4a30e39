// Package memstore is the in-memory [store.Store]: nothing is kept across
// restarts. It is the fastest backend and the one tests and benchmarks use.
//
// The global counter is one atomic integer, so numbers are handed out
// strictly in order without a lock. Per-key counters live in a map split
// into shards, each behind its own read-write lock; a lookup takes only a
// read lock and the increment itself is atomic, so requests for existing
// keys never wait for one another and reading a count never blocks an
// increment. The write lock of one shard is taken only to insert a new key.
package memstore

import (
	"context"
	"hash/maphash"
	"sync"
	"sync/atomic"

	"visitors/internal/store"
)

// numShards is a power of two, comfortably above the core counts this
// service runs on, so that two hot keys rarely share a lock.
const numShards = 64

// cacheLine pads hot fields apart to avoid false sharing.
const cacheLine = 64

var _ store.Store = (*Store)(nil)

// Store is an in-memory [store.Store]. It is safe for concurrent use.
type Store struct {
	hits    atomic.Uint64
	_       [cacheLine - 8]byte
	keys    atomic.Int64 // distinct keys held, never above maxKeys
	_       [cacheLine - 8]byte
	maxKeys int64
	seed    maphash.Seed
	shards  [numShards]shard
}

type shard struct {
	mu sync.RWMutex              // guards m; the counters themselves are atomic
	m  map[string]*atomic.Uint64 // key -> total
	_  [cacheLine - 32]byte
}

// New returns an empty Store that holds at most maxKeys distinct keys;
// maxKeys <= 0 means no limit. Close is a no-op, so callers need not call it.
func New(maxKeys int) *Store {
	s := &Store{maxKeys: int64(maxKeys), seed: maphash.MakeSeed()}
	for i := range s.shards {
		s.shards[i].m = make(map[string]*atomic.Uint64)
	}
	return s
}

// Hit implements [store.Store].
func (s *Store) Hit(context.Context) (uint64, error) {
	return s.hits.Add(1), nil
}

// Incr implements [store.Store].
func (s *Store) Incr(_ context.Context, key []byte) (uint64, error) {
	sh := s.shard(key)
	sh.mu.RLock()
	c := sh.m[string(key)] // no allocation: the compiler converts in place
	sh.mu.RUnlock()
	if c != nil {
		return c.Add(1), nil
	}
	c, err := s.insert(sh, key)
	if err != nil {
		return 0, err
	}
	return c.Add(1), nil
}

// insert adds key to sh unless another request did so first.
func (s *Store) insert(sh *shard, key []byte) (*atomic.Uint64, error) {
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if c := sh.m[string(key)]; c != nil {
		return c, nil
	}
	if n := s.keys.Add(1); s.maxKeys > 0 && n > s.maxKeys {
		s.keys.Add(-1)
		return nil, store.ErrTooManyKeys
	}
	c := new(atomic.Uint64)
	sh.m[string(key)] = c // copies key: the caller's buffer is not retained
	return c, nil
}

// Count implements [store.Store].
func (s *Store) Count(_ context.Context, key []byte) (uint64, error) {
	sh := s.shard(key)
	sh.mu.RLock()
	c := sh.m[string(key)]
	sh.mu.RUnlock()
	if c == nil {
		return 0, nil
	}
	return c.Load(), nil
}

// Keys implements [store.Store].
func (s *Store) Keys() int { return int(s.keys.Load()) }

// Close implements [store.Store]. It does nothing.
func (s *Store) Close() error { return nil }

func (s *Store) shard(key []byte) *shard {
	return &s.shards[maphash.Bytes(s.seed, key)&(numShards-1)]
}
