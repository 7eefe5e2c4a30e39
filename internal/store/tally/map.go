package tally

import (
	"fmt"
	"hash/maphash"
	"slices"
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
// The entries are in an open-addressed hash table of their own (see
// table): a slot is a pointer and a byte, and the key is read from the
// entry itself. The sync.Map it replaced cost 165 bytes a key
// in its trie's nodes and the boxed key (BenchmarkMemoryPerKey,
// docs/performance.md).
//
// Beside the hash table it keeps the keys in order, so that [Map.List]
// reads a page of keys in O(log n + page) rather than walking every entry
// (350-700 ms a page at a million keys): most of them in a sorted slice
// (16 bytes a key), made at once by [Map.Fill] or by merging, and the
// keys made since in a B-tree (about 37 bytes a key when they come in
// order, which leaves its nodes half full), merged into the slice once
// it holds an eighth as many. Only making and deleting an entry touch
// the order and the table's writers, under a lock; a visit to a key that
// exists never does.
type Map[E any] struct {
	n     atomic.Int64 // entries held, never above max; changed under mu
	max   int64        // <= 0: no limit
	mk    func(key string) *E
	keyOf func(*E) string
	seed  maphash.Seed
	tab   atomic.Pointer[table[E]] // replaced, grown, under mu
	tomb  *E                       // marks a deleted slot

	mu   sync.RWMutex // guards sorted, order, stale and every change of tab
	used int          // slots of tab not empty: entries and tombstones
	// The keys in byte order: each held key is in exactly one of sorted
	// and order. sorted may also hold keys deleted since (stale of them
	// at most), which List skips as the table does not hold them; a key
	// made again that sorted still holds is not put in order.
	sorted []string
	order  *btree.BTreeG[string]
	stale  int
}

// mergeMin is the fewest keys order holds before they are merged into
// sorted: a merge copies every key.
const mergeMin = 1024

// table is an open-addressed hash table with linear probing: a slot is
// an entry's pointer and one byte of its hash (the tag, from the hash's
// top bits, which spares a probe most reads of a wrong entry's key), 9
// bytes; it is at most 3/4 full. Readers take no lock: a slot's tag is
// written before its entry is stored, and a slot once filled is only
// ever emptied by a tombstone, so a reader that finds an entry finds its
// tag, and a probe stops at the first empty slot. A deleted slot keeps
// its tombstone until the table is rebuilt; writers, under the Map's
// lock, never reuse it, so that no reader can see a slot's tag and entry
// of two different keys.
type table[E any] struct {
	entries []atomic.Pointer[E] // len is a power of two
	tags    []uint8
}

func newTable[E any](size int) *table[E] {
	return &table[E]{entries: make([]atomic.Pointer[E], size), tags: make([]uint8, size)}
}

func tagOf(h uint64) uint8 { return uint8(h >> 56) }

// NewMap returns an empty Map that holds at most max entries (<= 0: no
// limit), makes a new one with mk (under the map's lock: see store), and
// reads an entry's key with keyOf.
func NewMap[E any](max int, mk func(key string) *E, keyOf func(*E) string) *Map[E] {
	m := &Map[E]{max: int64(max), mk: mk, keyOf: keyOf, seed: maphash.MakeSeed(), tomb: new(E), order: btree.NewOrderedG[string](32)}
	m.tab.Store(newTable[E](8))
	return m
}

// find returns key's entry in t, or nil.
func (m *Map[E]) find(t *table[E], key string, h uint64) *E {
	mask, tag := uint64(len(t.entries)-1), tagOf(h)
	for i := h & mask; ; i = (i + 1) & mask {
		e := t.entries[i].Load()
		if e == nil {
			return nil
		}
		if e != m.tomb && t.tags[i] == tag && m.keyOf(e) == key {
			return e
		}
	}
}

// insert puts e, whose key t does not hold, in t. m.mu must be held,
// and t must have an empty slot.
func (m *Map[E]) insert(t *table[E], h uint64, e *E) {
	mask := uint64(len(t.entries) - 1)
	i := h & mask
	for t.entries[i].Load() != nil {
		i = (i + 1) & mask
	}
	t.tags[i] = tagOf(h)
	t.entries[i].Store(e) // after its tag: see table
}

// grow makes room for one more entry: at most 3/4 of the slots are used,
// tombstones included, so that a probe for a key not held reads 8.5
// slots on average. A full table is rebuilt, without its tombstones, at
// most half full. m.mu must be held.
func (m *Map[E]) grow() {
	t := m.tab.Load()
	if 4*(m.used+1) <= 3*len(t.entries) {
		return
	}
	live := 0
	for i := range t.entries {
		if e := t.entries[i].Load(); e != nil && e != m.tomb {
			live++
		}
	}
	size := 8
	for 2*(live+1) > size {
		size *= 2
	}
	nt := newTable[E](size)
	for i := range t.entries {
		if e := t.entries[i].Load(); e != nil && e != m.tomb {
			m.insert(nt, maphash.String(m.seed, m.keyOf(e)), e)
		}
	}
	m.used = live
	m.tab.Store(nt)
}

// Reserve makes room for n more entries at once, so that a caller about
// to put them (a store loading its file) does not rebuild the table at
// each doubling on the way.
func (m *Map[E]) Reserve(n int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	t := m.tab.Load()
	size := len(t.entries)
	for 2*(m.used+n) > size {
		size *= 2
	}
	if size == len(t.entries) {
		return
	}
	nt := newTable[E](size)
	live := 0
	for i := range t.entries {
		if e := t.entries[i].Load(); e != nil && e != m.tomb {
			m.insert(nt, maphash.String(m.seed, m.keyOf(e)), e)
			live++
		}
	}
	m.used = live
	m.tab.Store(nt)
}

// store stores the entry mk makes for key unless key has one, and
// reports whether it did; the key joins the order with it. With limit,
// a new key past max is refused with [store.ErrTooManyKeys]: the count
// is checked and raised under the writers' lock, with the table, so of
// visits racing on the same new key for the last place, a loser finds
// the winner's entry, never a full map, and Len never passes max. mk
// runs under the lock, once the key is found absent, and must not use
// the map: what it returns is stored at once, so an entry mk hands over
// while it is current (a store's entry being put in place) can never be
// stored later, once it is not (TestAVisitThatMadeAnEntryDuringAReplace
// in boltstore: a visit that ran mk, then paused, put back an entry
// retired meanwhile). A map already full makes nothing.
func (m *Map[E]) store(key []byte, limit bool) (*E, bool, error) {
	h := maphash.Bytes(m.seed, key)
	ks := unsafe.String(unsafe.SliceData(key), len(key))
	full := func() bool { return limit && m.max > 0 && m.n.Load() >= m.max }
	if full() { // the key may be being made: ask under the lock
		m.mu.RLock()
		got := m.find(m.tab.Load(), ks, h)
		m.mu.RUnlock()
		if got != nil {
			return got, false, nil
		}
		if full() {
			return nil, false, store.ErrTooManyKeys
		}
	}
	k := string(key) // copies: the caller's buffer is not retained
	m.mu.Lock()
	defer m.mu.Unlock()
	if got := m.find(m.tab.Load(), k, h); got != nil {
		return got, false, nil
	}
	if full() {
		return nil, false, store.ErrTooManyKeys
	}
	e := m.mk(k)
	m.grow()
	m.insert(m.tab.Load(), h, e)
	m.used++
	m.n.Add(1)
	m.addOrder(k)
	return e, true, nil
}

// inSorted reports whether sorted holds key. m.mu must be held.
func (m *Map[E]) inSorted(key string) bool {
	_, found := slices.BinarySearch(m.sorted, key)
	return found
}

// addOrder puts key, just made, in the order, and merges order into
// sorted once it holds an eighth as many keys: amortized, a key is
// copied about nine times, and at most a ninth of the keys cost a
// B-tree's bytes. m.mu must be held.
func (m *Map[E]) addOrder(key string) {
	if m.inSorted(key) {
		return
	}
	m.order.ReplaceOrInsert(key)
	if n := m.order.Len(); n < mergeMin || n < len(m.sorted)/8 {
		return
	}
	merged := make([]string, 0, len(m.sorted)-m.stale+m.order.Len())
	i := 0
	keep := func(k string) {
		if m.stale == 0 || m.find(m.tab.Load(), k, maphash.String(m.seed, k)) != nil {
			merged = append(merged, k)
		}
	}
	m.order.Ascend(func(k string) bool {
		for ; i < len(m.sorted) && m.sorted[i] < k; i++ {
			keep(m.sorted[i])
		}
		merged = append(merged, k)
		return true
	})
	for ; i < len(m.sorted); i++ {
		keep(m.sorted[i])
	}
	m.sorted, m.stale = merged, 0
	m.order.Clear(false)
}

// Fill puts every entry of es in the map, whatever its limit, as a store
// reading back its file does: in one pass, with no entry made by mk. The
// keys must be distinct and not held; the map keeps pointers into es,
// which the caller must not use again (so a million entries are one
// allocation, not a million). An entry deleted later is not freed on its
// own: es is, once none of its entries is held (a store's deleted and
// replaced keys, rare, keep their 96 bytes until a restart). Fill is
// fastest, and keeps the keys in order with no sort, when the keys come
// in byte order, or in a few runs of it (a file that sorts by length
// first).
func (m *Map[E]) Fill(es []E) {
	if len(es) == 0 {
		return
	}
	m.Reserve(len(es))
	keys := make([]string, len(es))
	m.mu.Lock()
	defer m.mu.Unlock()
	t := m.tab.Load()
	for i := range es {
		e := &es[i]
		k := m.keyOf(e)
		h := maphash.String(m.seed, k)
		if m.find(t, k, h) != nil {
			panic(fmt.Sprintf("tally: Fill of key %q, which the map holds", k))
		}
		m.insert(t, h, e)
		keys[i] = k
	}
	m.used += len(es)
	m.n.Add(int64(len(es)))
	if len(m.sorted) == 0 && m.order.Len() == 0 {
		sortRuns(keys)
	} else { // not a new map's first fill: rare, so simply sorted
		m.order.Ascend(func(k string) bool { keys = append(keys, k); return true })
		m.order.Clear(false)
		keys = append(keys, m.sorted...) // its stale keys stay stale
		slices.Sort(keys)
		keys = slices.Compact(keys) // a stale key filled again
	}
	m.sorted = keys
}

// Load returns key's entry, or nil. It allocates nothing: the key is
// hashed and compared, not kept.
func (m *Map[E]) Load(key []byte) *E {
	return m.find(m.tab.Load(), unsafe.String(unsafe.SliceData(key), len(key)), maphash.Bytes(m.seed, key))
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
	return m.store(key, true)
}

// Put returns key's entry, making it whatever the limit: what was stored
// is never dropped when it is read back.
func (m *Map[E]) Put(key []byte) *E {
	if e := m.Load(key); e != nil {
		return e
	}
	e, _, _ := m.store(key, false)
	return e
}

// Len reports how many entries the map holds.
func (m *Map[E]) Len() int { return int(m.n.Load()) }

// Range calls fn for each entry until fn returns false. An entry made
// or deleted during the walk may or may not be seen.
func (m *Map[E]) Range(fn func(key string, e *E) bool) {
	t := m.tab.Load()
	for i := range t.entries {
		if e := t.entries[i].Load(); e != nil && e != m.tomb && !fn(m.keyOf(e), e) {
			return
		}
	}
}

// Delete removes key's entry if it is still e, and reports whether it
// did: the place it held under the limit is free again. An entry made
// anew for key meanwhile is left alone.
func (m *Map[E]) Delete(key string, e *E) bool {
	h := maphash.String(m.seed, key)
	m.mu.Lock()
	defer m.mu.Unlock()
	t := m.tab.Load()
	mask := uint64(len(t.entries) - 1)
	i := h & mask
	for {
		got := t.entries[i].Load()
		if got == nil {
			return false
		}
		if got == e {
			break
		}
		i = (i + 1) & mask
	}
	t.entries[i].Store(m.tomb)
	if _, ok := m.order.Delete(key); !ok {
		m.stale++ // sorted holds it
	}
	m.n.Add(-1)
	return true
}

// Swap puts e2, an entry of the same key, in the place of key's entry
// e, if it is still e, and reports whether it did. Readers find one or
// the other, never neither, and the place e held under the limit stays
// taken: a store replacing a key's entry that deleted the old one and
// then made the new one left the key absent meanwhile, and a new key
// could take its place at the limit.
func (m *Map[E]) Swap(key string, e, e2 *E) bool {
	h := maphash.String(m.seed, key)
	m.mu.Lock()
	defer m.mu.Unlock()
	t := m.tab.Load()
	mask := uint64(len(t.entries) - 1)
	for i := h & mask; ; i = (i + 1) & mask {
		got := t.entries[i].Load()
		if got == nil {
			return false
		}
		if got == e {
			t.entries[i].Store(e2) // the slot's tag is the key's: the same
			return true
		}
	}
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
	// Merge the two orders: a key is in one or the other.
	t := m.tab.Load()
	more := true
	emit := func(k string) bool {
		if !strings.HasPrefix(k, p) {
			return false
		}
		if after != nil && k == string(after) {
			return true
		}
		e := m.find(t, k, maphash.String(m.seed, k))
		if e == nil {
			return true // a key of sorted deleted since
		}
		keys, entries = append(keys, k), append(entries, e)
		return len(keys) < limit
	}
	i, _ := slices.BinarySearch(m.sorted, from)
	m.order.AscendGreaterOrEqual(from, func(k string) bool {
		for ; more && i < len(m.sorted) && m.sorted[i] < k; i++ {
			more = emit(m.sorted[i])
		}
		if more {
			more = emit(k)
		}
		return more
	})
	for ; more && i < len(m.sorted); i++ {
		more = emit(m.sorted[i])
	}
	return keys, entries
}

// sortRuns sorts keys, which come in a few ascending runs (a file sorted
// by length, then bytes, has one per length), by merging the runs pairwise:
// a pass per doubling, rather than a sort's comparisons of every key.
func sortRuns(keys []string) {
	var runs []int // where each run begins
	for i := range keys {
		if i == 0 || keys[i] < keys[i-1] {
			runs = append(runs, i)
		}
	}
	if len(runs) <= 1 {
		return
	}
	if len(runs) > 64 { // not a few runs: a sort does better
		slices.Sort(keys)
		return
	}
	runs = append(runs, len(keys))
	src, dst := keys, make([]string, len(keys))
	for len(runs) > 2 {
		next := []int{0}
		for r := 0; r+1 < len(runs); r += 2 {
			lo, mid, hi := runs[r], runs[r+1], len(keys)
			if r+2 < len(runs) {
				hi = runs[r+2]
			}
			i, j, o := lo, mid, lo
			for i < mid && j < hi {
				if src[j] < src[i] {
					dst[o], j = src[j], j+1
				} else {
					dst[o], i = src[i], i+1
				}
				o++
			}
			o += copy(dst[o:], src[i:mid])
			copy(dst[o:], src[j:hi])
			next = append(next, hi)
		}
		runs, src, dst = next, dst, src
	}
	if &src[0] != &keys[0] {
		copy(keys, src)
	}
}
