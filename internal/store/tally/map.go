package tally

import (
	"strings"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/google/btree"

	"visitors/internal/store"
)

// Map maps keys to entries of type E, created on first use, and holds at
// most a fixed number of them. It is safe for concurrent use; Load takes
// no lock.
//
// Beside the hash map it keeps the keys in order, in a B-tree, so that
// [Map.List] reads a page of keys in O(log n + page) rather than walking
// every entry (350-700 ms a page at a million keys). Only making and
// deleting an entry touch the tree, under a lock; a visit to a key that
// exists never does.
type Map[E any] struct {
	n   atomic.Int64 // entries held, never above max
	max int64        // <= 0: no limit
	mk  func(key string) *E
	m   sync.Map // string -> *E

	mu    sync.RWMutex // guards order, and orders every change of m with it
	order *btree.BTreeG[string]
}

// NewMap returns an empty Map that holds at most max entries (<= 0: no
// limit) and makes a new one with mk.
func NewMap[E any](max int, mk func(key string) *E) *Map[E] {
	return &Map[E]{max: int64(max), mk: mk, order: btree.NewOrderedG[string](32)}
}

// store stores key's entry e unless key has one, and reports whether it
// did; the key joins the order with it.
func (m *Map[E]) store(k string, e *E) (*E, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	got, loaded := m.m.LoadOrStore(k, e)
	if !loaded {
		m.order.ReplaceOrInsert(k)
	}
	return got.(*E), !loaded
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
	e, _, err := m.LoadOrMake(key)
	return e, err
}

// LoadOrMake is LoadOrNew that also reports whether this call made the
// entry: of callers racing on a new key, exactly one did.
func (m *Map[E]) LoadOrMake(key []byte) (*E, bool, error) {
	if e := m.Load(key); e != nil {
		return e, false, nil
	}
	if len(key) > store.MaxKeyBytes {
		return nil, false, store.ErrKeyTooLong
	}
	if n := m.n.Add(1); m.max > 0 && n > m.max {
		m.n.Add(-1)
		if e := m.Load(key); e != nil { // made meanwhile by another visit
			return e, false, nil
		}
		return nil, false, store.ErrTooManyKeys
	}
	k := string(key) // copies: the caller's buffer is not retained
	e, stored := m.store(k, m.mk(k))
	if !stored {
		m.n.Add(-1)
	}
	return e, stored, nil
}

// Put returns key's entry, making it whatever the limit: what was stored
// is never dropped when it is read back.
func (m *Map[E]) Put(key []byte) *E {
	if e := m.Load(key); e != nil {
		return e
	}
	k := string(key)
	e, stored := m.store(k, m.mk(k))
	if stored {
		m.n.Add(1)
	}
	return e
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
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.m.CompareAndDelete(key, e) {
		return false
	}
	m.order.Delete(key)
	m.n.Add(-1)
	return true
}

// List returns, in byte order, at most limit keys that start with prefix
// and sort after after (nil: from the first key, the empty one
// included), with their entries.
func (m *Map[E]) List(prefix, after []byte, limit int) (keys []string, entries []*E) {
	if limit <= 0 {
		return nil, nil
	}
	p, from := string(prefix), string(prefix)
	if after != nil && string(after) >= from {
		from = string(after)
	}
	m.mu.RLock()
	defer m.mu.RUnlock()
	m.order.AscendGreaterOrEqual(from, func(k string) bool {
		if !strings.HasPrefix(k, p) {
			return false
		}
		if after != nil && k == string(after) {
			return true
		}
		e, ok := m.m.Load(k)
		if !ok {
			return true // cannot be: m changes only under mu
		}
		keys, entries = append(keys, k), append(entries, e.(*E))
		return len(keys) < limit
	})
	return keys, entries
}
