package redisstore

import (
	"context"
	"crypto/rand"
	_ "embed"
	"encoding/binary"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/redis/rueidis"

	"visitors/internal/store"
)

// Unique visitors (store.Uniques): every instance counts into one Redis
// HyperLogLog per counter and UTC day, P{k<hex>}u<day>, in the counter's
// slot, with the TTL of a day's count (DayTTL). Redis's HyperLogLog has
// 16,384 registers, a standard error of 0.81%. A visitor reaches Redis
// only as the 8 bytes of its keyed hash (internal/unique); PFADD keeps
// register maxima, not the hashes.
//
// The day's hash key comes from a random seed every instance shares,
// P{seed}<day>: the first instance to ask makes it (SET NX) with an
// expiry an hour past the day's end (SeedGrace), and every instance
// derives the same key from it. So the same visitor is the same hash on
// every instance and after every restart, for that day only.
//
// Visits never wait for Redis: AddUnique appends the hash to its
// counter's day in memory, and the flusher sends what was added, after
// each round of counts, as one script (lua/uniques.lua) per group of
// slots that PFADDs and answers each HyperLogLog's PFCOUNT. PFADD is
// idempotent, so a script whose answer was lost is simply sent again.
// An instance shows Redis's count as of its last round plus the
// visitors it has not yet sent, each once: a visitor Redis already had
// (through another instance, or this one earlier in the day) shows one
// too many until the next round, at most one flush interval.
//
// Set keeps a counter's HyperLogLogs, Delete deletes them, as the
// embedded store does with its sketches; export does not carry them.

// SeedGrace is how long after the end of its day a day's shared seed
// stays in Redis (seconds): instances whose clocks differ by less still
// derive the same key for the day's last visits.
const SeedGrace = 3600

const uniqueSuffix = "u"

//go:embed lua/uniques.lua
var uniquesSrc string

var uniquesSHA = sha(uniquesSrc)

var _ store.Uniques = (*Store)(nil)

// uniqueKey returns the name of a counter's HyperLogLog of day d.
func uniqueKey(tag string, d store.Day) string {
	return tag + uniqueSuffix + strconv.FormatUint(uint64(d), 10)
}

// seedKey returns the name of day d's shared seed.
func (n names) seedKey(d store.Day) string {
	return n.prefix + "{seed}" + strconv.FormatUint(uint64(d), 10)
}

// uniqueTag returns the tag of a counter's HyperLogLog name, or "" if
// name is not one.
func uniqueTag(name string) string {
	i := strings.LastIndexByte(name, '}')
	if i < 0 || !strings.HasPrefix(name[i+1:], uniqueSuffix) {
		return ""
	}
	if _, err := strconv.ParseUint(name[i+1+len(uniqueSuffix):], 10, 32); err != nil {
		return ""
	}
	return name[:i+1]
}

// uniqueNames returns the names of key's HyperLogLogs of every day Redis
// may hold around today, for Delete.
func (s *Store) uniqueNames(key []byte, today store.Day) []string {
	tag := s.n.tag(key)
	out := make([]string, 0, DayTTL/86400+3)
	for d := today - DayTTL/86400; d <= today+2; d++ {
		out = append(out, uniqueKey(tag, d))
	}
	return out
}

// uniques is what a store holds of its unique visitors.
type uniques struct {
	mu   sync.Mutex // guards days
	days []*uniqDay // by day; the last is the newest
	cur  atomic.Pointer[uniqDay]

	dirtyMu sync.Mutex // guards dirty
	dirty   []*uniq    // counters added to or read since the last round

	rounds  atomic.Uint64 // unique rounds taken; written by the flusher
	work    []*uniq       // owned by the flusher
	failing bool          // owned by the flusher: the last send failed
	held    atomic.Int64  // visitors in pend or flight, at most Options.MaxPendingUniques
	dropped atomic.Uint64 // visitors not counted: held was at its bound
	logged  uint64        // owned by the flusher: dropped, as last logged
}

