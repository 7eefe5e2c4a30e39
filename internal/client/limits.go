package client

import (
	"fmt"
	"hash/maphash"
	"math"
	"math/rand/v2"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Rate is how many events are allowed per period, as a flag gives it:
// "10/s", "100/h", "2.5/m". The zero Rate, "0", is off: no limit. With
// String and Set, *Rate is a flag.Value.
type Rate struct {
	Events float64
	Per    time.Duration
}

// Off reports whether r sets no limit.
func (r Rate) Off() bool { return r.Events == 0 }

// PerSecond returns r in events per second; +Inf when r is off.
func (r Rate) PerSecond() float64 {
	if r.Off() {
		return math.Inf(1)
	}
	return r.Events / r.Per.Seconds()
}

// String returns r as Set takes it.
func (r *Rate) String() string {
	if r == nil || r.Off() {
		return "0"
	}
	unit := map[time.Duration]string{time.Second: "s", time.Minute: "m", time.Hour: "h", 24 * time.Hour: "d"}[r.Per]
	return strconv.FormatFloat(r.Events, 'f', -1, 64) + "/" + unit
}

// Set parses "N/s", "N/m", "N/h" or "N/d" with N a positive number, or
// "0" for no limit.
func (r *Rate) Set(s string) error {
	if s == "0" {
		*r = Rate{}
		return nil
	}
	n, unit, ok := strings.Cut(s, "/")
	per := map[string]time.Duration{"s": time.Second, "m": time.Minute, "h": time.Hour, "d": 24 * time.Hour}[unit]
	v, err := strconv.ParseFloat(n, 64)
	if !ok || per == 0 || err != nil || !(v > 0) || math.IsInf(v, 0) || v > 1e9 {
		return fmt.Errorf("rate %q: want N/s, N/m, N/h or N/d with N a positive number, or 0 for no limit", s)
	}
	*r = Rate{Events: v, Per: per}
	return nil
}

// DefaultMaxClients is how many clients a [Limiter] remembers by
// default: 10.5 MB of limiter state at most (64 tables of 4,096 slots, an
// 8-byte key and a 32-byte entry each, at most half full: see table).
const DefaultMaxClients = 100_000

// numShards spreads clients over locks, so that requests from different
// clients rarely wait for each other.
const numShards = 64

// LimiterOptions configure [NewLimiter].
type LimiterOptions struct {
	Visits     Rate // counted visits per client; Off: unlimited
	Burst      int  // how many visits a client may make at once
	NewKeys    Rate // keys a client may create; Off: unlimited. Its burst is its count per period.
	MaxClients int  // clients remembered; <= 0 means DefaultMaxClients
}

// Limiter keeps, per client identity, a token bucket of counted visits
// and one of new keys. It remembers at most MaxClients clients: when a
// part of its table is full, it forgets first the clients whose buckets
// are full again (a full bucket is what a new client gets, so forgetting
// it changes nothing), then, if every remembered client is active, some
// chosen at random. A Limiter may be used concurrently.
//
// Each part of the table is an open-addressed array of slots with no
// pointers (see table): a new client allocates nothing, and the garbage
// collector never scans the table. The buckets are two numbers each
// under the lock of their part of the table: golang.org/x/time/rate's
// Limiter, tried first, took 220 ns per visit for the two buckets (its
// own mutex and time.Time arithmetic each), a fifth of what the rules
// add to a counted badge (docs/performance.md).
type Limiter struct {
	o        LimiterOptions
	visits   bucketRate
	newKeys  bucketRate
	perShard int
	seed     maphash.Seed
	shards   [numShards]shard
}

// shard holds its clients by their identity's maphash: one hash picks
// the shard and keys the table. The seed is random per process, so no
// client can aim a collision with another's bucket.
type shard struct {
	mu sync.Mutex // guards t
	t  table
	_  [16]byte // a cache line each
}

// bucketRate is a bucket's refill and size; per is 0 when its rule is off.
type bucketRate struct {
	events float64 // tokens per period
	period float64 // in nanoseconds
	size   float64 // the burst
}

// bucket is a token bucket: tokens as of last (Unix ns).
type bucket struct {
	tokens float64
	last   int64
}

// fill returns b's tokens at now without changing b.
func (b *bucket) fill(r bucketRate, now int64) float64 {
	if r.period == 0 { // the rule is off
		return r.size
	}
	if now <= b.last {
		return b.tokens
	}
	return min(r.size, b.tokens+float64(now-b.last)*r.events/r.period)
}

// take takes a token from b at now and reports whether there was one.
func (b *bucket) take(r bucketRate, now int64) bool {
	t := b.fill(r, now)
	b.last = max(b.last, now)
	if t < 1 {
		b.tokens = t
		return false
	}
	b.tokens = t - 1
	return true
}

// entry is one client's buckets.
type entry struct {
	visits  bucket
	newKeys bucket
}

// NewLimiter returns a Limiter for o.
func NewLimiter(o LimiterOptions) *Limiter {
	if o.MaxClients <= 0 {
		o.MaxClients = DefaultMaxClients
	}
	if o.Burst < 1 {
		o.Burst = 1
	}
	l := &Limiter{o: o, perShard: max(1, o.MaxClients/numShards), seed: maphash.MakeSeed()}
	if !o.Visits.Off() {
		l.visits = bucketRate{events: o.Visits.Events, period: float64(o.Visits.Per), size: float64(o.Burst)}
	}
	if !o.NewKeys.Off() {
		l.newKeys = bucketRate{events: o.NewKeys.Events, period: float64(o.NewKeys.Per), size: float64(max(1, int(o.NewKeys.Events)))}
	}
	for i := range l.shards {
		l.shards[i].t = newTable(l.perShard)
	}
	return l
}

// shardOf returns id's shard and key in it.
func (l *Limiter) shardOf(id netip.Addr) (*shard, uint64) {
	return l.shardOfHash(maphash.Comparable(l.seed, id))
}

// shardOfHash returns the shard and key of a client whose maphash is h.
func (l *Limiter) shardOfHash(h uint64) (*shard, uint64) {
	if h == 0 { // 0 marks an empty slot; numShards is in the same shard
		h = numShards
	}
	return &l.shards[h%numShards], h
}

// Visit takes a token from id's visit bucket at now and reports whether
// there was one: whether the visit may be counted. An exempt visit takes
// none and is allowed. Visit also reports whether id's new-key bucket
// holds a token now, without taking it. A nil Limiter allows everything.
func (l *Limiter) Visit(id netip.Addr, now time.Time, exempt bool) (allowed, mayCreate bool) {
	if l == nil || (l.o.Visits.Off() || exempt) && l.o.NewKeys.Off() {
		return true, true
	}
	t := now.UnixNano()
	sh, key := l.shardOf(id)
	sh.mu.Lock()
	e := l.lookup(sh, key, t)
	allowed, mayCreate = true, true
	if !l.o.Visits.Off() && !exempt {
		allowed = e.visits.take(l.visits, t)
	}
	if !l.o.NewKeys.Off() {
		mayCreate = e.newKeys.fill(l.newKeys, t) >= 1
	}
	sh.mu.Unlock()
	return allowed, mayCreate
}

// VisitKey is [Limiter.Visit] for a bucket named by key rather than by
// a client's address, such as a counter's key: it takes a token from
// key's visit bucket at now and reports whether there was one. The
// new-key bucket is not looked at. A nil Limiter allows everything.
// VisitKey allocates nothing.
func (l *Limiter) VisitKey(key []byte, now time.Time) bool {
	if l == nil || l.o.Visits.Off() {
		return true
	}
	t := now.UnixNano()
	sh, k := l.shardOfHash(maphash.Bytes(l.seed, key))
	sh.mu.Lock()
	allowed := l.lookup(sh, k, t).visits.take(l.visits, t)
	sh.mu.Unlock()
	return allowed
}

// Created takes a token from id's new-key bucket at now, for a key id
// just created. It reports false, and how long until a token is back,
// when the bucket was empty.
func (l *Limiter) Created(id netip.Addr, now time.Time) (ok bool, retry time.Duration) {
	if l == nil || l.o.NewKeys.Off() {
		return true, 0
	}
	t := now.UnixNano()
	sh, key := l.shardOf(id)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	e := l.lookup(sh, key, t)
	if e.newKeys.take(l.newKeys, t) {
		return true, 0
	}
	return false, l.retry(e, t)
}

// Uncreated gives back the token [Limiter.Created] took at now for a
// key id did not make after all (it was there already), so that a
// client who takes its token before the store answers spends it only on
// a key it made. The bucket never holds more than its burst.
func (l *Limiter) Uncreated(id netip.Addr, now time.Time) {
	if l == nil || l.o.NewKeys.Off() {
		return
	}
	t := now.UnixNano()
	sh, key := l.shardOf(id)
	sh.mu.Lock()
	e := l.lookup(sh, key, t)
	e.newKeys.tokens = min(l.newKeys.size, e.newKeys.fill(l.newKeys, t)+1)
	e.newKeys.last = max(e.newKeys.last, t)
	sh.mu.Unlock()
}

// CreateRefused returns how long id must wait until it may create a key.
func (l *Limiter) CreateRefused(id netip.Addr, now time.Time) time.Duration {
	if l == nil || l.o.NewKeys.Off() {
		return 0
	}
	t := now.UnixNano()
	sh, key := l.shardOf(id)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	return l.retry(l.lookup(sh, key, t), t)
}

func (l *Limiter) retry(e *entry, now int64) time.Duration {
	missing := 1 - e.newKeys.fill(l.newKeys, now)
	if missing <= 0 {
		return 0
	}
	return time.Duration(math.Ceil(missing * l.newKeys.period / l.newKeys.events))
}

// lookup returns id's entry in sh, making room for it if needed.
// sh.mu must be held.
func (l *Limiter) lookup(sh *shard, key uint64, now int64) *entry {
	if e := sh.t.get(key); e != nil {
		return e
	}
	if sh.t.n >= l.perShard {
		l.evict(sh, now)
	}
	return sh.t.put(key, entry{visits: bucket{tokens: l.visits.size, last: now}, newKeys: bucket{tokens: l.newKeys.size, last: now}})
}

// idle reports whether e's buckets are full: e is what a new client gets.
func (l *Limiter) idle(e *entry, now int64) bool {
	return e.visits.fill(l.visits, now) >= l.visits.size && e.newKeys.fill(l.newKeys, now) >= l.newKeys.size
}

// evict forgets the clients of sh whose buckets are full or, if none
// is, an eighth of its clients chosen at random, so that a flood of new
// clients pays for a sweep once per many arrivals. sh.mu must be held.
func (l *Limiter) evict(sh *shard, now int64) {
	n := sh.t.n
	sh.t.sweep(func(e *entry) bool { return l.idle(e, now) })
	if sh.t.n < n {
		return
	}
	sh.t.dropFrom(int(rand.Uint64()), max(1, l.perShard/8))
}

// Len returns how many clients l remembers.
func (l *Limiter) Len() int {
	n := 0
	for i := range l.shards {
		sh := &l.shards[i]
		sh.mu.Lock()
		n += sh.t.n
		sh.mu.Unlock()
	}
	return n
}

// Cap returns the most clients l remembers.
func (l *Limiter) Cap() int { return l.perShard * numShards }
