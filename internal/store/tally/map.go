package tally

import (
	"slices"
	"strings"
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

// Delete removes key's entry if it is still e, and reports whether it
// did: the place it held under the limit is free again. An entry made
// anew for key meanwhile is left alone.
func (m *Map[E]) Delete(key string, e *E) bool {
	if m.m.CompareAndDelete(key, e) {
		m.n.Add(-1)
		return true
	}
	return false
}

// List returns, in byte order, at most limit keys that start with prefix
// and sort after after (nil: from the first key, the empty one
// included), with their entries. It walks every entry once and keeps the
// smallest limit keys seen, so a page costs O(n log limit), not a sort
// of every key.
func (m *Map[E]) List(prefix, after []byte, limit int) (keys []string, entries []*E) {
	if limit <= 0 {
		return nil, nil
	}
	type kv struct {
		k string
		e *E
	}
	var found []kv
	cmp := func(a, b kv) int { return strings.Compare(a.k, b.k) }
	p, a := string(prefix), string(after)
	m.m.Range(func(k, v any) bool {
		key := k.(string)
		if !strings.HasPrefix(key, p) || (after != nil && key <= a) {
			return true
		}
		found = append(found, kv{key, v.(*E)})
		if len(found) >= 2*limit+64 {
			slices.SortFunc(found, cmp)
			found = found[:limit]
		}
		return true
	})
	slices.SortFunc(found, cmp)
	found = found[:min(limit, len(found))]
	keys, entries = make([]string, len(found)), make([]*E, len(found))
	for i, f := range found {
		keys[i], entries[i] = f.k, f.e
	}
	return keys, entries
}
