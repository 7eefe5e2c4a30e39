package tally

import (
	"sync"
	"sync/atomic"
	"unsafe"

	"visitors/internal/store"
)

// Map maps keys to entries of type E, created on first use, and holds at
// most a fixed number of them. It is safe for concurrent use; Load takes
// no lock.
type Map[E any] struct {
	n   atomic.Int64 // entries held, never above max
	max int64        // <= 0: no limit
	mk  func(key string) *E
	m   sync.Map // string -> *E
}

// NewMap returns an empty Map that holds at most max entries (<= 0: no
// limit) and makes a new one with mk.
func NewMap[E any](max int, mk func(key string) *E) *Map[E] {
	return &Map[E]{max: int64(max), mk: mk}
}

// Load returns key's entry, or nil. The key is viewed as a string without
// a copy: sync.Map.Load only hashes and compares it and keeps nothing, so
// the view never outlives the call.
func (m *Map[E]) Load(key []byte) *E {
	if e, ok := m.m.Load(unsafe.String(unsafe.SliceData(key), len(key))); ok {
		return e.(*E)
	}
	return nil
}

// LoadOrNew returns key's entry, making it if the map has room. It
// returns [store.ErrTooManyKeys] if key is new and the map is full, and
// [store.ErrKeyTooLong] for a key too long for any store. Of two new keys
// racing for the last place, exactly one gets it.
func (m *Map[E]) LoadOrNew(key []byte) (*E, error) {
	if e := m.Load(key); e != nil {
		return e, nil
	}
	if len(key) > store.MaxKeyBytes {
		return nil, store.ErrKeyTooLong
	}
	if n := m.n.Add(1); m.max > 0 && n > m.max {
		m.n.Add(-1)
		if e := m.Load(key); e != nil { // made meanwhile by another visit
			return e, nil
		}
		return nil, store.ErrTooManyKeys
	}
	k := string(key) // copies: the caller's buffer is not retained
	e, loaded := m.m.LoadOrStore(k, m.mk(k))
	if loaded {
		m.n.Add(-1)
	}
	return e.(*E), nil
}

// Put returns key's entry, making it whatever the limit: what was stored
// is never dropped when it is read back.
func (m *Map[E]) Put(key []byte) *E {
	if e := m.Load(key); e != nil {
		return e
	}
	k := string(key)
	e, loaded := m.m.LoadOrStore(k, m.mk(k))
	if !loaded {
		m.n.Add(1)
	}
	return e.(*E)
}

// Len reports how many entries the map holds.
func (m *Map[E]) Len() int { return int(m.n.Load()) }

// Range calls fn for each entry until fn returns false.
func (m *Map[E]) Range(fn func(key string, e *E) bool) {
	m.m.Range(func(k, v any) bool { return fn(k.(string), v.(*E)) })
}
