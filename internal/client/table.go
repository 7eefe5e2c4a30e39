package client

// table holds a part of a [Limiter]'s clients by the hash of their
// identity: open addressing with linear probing, at most half full, and
// backward-shift deletion (no tombstones, so a lookup of a new client
// stops at the first empty slot however many clients came and went).
// The keys are a slice of their own, 8 bytes a slot: a lookup of a new
// client, the common case under a flood of them, reads 2 MB of keys over
// all the shards rather than 10 MB of slots, and only writes an entry.
//
// It holds no pointers: a new client is a slot written, not an object
// allocated, and the garbage collector never scans a table. Under a
// flood of new clients (each request from a new address) the maps of
// pointers it replaced allocated an entry per client and kept 100,000
// pointers for every GC cycle to mark, and their deleted slots made
// every lookup of a new client probe further (docs/performance.md).
type table struct {
	keys    []uint64 // 0 marks an empty slot; len is a power of two, or 0 before the first client
	entries []entry  // entries[i] is the client of keys[i]
	n       int      // clients held
	max     int      // most slots: the table never grows past it
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
func (t *table) home(key uint64) int { return int(key>>32) & (len(t.keys) - 1) }

// get returns key's entry, or nil.
func (t *table) get(key uint64) *entry {
	if len(t.keys) == 0 {
		return nil
	}
	mask := len(t.keys) - 1
	for i := t.home(key); ; i = (i + 1) & mask {
		switch t.keys[i] {
		case key:
			return &t.entries[i]
		case 0:
			return nil
		}
	}
}

// put adds key, which t does not hold, with entry e, and returns where
// its entry is. The caller keeps t.n below half of t.max.
func (t *table) put(key uint64, e entry) *entry {
	if 2*(t.n+1) > len(t.keys) && len(t.keys) < t.max {
		t.grow()
	}
	mask := len(t.keys) - 1
	i := t.home(key)
	for t.keys[i] != 0 {
		i = (i + 1) & mask
	}
	t.keys[i], t.entries[i] = key, e
	t.n++
	return &t.entries[i]
}

// grow doubles t's slots.
func (t *table) grow() {
	keys, entries := t.keys, t.entries
	size := max(8, 2*len(keys))
	t.keys, t.entries, t.n = make([]uint64, size), make([]entry, size), 0
	for i, k := range keys {
		if k != 0 {
			t.put(k, entries[i])
		}
	}
}

// del empties slot i, then moves back into the hole each entry after it
// whose probe passed through it (Knuth's algorithm R), so that every
// lookup still finds what it finds. Entries only move toward i, never
// past an empty slot.
func (t *table) del(i int) {
	mask := len(t.keys) - 1
	t.n--
	for {
		t.keys[i] = 0
		j := i
		for {
			j = (j + 1) & mask
			k := t.keys[j]
			if k == 0 {
				return
			}
			// The entry at j may fill the hole at i if its probe started
			// at or before i: no lookup of it passes an empty i then.
			if (j-t.home(k))&mask >= (j-i)&mask {
				t.keys[i], t.entries[i] = k, t.entries[j]
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
	mask := len(t.keys) - 1
	// Start after an empty slot (there is one: t is at most half full):
	// an entry del moves fills a slot not yet looked at, or the one being
	// looked at, which is looked at again.
	start := 0
	for t.keys[start] != 0 {
		start++
	}
	for c := 1; c < len(t.keys); c++ {
		i := (start + c) & mask
		for t.keys[i] != 0 && drop(&t.entries[i]) {
			t.del(i)
		}
	}
}

// dropFrom deletes n entries, the first ones found from slot start on:
// since a slot is where a keyed hash falls, they are clients chosen at
// random.
func (t *table) dropFrom(start, n int) {
	mask := len(t.keys) - 1
	for i := start & mask; n > 0 && t.n > 0; {
		if t.keys[i] == 0 {
			i = (i + 1) & mask
			continue
		}
		t.del(i) // another entry may move into i: it goes next
		n--
	}
}