// uniqDay is the counters of one day this instance has seen.
type uniqDay struct {
	day  store.Day
	recs sync.Map // string -> *uniq
}

// uniq is one counter's unique visitors of one day, as this instance
// knows them.
type uniq struct {
	key, tag string
	day      store.Day
	group    uint16

	mu     sync.Mutex          // guards the fields below
	count  uint64              // Redis's PFCOUNT, as of the last read
	known  bool                // count was read
	fresh  uint64              // the unique round of that read
	reads  uint64              // how many times count was read
	pend   []uint64            // visitors not yet sent, each once
	set    map[uint64]struct{} // pend as a set, once it has more than a few
	flight []uint64            // visitors sent, not yet answered
	send   int                 // how many of flight the round on the wire carries
	queued bool                // in dirty
	added  bool                // a visitor was added: the counter lives the day
	last   uint64              // the unique round that last took it
	dead   bool                // out of its day's map: a new one replaces it
	floor  uint64              // the most this instance answered: it never answers less
}

// shown returns what u shows: Redis's count plus what is not yet sent,
// and never less than it showed before. u.mu must be held.
func (u *uniq) shown() uint64 {
	return u.atLeastShown(u.count)
}

// atLeastShown returns count, a count Redis answered, plus what is not
// yet sent, or what u showed before if that is more. A visitor this
// instance has not sent yet may be in Redis's count already, sent by
// another instance: the sum counts it twice until this instance's round,
// which the count would then go back from. So each uniq keeps the most
// it showed, until its key is deleted (a new uniq) or its day ends; a
// uniq that showed more than Redis's count is not swept meanwhile.
// u.mu must be held.
func (u *uniq) atLeastShown(count uint64) uint64 {
	n := count + uint64(len(u.pend)+len(u.flight))
	if n < u.floor {
		return u.floor
	}
	u.floor = n
	return n
}

// sendMax is how many unique visitors one round carries at most, all
// groups together: a script of 2^20 (MaxPendingUniques' default, a
// backlog after an outage) outlasted a 2 s Timeout, failed, and was sent
// again for good. 50,000 take Redis about 0.1 s; the rest go with the
// next rounds.
const sendMax = 50_000

// pendScan is how many visitors not yet answered a uniq scans for a
// repeat; past it, it keeps them in a set too.
const pendScan = 16

// has reports whether v is among u's visitors not yet answered (not yet
// sent, or in flight: a round that failed sends them again), and if
// not, takes it in its set (the caller appends it to pend). u.mu must be
// held.
func (u *uniq) has(v uint64) bool {
	if u.set == nil && len(u.pend)+len(u.flight) < pendScan {
		return slices.Contains(u.pend, v) || slices.Contains(u.flight, v)
	}
	if u.set == nil {
		u.set = make(map[uint64]struct{}, 4*pendScan)
	}
	if len(u.set) == 0 {
		for _, p := range u.pend {
			u.set[p] = struct{}{}
		}
		for _, p := range u.flight {
			u.set[p] = struct{}{}
		}
	}
	if _, ok := u.set[v]; ok {
		return true
	}
	u.set[v] = struct{}{}
	return false
}

