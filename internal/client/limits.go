package client

import (
	"fmt"
	"math"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/time/rate"
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

// Limit returns r as x/time/rate's events per second.
func (r Rate) Limit() rate.Limit {
	if r.Off() {
		return rate.Inf
	}
	return rate.Limit(r.Events / r.Per.Seconds())
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
// default: about 30 MB of limiter state at most.
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
type Limiter struct {
	o        LimiterOptions
	perShard int
	shards   [numShards]shard
}

type shard struct {
	mu sync.Mutex // guards m
	m  map[netip.Addr]*entry
	_  [40]byte // a cache line each
}

// entry is one client's buckets; nil when its rule is off.
type entry struct {
	visits  *rate.Limiter
	newKeys *rate.Limiter
}

// NewLimiter returns a Limiter for o.
func NewLimiter(o LimiterOptions) *Limiter {
	if o.MaxClients <= 0 {
		o.MaxClients = DefaultMaxClients
	}
	if o.Burst < 1 {
		o.Burst = 1
	}
	l := &Limiter{o: o, perShard: max(1, o.MaxClients/numShards)}
	for i := range l.shards {
		l.shards[i].m = make(map[netip.Addr]*entry)
	}
	return l
}

// newKeysBurst is the new-key bucket's size: the count per period.
func (l *Limiter) newKeysBurst() int { return max(1, int(l.o.NewKeys.Events)) }

func (l *Limiter) shardOf(id netip.Addr) *shard {
	b := id.As16()
	h := uint32(2166136261)
	for _, c := range b[8:] { // IPv6 identities differ in their /64; IPv4 in the last bytes
		h = (h ^ uint32(c)) * 16777619
	}
	for _, c := range b[:8] {
		h = (h ^ uint32(c)) * 16777619
	}
	return &l.shards[h%numShards]
}

// Visit takes a token from id's visit bucket at now and reports whether
// there was one: whether the visit may be counted. An exempt visit takes
// none and is allowed. Visit also reports whether id's new-key bucket
// holds a token now, without taking it. A nil Limiter allows everything.
func (l *Limiter) Visit(id netip.Addr, now time.Time, exempt bool) (allowed, mayCreate bool) {
	if l == nil || (l.o.Visits.Off() || exempt) && l.o.NewKeys.Off() {
		return true, true
	}
	sh := l.shardOf(id)
	sh.mu.Lock()
	e := l.lookup(sh, id, now)
	allowed, mayCreate = true, true
	if e.visits != nil && !exempt {
		allowed = e.visits.AllowN(now, 1)
	}
	if e.newKeys != nil {
		mayCreate = e.newKeys.TokensAt(now) >= 1
	}
	sh.mu.Unlock()
	return allowed, mayCreate
}

// Created takes a token from id's new-key bucket at now, for a key id
// just created. It reports false, and how long until a token is back,
// when the bucket was empty.
func (l *Limiter) Created(id netip.Addr, now time.Time) (ok bool, retry time.Duration) {
	if l == nil || l.o.NewKeys.Off() {
		return true, 0
	}
	sh := l.shardOf(id)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	e := l.lookup(sh, id, now)
	if e.newKeys.AllowN(now, 1) {
		return true, 0
	}
	return false, l.retry(e, now)
}

// CreateRefused returns how long id must wait until it may create a key.
func (l *Limiter) CreateRefused(id netip.Addr, now time.Time) time.Duration {
	if l == nil || l.o.NewKeys.Off() {
		return 0
	}
	sh := l.shardOf(id)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	return l.retry(l.lookup(sh, id, now), now)
}

func (l *Limiter) retry(e *entry, now time.Time) time.Duration {
	missing := 1 - e.newKeys.TokensAt(now)
	if missing <= 0 {
		return 0
	}
	return time.Duration(missing / float64(e.newKeys.Limit()) * float64(time.Second))
}

// lookup returns id's entry in sh, making room for it if needed.
// sh.mu must be held.
func (l *Limiter) lookup(sh *shard, id netip.Addr, now time.Time) *entry {
	if e := sh.m[id]; e != nil {
		return e
	}
	if len(sh.m) >= l.perShard {
		l.evict(sh, now)
	}
	e := &entry{}
	if !l.o.Visits.Off() {
		e.visits = rate.NewLimiter(l.o.Visits.Limit(), l.o.Burst)
		e.visits.SetLimitAt(now, l.o.Visits.Limit()) // start the clock at now, not at the zero time
	}
	if !l.o.NewKeys.Off() {
		e.newKeys = rate.NewLimiter(l.o.NewKeys.Limit(), l.newKeysBurst())
		e.newKeys.SetLimitAt(now, l.o.NewKeys.Limit())
	}
	sh.m[id] = e
	return e
}

// evict forgets the clients of sh whose buckets are full or, if none
// is, an eighth of its clients chosen at random, so that a flood of new
// clients pays for a sweep once per many arrivals. sh.mu must be held.
func (l *Limiter) evict(sh *shard, now time.Time) {
	n := len(sh.m)
	for id, e := range sh.m {
		if (e.visits == nil || e.visits.TokensAt(now) >= float64(l.o.Burst)) &&
			(e.newKeys == nil || e.newKeys.TokensAt(now) >= float64(l.newKeysBurst())) {
			delete(sh.m, id)
		}
	}
	if len(sh.m) < n {
		return
	}
	victims := max(1, l.perShard/8)
	for id := range sh.m { // map order is random
		delete(sh.m, id)
		if victims--; victims == 0 {
			return
		}
	}
}

// Len returns how many clients l remembers.
func (l *Limiter) Len() int {
	n := 0
	for i := range l.shards {
		sh := &l.shards[i]
		sh.mu.Lock()
		n += len(sh.m)
		sh.mu.Unlock()
	}
	return n
}

// Cap returns the most clients l remembers.
func (l *Limiter) Cap() int { return l.perShard * numShards }
