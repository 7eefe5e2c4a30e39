package unique

import (
	"sync"
	"time"
)

// DefaultMaxRepeats is how many recent (visitor, key) pairs a [Repeats]
// remembers by default: about 40 MB at most.
const DefaultMaxRepeats = 1 << 20

// Repeats remembers when each visitor last viewed each key, by the
// keyed hash [Counter.Hash] returns, to tell a repeat view within a
// window. It remembers at most a fixed number of pairs: when a part of
// its table is full it forgets the pairs older than the window, then, if
// none is, some chosen at random (their next view counts again). Since
// the hash's key changes with the UTC day, a window never spans
// midnight. A Repeats may be used concurrently.
type Repeats struct {
	window   time.Duration
	perShard int
	shards   [numShards]repeatShard
}

type repeatShard struct {
	mu sync.Mutex       // guards m
	m  map[uint64]int64 // hash -> Unix ns of the last view
	_  [48]byte
}

// NewRepeats returns a Repeats for window that remembers at most max
// pairs (<= 0: DefaultMaxRepeats).
func NewRepeats(window time.Duration, max int) *Repeats {
	if max <= 0 {
		max = DefaultMaxRepeats
	}
	r := &Repeats{window: window, perShard: (max + numShards - 1) / numShards}
	for i := range r.shards {
		r.shards[i].m = make(map[uint64]int64)
	}
	return r
}

// Seen records a view of pair h at now and reports whether the pair was

// Unsee takes back the view of pair h that Seen recorded at now, for a
// visit that was then refused (a full store, a spent budget of new
// keys): its retry is a first view again. A later view recorded since is
// left alone.
func (r *Repeats) Unsee(h uint64, now time.Time) {
	sh := &r.shards[h%numShards]
	sh.mu.Lock()
	if last, ok := sh.m[h]; ok && last == now.UnixNano() {
		delete(sh.m, h)
	}
	sh.mu.Unlock()
}

// viewed less than the window before.
func (r *Repeats) Seen(h uint64, now time.Time) bool {
	sh := &r.shards[h%numShards]
	t := now.UnixNano()
	sh.mu.Lock()
	defer sh.mu.Unlock()
	last, ok := sh.m[h]
	if ok && t-last < int64(r.window) && t >= last {
		return true // the first view of the window stays its start
	}
	if !ok && len(sh.m) >= r.perShard {
		r.evict(sh, t)
	}
	sh.m[h] = t
	return false
}

func (r *Repeats) evict(sh *repeatShard, t int64) {
	n := len(sh.m)
	for h, last := range sh.m {
		if t-last >= int64(r.window) {
			delete(sh.m, h)
		}
	}
	if len(sh.m) < n {
		return
	}
	victims := max(1, r.perShard/8)
	for h := range sh.m {
		delete(sh.m, h)
		if victims--; victims == 0 {
			return
		}
	}
}

// Len returns how many pairs r remembers.
func (r *Repeats) Len() int {
	n := 0
	for i := range r.shards {
		sh := &r.shards[i]
		sh.mu.Lock()
		n += len(sh.m)
		sh.mu.Unlock()
	}
	return n
}