// day returns the uniqDay of d, making it if needed.
func (q *uniques) day(d store.Day) *uniqDay {
	if c := q.cur.Load(); c != nil && c.day == d {
		return c
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	for _, ud := range q.days {
		if ud.day == d {
			return ud
		}
	}
	ud := &uniqDay{day: d}
	q.days = append(q.days, ud)
	slices.SortFunc(q.days, func(a, b *uniqDay) int { return int(a.day) - int(b.day) })
	q.cur.Store(q.days[len(q.days)-1])
	return ud
}

// load returns key's uniq of d, or nil. The key is viewed as a string
// without a copy.
func (q *uniques) load(key []byte, d store.Day) *uniq {
	if v, ok := q.day(d).recs.Load(unsafe.String(unsafe.SliceData(key), len(key))); ok {
		return v.(*uniq)
	}
	return nil
}

// loadOrNew returns key's uniq of d, making it if needed.
func (s *Store) loadOrNewUniq(key []byte, d store.Day) *uniq {
	if u := s.uq.load(key, d); u != nil {
		return u
	}
	tag := s.n.tag(key)
	u := &uniq{key: string(key), tag: tag, day: d, group: s.groupOf(tag)}
	v, _ := s.uq.day(d).recs.LoadOrStore(u.key, u)
	return v.(*uniq)
}

// queue puts u in the next round, if it is not; u.mu must be held.
func (s *Store) queueUniq(u *uniq) {
	if u.queued {
		return
	}
	u.queued = true
	s.uq.dirtyMu.Lock()
	s.uq.dirty = append(s.uq.dirty, u)
	s.uq.dirtyMu.Unlock()
}

// DaySeed implements [store.Uniques]: SET NX of a random seed, expiring
// SeedGrace after the day's end by the store's clock (at least a second
// from now: a seed asked for after that is still made, and shared for
// that second), then GET, in one round trip.
func (s *Store) DaySeed(ctx context.Context, d store.Day) ([32]byte, error) {
	var seed [32]byte
	if _, err := rand.Read(seed[:]); err != nil {
		return seed, err
	}
	ctx, cancel := context.WithTimeout(ctx, s.o.Timeout)
	defer cancel()
	name := s.n.seedKey(d)
	ttl := max((int64(d)+1)*86400+SeedGrace-s.cal.Now().Unix(), 1)
	res := s.c.DoMulti(ctx,
		s.c.B().Set().Key(name).Value(string(seed[:])).Nx().ExSeconds(ttl).Build(),
		s.c.B().Get().Key(name).Build())
	v, err := res[1].ToString()
	if err == nil {
		err = res[0].NonRedisError()
	}
	if err != nil {
		s.stats.errors[errSeed].Add(1)
		return seed, fmt.Errorf("redis: the day's unique-visitor seed: %w: %w", ErrUnavailable, err)
	}
	if len(v) != len(seed) {
		return seed, fmt.Errorf("redis: the day's unique-visitor seed %s is %d bytes, want %d", name, len(v), len(seed))
	}
	copy(seed[:], v)
	return seed, nil
}

// AddUnique implements [store.Uniques]. It touches only memory; a
// visitor already among those not yet answered is not added again, and
// while Options.MaxPendingUniques are held (Redis does not answer) a new
// one is dropped: it counts if it comes back once Redis answers.
func (s *Store) AddUnique(key []byte, d store.Day, v uint64) {
	for {
		u := s.loadOrNewUniq(key, d)
		u.mu.Lock()
		if u.dead {
			u.mu.Unlock()
			continue
		}
		if u.has(v) {
			u.mu.Unlock()
			return
		}
		if s.uq.held.Add(1) > int64(s.o.MaxPendingUniques) {
			s.uq.held.Add(-1)
			delete(u.set, v)
			s.uq.dropped.Add(1)
			u.mu.Unlock()
			return
		}
		u.pend = append(u.pend, v)
		u.added = true
		s.queueUniq(u)
		u.mu.Unlock()
		return
	}
}

// UniqueToday implements [store.Uniques]. A counter this instance has
// visitors of not yet answered, or has read in the last two rounds, is
// answered from memory (and read again by the next round); any other
// costs one PFCOUNT: the first read of the day on this instance, or a
// read after a pause.
func (s *Store) UniqueToday(ctx context.Context, key []byte, d store.Day) (uint64, error) {
	if len(key) > store.MaxKeyBytes {
		return 0, store.ErrKeyTooLong
	}
	var reads uint64
	held := false
	if u := s.uq.load(key, d); u != nil {
		held = true
		u.mu.Lock()
		// With visitors not yet answered, the next round reads the count
		// again anyway: a visit never waits for Redis (as a Batch visit does not).
		if u.known && !u.dead && (len(u.pend)+len(u.flight) > 0 || s.uq.rounds.Load() <= u.fresh+2) {
			n := u.shown()
			s.queueUniq(u)
			u.mu.Unlock()
			return n, nil
		}
		reads = u.reads
		u.mu.Unlock()
	}
	if herr := s.Health(); herr != nil {
		// Redis is known not to answer (a round, or the check between
		// rounds, failed): a visit does not wait for it, and shows what
		// this instance holds; the next round that is answered reads it.
		if u := s.uq.load(key, d); u != nil {
			u.mu.Lock()
			n := u.shown()
			if !u.dead {
				s.queueUniq(u)
			}
			u.mu.Unlock()
			return n, nil
		}
		return 0, fmt.Errorf("redis: unique visitors: %w: %w", ErrUnavailable, herr)
	}
	// No round of unique visitors is on the wire meanwhile, so visitors
	// in flight are ones not sent yet (or whose round failed): Redis's
	// count does not hold them.
	s.roundMu.RLock()
	defer s.roundMu.RUnlock()
	ctx, cancel := context.WithTimeout(ctx, s.o.Timeout)
	defer cancel()
	n, err := s.c.Do(ctx, s.c.B().Pfcount().Key(uniqueKey(s.n.tag(key), d)).Build()).AsUint64()
	if err != nil {
		s.stats.errors[errRead].Add(1)
		return 0, fmt.Errorf("redis: unique visitors: %w: %w", ErrUnavailable, err)
	}
	if n == 0 && !held && s.uq.load(key, d) == nil {
		return 0, nil // nothing to keep: reads of counters no one visited today make no memory grow
	}
	for {
		u := s.loadOrNewUniq(key, d)
		u.mu.Lock()
		if u.dead {
			u.mu.Unlock()
			continue
		}
		// A round that answered before the lock read a later count.
		if !u.known || u.reads == reads {
			u.count, u.known, u.fresh = n, true, s.uq.rounds.Load()
			u.reads++
		}
		n = u.shown()
		s.queueUniq(u)
		u.mu.Unlock()
		return n, nil
	}
}

// UniqueDays implements [store.Uniques]: one PFCOUNT per day, pipelined
// (the names share the counter's slot); the last day, if this instance
// holds visitors of it not yet sent, shows them too.
func (s *Store) UniqueDays(ctx context.Context, key []byte, last store.Day, n int) ([]uint64, error) {
	if len(key) > store.MaxKeyBytes {
		return nil, store.ErrKeyTooLong
	}
	if n < 1 || n > store.MaxDays {
		return nil, fmt.Errorf("unique days: n = %d, want 1..%d", n, store.MaxDays)
	}
	tag := s.n.tag(key)
	cmds := make(rueidis.Commands, n)
	for i := range n {
		cmds[i] = s.c.B().Pfcount().Key(uniqueKey(tag, last-store.Day(n-1-i))).Build()
	}
	ctx, cancel := context.WithTimeout(ctx, s.o.Timeout)
	defer cancel()
	out := make([]uint64, n)
	for i, r := range s.c.DoMulti(ctx, cmds...) {
		v, err := r.AsUint64()
		if err != nil {
			s.stats.errors[errRead].Add(1)
			return nil, fmt.Errorf("redis: unique visitors per day: %w: %w", ErrUnavailable, err)
		}
		out[i] = v
	}
	if u := s.uq.load(key, last); u != nil {
		u.mu.Lock()
		if !u.dead { // not u.floor's: a round may be on the wire, and the count hold its visitors
			out[n-1] = max(out[n-1]+uint64(len(u.pend)+len(u.flight)), u.floor)
		}
		u.mu.Unlock()
	}
	return out, nil
}

// forgetUniques drops what this instance holds of key's unique visitors,
// for Delete: the visitors not yet sent were visitors of the deleted
// counter.
func (s *Store) forgetUniques(key []byte) {
	s.uq.mu.Lock()
	days := slices.Clone(s.uq.days)
	s.uq.mu.Unlock()
	for _, ud := range days {
		if v, ok := ud.recs.Load(string(key)); ok {
			u := v.(*uniq)
			u.mu.Lock()
			u.dead = true
			s.uq.held.Add(-int64(len(u.pend) + len(u.flight)))
			u.pend, u.flight = nil, nil
			ud.recs.CompareAndDelete(u.key, u)
			u.mu.Unlock()
		}
	}
}

// takeUniques takes the counters added to or read since the last round:
// their visitors not yet sent go in flight. The flusher calls it before
// the round of counts, so every visitor it takes belongs to a visit that
// round carries (or an earlier one): the counter exists in Redis when
// the visitors arrive.
func (s *Store) takeUniques() []*uniq {
	s.uq.dirtyMu.Lock()
	work := s.uq.dirty
	s.uq.dirty = s.uq.work[:0]
	s.uq.dirtyMu.Unlock()
	round := s.uq.rounds.Add(1)
	for _, u := range work {
		u.mu.Lock()
		u.queued = false
		u.flight = append(u.flight, u.pend...) // a failed round's stay: PFADD again is harmless
		u.pend = u.pend[:0]                    // u.set still holds them, in flight
		u.last = round
		u.mu.Unlock()
	}
	return work
}

// sendUniques sends what takeUniques took: one script per group of
// slots, pipelined, and takes in each counter's PFCOUNT. A group whose
// answer does not come is taken again by the next round.
func (s *Store) sendUniques(work []*uniq) error {
	defer func() {
		clear(work)
		s.uq.work = work[:0]
		if s.uq.rounds.Load()%64 == 0 {
			s.sweepUniques()
		}
	}()
	if len(work) == 0 {
		return nil
	}
	// Like a round of counts, no owner's operation runs meanwhile: a
	// Delete forgets the visitors of its key before or after the send.
	s.roundMu.Lock()
	defer s.roundMu.Unlock()
	slices.SortFunc(work, func(a, b *uniq) int { return int(a.group) - int(b.group) })
	now := s.cal.Now()
	var scripts []script
	var groups [][]*uniq
	budget := sendMax
	for i := 0; i < len(work); {
		j := i + 1
		for j < len(work) && work[j].group == work[i].group {
			j++
		}
		var keys, args []string
		var b []byte
		for _, u := range work[i:j] {
			keys = append(keys, uniqueKey(u.tag, u.day), total(u.tag))
			u.mu.Lock()
			u.send = min(len(u.flight), budget)
			budget -= u.send
			args = append(args, strconv.FormatInt(dayTTL(u.day, now), 10), strconv.Itoa(u.send))
			b = b[:0]
			for _, v := range u.flight[:u.send] {
				b = binary.LittleEndian.AppendUint64(b, v)
			}
			u.mu.Unlock()
			for k := 0; k < len(b); k += 8 {
				args = append(args, string(b[k:k+8]))
			}
		}
		scripts = append(scripts, script{src: uniquesSrc, sha: uniquesSHA, keys: keys, args: args})
		groups = append(groups, work[i:j])
		i = j
	}
	s.stats.uniqueCommands.Add(uint64(len(scripts)))
	ctx, cancel := context.WithTimeout(context.Background(), s.o.Timeout)
	defer cancel()
	start := time.Now()
	res := s.doScripts(ctx, scripts)
	var first error
	defer func() { s.observe(Uniques, time.Since(start), first) }()
	for i, r := range res {
		vals, err := r.AsIntSlice()
		if err == nil && len(vals) != len(groups[i]) {
			err = fmt.Errorf("uniques script: %d values, want %d", len(vals), len(groups[i]))
		}
		for j, u := range groups[i] {
			u.mu.Lock()
			if err != nil {
				if !u.dead {
					s.queueUniq(u) // sent again with the next round
				}
			} else {
				u.count, u.known, u.fresh = uint64(vals[j]), true, s.uq.rounds.Load()
				u.reads++
				if u.send == len(u.flight) {
					clear(u.set) // its buckets stay for the next interval
				} else {
					for _, v := range u.flight[:u.send] {
						delete(u.set, v)
					}
				}
				s.uq.held.Add(-int64(u.send))
				u.flight = append(u.flight[:0], u.flight[u.send:]...)
				if len(u.flight) > 0 && !u.dead {
					s.queueUniq(u) // the rest goes with the next round
				}
			}
			u.send = 0
			u.mu.Unlock()
		}
		if err != nil {
			s.stats.errors[errUniques].Add(1)
			if first == nil {
				first = fmt.Errorf("redis: send unique visitors: %w", err)
			}
		}
	}
	if d := s.uq.dropped.Load(); d != s.uq.logged {
		s.o.Log.Error().Uint64("dropped", d-s.uq.logged).Int("max_pending", s.o.MaxPendingUniques).
			Msg("redis: unique visitors not counted: too many were waiting for Redis")
		s.uq.logged = d
	}
	if first == nil {
		if s.uq.failing {
			s.uq.failing = false
			s.o.Log.Info().Msg("redis: unique visitors are sent again")
		}
	} else if !s.uq.failing {
		s.uq.failing = true
		s.o.Log.Error().Err(first).Msg("redis: unique visitors could not be sent; they are kept and sent again")
	}
	return first
}

// sweepUniques forgets, of the counters that hold nothing unsent, those
// of an earlier day and those only read (never added to) that no round
// took lately; then the days before yesterday once empty. A counter
// added to lives the day, as an entry of counts lives the process: its
// next visit does not wait for Redis.
func (s *Store) sweepUniques() {
	s.uq.mu.Lock()
	days := slices.Clone(s.uq.days)
	s.uq.mu.Unlock()
	today := s.cal.Today()
	round := s.uq.rounds.Load()
	for _, ud := range days {
		left := 0
		ud.recs.Range(func(_, v any) bool {
			u := v.(*uniq)
			u.mu.Lock()
			if !u.queued && len(u.pend)+len(u.flight) == 0 && (ud.day < today || !u.added && u.last+2 < round && u.floor <= u.count) {
				u.dead = true
				ud.recs.CompareAndDelete(u.key, u)
			} else {
				left++
			}
			u.mu.Unlock()
			return true
		})
		if left == 0 && ud.day+1 < today {
			s.uq.mu.Lock()
			s.uq.days = slices.DeleteFunc(s.uq.days, func(x *uniqDay) bool { return x == ud })
			if len(s.uq.days) > 0 {
				s.uq.cur.Store(s.uq.days[len(s.uq.days)-1])
			} else {
				s.uq.cur.Store(nil)
			}
			s.uq.mu.Unlock()
		}
	}
}

// drainUniques sends, at Close, the unique visitors a round could not
// carry (more than sendMax), until Redis fails or CloseTimeout passes.
func (s *Store) drainUniques() {
	deadline := time.Now().Add(s.o.CloseTimeout)
	for s.uq.held.Load() > 0 && time.Now().Before(deadline) {
		work := s.takeUniques()
		if len(work) == 0 || s.sendUniques(work) != nil {
			return
		}
	}
}

// uniquesRound takes and sends the unique visitors of one round, around
// the round of counts that round runs.
func (s *Store) uniquesRound(round func() error) error {
	work := s.takeUniques()
	err := round()
	uerr := s.sendUniques(work)
	if err != nil {
		return err
	}
	return uerr
}
