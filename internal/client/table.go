package client

// table holds a part of a [Limiter]'s clients by the hash of their
// identity: open addressing with linear probing over one slice of slots,
// at most half full, and backward-shift deletion (no tombstones, so a
// lookup of a new client stops at the first empty slot however many
// clients came and went).
//
// It holds no pointers: a new client is a slot written, not an object
// allocated, and the garbage collector never scans a table. Under a
// flood of new clients (each request from a new address) the maps of
// pointers it replaced allocated an entry per client and kept 100,000
// pointers for every GC cycle to mark, and their deleted slots made
// every lookup of a new client probe further (docs/performance.md).
type table struct {
	slots []slot // len is a power of two, or 0 before the first client
	n     int    // clients held
	max   int    // most slots: the table never grows past it
}

// slot is one client's buckets; key 0 marks an empty slot.
type slot struct {
	key uint64
	e   entry
}

// newTable returns a table for at most n clients.
func newTable(n int) table {
	size := 8
	for size < 2*n {
		size *= 2
	}
	return table{max: size}
}

// home returns the slot where key's probe starts. The low bits of a key
// chose its shard: the high ones choose its slot.
func (t *table) home(key uint64) int { return int(key>>32) & (len(t.slots) - 1) }

// get returns key's entry, or nil.
func (t *table) get(key uint64) *entry {
	if len(t.slots) == 0 {
		return nil
	}
	mask := len(t.slots) - 1
	for i := t.home(key); ; i = (i + 1) & mask {
		switch t.slots[i].key {
		case key:
			return &t.slots[i].e
		case 0:
			return nil
		}
	}
}

// put adds key, which t does not hold, with entry e, and returns where
// its entry is. The caller keeps t.n below half of t.max.
func (t *table) put(key uint64, e entry) *entry {
	if 2*(t.n+1) > len(t.slots) && len(t.slots) < t.max {
		t.grow()
	}
	mask := len(t.slots) - 1
	i := t.home(key)
	for t.slots[i].key != 0 {
		i = (i + 1) & mask
	}
	t.slots[i] = slot{key: key, e: e}
	t.n++
	return &t.slots[i].e
}

// grow doubles t's slots.
func (t *table) grow() {
	old := t.slots
	t.slots = make([]slot, max(8, 2*len(old)))
	t.n = 0
	for _, s := range old {
		if s.key != 0 {
			t.put(s.key, s.e)
		}
	}
}

// del empties slot i, then moves back into the hole each entry after it
// whose probe passed through it (Knuth's algorithm R), so that every
// lookup still finds what it finds. Entries only move toward i, never
// past an empty slot.
func (t *table) del(i int) {
	mask := len(t.slots) - 1
	t.n--
	for {
		t.slots[i].key = 0
		j := i
		for {
			j = (j + 1) & mask
			k := t.slots[j].key
			if k == 0 {
				return
			}
			// The entry at j may fill the hole at i if its probe started
			// at or before i: no lookup of it passes an empty i then.
			if (j-t.home(k))&mask >= (j-i)&mask {
				t.slots[i] = t.slots[j]
				i = j
				break
			}
		}
	}
}

// sweep deletes every entry for which drop reports true; each entry is
// looked at once.
func (t *table) sweep(drop func(*entry) bool) {
	if t.n == 0 {
		return
	}
	mask := len(t.slots) - 1
	// Start after an empty slot (there is one: t is at most half full):
	// an entry del moves fills a slot not yet looked at, or the one being
	// looked at, which is looked at again.
	start := 0
	for t.slots[start].key != 0 {
		start++
	}
	for c := 1; c < len(t.slots); c++ {
		i := (start + c) & mask
		for t.slots[i].key != 0 && drop(&t.slots[i].e) {
			t.del(i)
		}
	}
}

// dropFrom deletes n entries, the first ones found from slot start on:
// since a slot is where a keyed hash falls, they are clients chosen at
// random.
func (t *table) dropFrom(start, n int) {
	mask := len(t.slots) - 1
	for i := start & mask; n > 0 && t.n > 0; {
		if t.slots[i].key == 0 {
			i = (i + 1) & mask
			continue
		}
		t.del(i) // another entry may move into i: it goes next
		n--
	}
}
