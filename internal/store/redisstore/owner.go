package redisstore

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/redis/rueidis"

	"visitors/internal/store"
)

// The owner's operations. Each is one script on the counter's slot
// (lua/owner.lua) and, where the counter comes or goes, one command on
// the sorted set of every key. They hold roundMu for reading, so no round
// of this instance is on the wire meanwhile: what the round learned and
// what the operation wrote are never mixed up in an entry.
//
// Across instances (see keys.go for the generation):
//
//   - Set and Delete replace the counter's generation. A batch instance's
//     deltas counted under the old one, pending or in a round not yet
//     answered, are dropped by Redis, and by the instance when the
//     answer tells it. So visits another instance counted up to one
//     flush interval after the Set or Delete may be dropped too: it
//     cannot tell them from the ones before. Sync visits are not
//     answered yet when they reach Redis, so they count after any Set.
//   - Lock is a name in the counter's slot, and the flush script adds
//     nothing to a locked counter: a visit that reaches Redis after the
//     lock does not count, wherever it was made. Visits an instance
//     counted and sent before the lock reached Redis count. A batch
//     instance learns of a lock (or of its end) from its next round, so
//     it may answer a visit with unlocked counts (that then do not
//     count) or with locked ones (not counted) for up to one flush
//     interval.
//   - Tokens are read from Redis on every call: a revoke is seen by
//     every instance at once.

// ErrTotalTooLarge is returned by Set for a total Redis cannot hold.
var ErrTotalTooLarge = errors.New("total above 2^63-1")

// newGen returns a new generation: a random number in [1, 2^48), which
// Lua's numbers hold exactly.
func newGen() string {
	var b [8]byte
	rand.Read(b[:])
	g := binary.LittleEndian.Uint64(b[:])&(1<<48-1) | 1
	return strconv.FormatUint(g, 10)
}

// ownerScript is the run of lua/owner.lua for op on key, with the days
// Redis may hold around today.
func (s *Store) ownerScript(key []byte, today store.Day, op string, n uint64, gen string) script {
	return s.ownerScriptArg(key, today, op, strconv.FormatUint(n, 10), gen)
}

// ownerScriptArg is ownerScript with ARGV[2] as it is sent.
func (s *Store) ownerScriptArg(key []byte, today store.Day, op, n, gen string) script {
	tag := s.n.tag(key)
	keys := make([]string, 0, 4+DayTTL/86400+2)
	keys = append(keys, total(tag), genKey(tag), lockKey(tag), dayKey(tag, today))
	// Every day Redis may still hold, and two past today for an
	// instance whose clock runs ahead.
	for d := today - DayTTL/86400; d <= today+2; d++ {
		if d != today {
			keys = append(keys, dayKey(tag, d))
		}
	}
	return script{src: ownerSrc, sha: ownerSHA, keys: keys,
		args: []string{op, n, gen, strconv.Itoa(TombstoneTTL), strconv.FormatInt(dayTTL(today, s.cal.Now()), 10),
			strconv.FormatUint(store.MaxTotal, 10), strconv.FormatUint(store.MaxDay, 10)}}
}

// runOwner runs one owner script and reads its {total, today, locked}, counts as exact decimals.
func (s *Store) runOwner(ctx context.Context, sc script) (store.Counts, error) {
	ctx, cancel := context.WithTimeout(ctx, s.o.Timeout)
	defer cancel()
	v, err := s.doScripts(ctx, []script{sc})[0].AsIntSlice()
	if err != nil {
		return store.Counts{}, fmt.Errorf("redis: %s: %w: %w", sc.args[0], ErrUnavailable, err)
	}
	if len(v) != 3 {
		return store.Counts{}, fmt.Errorf("redis: %s: %d values, want 3", sc.args[0], len(v))
	}
	return store.Counts{Total: uint64(v[0]), Today: uint64(v[1]), Locked: v[2] != 0}, nil
}

// admitKey admits key to the sorted set of every key, within the limit.
func (s *Store) admitKey(ctx context.Context, key []byte) error {
	ctx, cancel := context.WithTimeout(ctx, s.o.Timeout)
	defer cancel()
	n, err := s.doScripts(ctx, []script{s.admitScript(string(key))})[0].AsInt64()
	if err != nil {
		return fmt.Errorf("redis: admit key: %w: %w", ErrUnavailable, err)
	}
	if n < 0 {
		return store.ErrTooManyKeys
	}
	s.seeKeys(n)
	return nil
}

// liveEntry returns key's entry if it is admitted and not deleted.
func (s *Store) liveEntry(key []byte) *entry {
	e := s.load(key)
	if e == nil {
		return nil
	}
	select {
	case <-e.ready:
	default:
		return nil
	}
	if e.err != nil || e.dead.Load() {
		return nil
	}
	return e
}

// Set implements [store.Store]. The total and the cleared days are in
// Redis when it returns, with a new generation: no delta counted before
// it, by this instance or another, is added after it.
func (s *Store) Set(ctx context.Context, key []byte, total uint64) (store.Counts, error) {
	if len(key) > store.MaxKeyBytes {
		return store.Counts{}, store.ErrKeyTooLong
	}
	if total > math.MaxInt64 {
		return store.Counts{}, fmt.Errorf("set %q: %w", key, ErrTotalTooLarge)
	}
	if err := s.admitKey(ctx, key); err != nil {
		return store.Counts{}, err
	}
	today := s.cal.Today()
	gen := newGen()
	s.roundMu.RLock()
	defer s.roundMu.RUnlock()
	c, err := s.runOwner(ctx, s.ownerScript(key, today, "set", total, gen))
	if err != nil {
		return store.Counts{}, err
	}
	if e := s.liveEntry(key); e != nil && s.o.Durability == store.Batch {
		g, _ := strconv.ParseUint(gen, 10, 64)
		e.mu.Lock()
		// What this instance counted before is dropped; a round that
		// failed keeps its old generation, which Redis now refuses.
		e.gen = g
		e.pend, e.pendN = e.pend[:0], 0
		e.base, e.baseDay, e.baseToday, e.fresh = c.Total, today, c.Today, s.rounds.Load()
		e.locked = c.Locked
		e.mu.Unlock()
	}
	return c, nil
}

// Add implements [store.Store]. In Batch it first sends what this
// instance has counted, as Lock does. Then one script adds n in Redis,
// keeping the counter's generation, so that the deltas another instance
// counted before it still add when they arrive (after it: a negative n
// may then be clamped at 0 before them). The answer is Redis's
// counts and, in Batch, what this instance counted and has not sent.
func (s *Store) Add(ctx context.Context, key []byte, n int64) (store.Counts, error) {
	if len(key) > store.MaxKeyBytes {
		return store.Counts{}, store.ErrKeyTooLong
	}
	if err := store.CheckAdd(store.Counts{}, n); err != nil {
		return store.Counts{}, fmt.Errorf("add %d to %q: %w", n, key, err)
	}
	n = max(n, -math.MaxInt64) // INCRBY takes no less; a total is never above it
	if err := s.admitKey(ctx, key); err != nil {
		return store.Counts{}, err
	}
	if s.o.Durability == store.Batch {
		// The visits this instance answered before count before the
		// Add: a negative n is clamped at 0 after them, not before.
		if err := s.flush(ctx); err != nil {
			return store.Counts{}, fmt.Errorf("redis: add: send what was counted before: %w", err)
		}
	}
	today := s.cal.Today()
	s.roundMu.RLock()
	defer s.roundMu.RUnlock()
	c, err := s.runOwner(ctx, s.ownerScriptArg(key, today, "add", strconv.FormatInt(n, 10), ""))
	if err != nil {
		return store.Counts{}, err
	}
	if c.Total == math.MaxUint64 { // -1: out of range
		return store.Counts{}, fmt.Errorf("add %d to %q: %w", n, key, store.ErrRange)
	}
	if e := s.liveEntry(key); e != nil && s.o.Durability == store.Batch {
		e.mu.Lock()
		if e.flightN == 0 {
			e.base, e.baseDay, e.baseToday, e.fresh = c.Total, today, c.Today, s.rounds.Load()
		}
		e.locked = c.Locked
		c.Total += e.pendN
		c.Today += onDay(e.pend, today)
		e.mu.Unlock()
	}
	return c, nil
}

// Lock implements [store.Store]. In Batch it first sends what this
// instance has counted, so that the visits before it count.
func (s *Store) Lock(ctx context.Context, key []byte, locked bool) (store.Counts, error) {
	if len(key) > store.MaxKeyBytes {
		return store.Counts{}, store.ErrKeyTooLong
	}
	if err := s.admitKey(ctx, key); err != nil {
		return store.Counts{}, err
	}
	if s.o.Durability == store.Batch {
		if err := s.flush(ctx); err != nil {
			return store.Counts{}, fmt.Errorf("redis: lock: send what was counted before: %w", err)
		}
	}
	op := "unlock"
	if locked {
		op = "lock"
	}
	today := s.cal.Today()
	s.roundMu.RLock()
	defer s.roundMu.RUnlock()
	c, err := s.runOwner(ctx, s.ownerScript(key, today, op, 0, ""))
	if err != nil {
		return store.Counts{}, err
	}
	if e := s.liveEntry(key); e != nil && s.o.Durability == store.Batch {
		e.mu.Lock()
		if locked {
			// Counted after the flush above, while the lock was on its
			// way: Redis drops them.
			e.pend, e.pendN = e.pend[:0], 0
		}
		if e.flightN == 0 {
			e.base, e.baseDay, e.baseToday, e.fresh = c.Total, today, c.Today, s.rounds.Load()
		}
		e.locked = c.Locked
		c = e.counts(today)
		e.mu.Unlock()
	}
	return c, nil
}

// Delete implements [store.Store]. The key leaves the sorted set of
// every key first, then its names go, leaving the new generation as a
// tombstone: a visit racing with it may make the key anew, with or
// without its count, but no count from before it comes back.
func (s *Store) Delete(ctx context.Context, key []byte) (bool, error) {
	return s.delete(ctx, key, true)
}

// delete is Delete; with uniques false, the key's unique visitors stay.
func (s *Store) delete(ctx context.Context, key []byte, uniques bool) (bool, error) {
	if len(key) > store.MaxKeyBytes {
		return false, store.ErrKeyTooLong
	}
	today := s.cal.Today()
	s.roundMu.RLock()
	defer s.roundMu.RUnlock()
	ctx, cancel := context.WithTimeout(ctx, s.o.Timeout)
	defer cancel()
	res := s.c.DoMulti(ctx, s.c.B().Zrem().Key(s.n.index).Member(string(key)).Build(),
		s.c.B().Zcard().Key(s.n.index).Build())
	removed, err := res[0].AsInt64()
	if err != nil {
		return false, fmt.Errorf("redis: delete: %w: %w", ErrUnavailable, err)
	}
	if n, err := res[1].AsInt64(); err == nil {
		s.keyCount.Store(n)
	}
	sc := s.ownerScript(key, today, "del", 0, newGen())
	if uniques {
		sc.keys = append(sc.keys, s.uniqueNames(key, today)...) // del deletes them too (uniques.go)
	}
	v, err := s.doScripts(ctx, []script{sc})[0].AsIntSlice()
	if err != nil || len(v) != 1 {
		return false, fmt.Errorf("redis: delete: %w: %v", ErrUnavailable, err)
	}
	if e := s.load(key); e != nil {
		e.mu.Lock()
		e.dead.Store(true)
		e.pend, e.pendN = e.pend[:0], 0
		s.entries.CompareAndDelete(e.key, e)
		e.mu.Unlock()
	}
	if uniques {
		s.forgetUniques(key)
	}
	return removed > 0 || v[0] != 0, nil
}

// lexAfter returns the ZRANGE BYLEX bound just past every string that
// starts with p: "+" if there is none.
func lexAfter(p []byte) string {
	p = bytes.TrimRight(p, "\xff")
	if len(p) == 0 {
		return "+"
	}
	q := slices.Clone(p)
	q[len(q)-1]++
	return "(" + string(q)
}

// List implements [store.Store]: a ZRANGE BYLEX of the sorted set of every
// key, then each key's counts (in Batch, as this instance shows them).
func (s *Store) List(ctx context.Context, prefix, after []byte, limit int) ([]store.Entry, error) {
	if limit < 1 || limit > store.MaxList {
		return nil, fmt.Errorf("list: limit = %d, want 1..%d", limit, store.MaxList)
	}
	lo := "[" + string(prefix)
	if after != nil && bytes.Compare(after, prefix) >= 0 {
		lo = "(" + string(after)
	}
	ctx, cancel := context.WithTimeout(ctx, s.o.Timeout)
	defer cancel()
	keys, err := s.c.Do(ctx, s.c.B().Zrange().Key(s.n.index).Min(lo).Max(lexAfter(prefix)).Bylex().
		Limit(0, int64(limit)).Build()).AsStrSlice()
	if err != nil {
		return nil, fmt.Errorf("redis: list keys: %w: %w", ErrUnavailable, err)
	}
	today := s.cal.Today()
	out := make([]store.Entry, len(keys))
	var cmds rueidis.Commands
	var at []int
	for i, k := range keys {
		out[i].Key = []byte(k)
		if e := s.liveEntry(out[i].Key); e != nil && s.o.Durability == store.Batch {
			e.mu.Lock()
			out[i].Counts = e.counts(today)
			e.mu.Unlock()
			continue
		}
		tag := s.n.tag(out[i].Key)
		cmds = append(cmds, s.c.B().Mget().Key(total(tag), dayKey(tag, today), lockKey(tag)).Build())
		at = append(at, i)
	}
	for j, r := range s.c.DoMulti(ctx, cmds...) {
		var v [3]uint64
		if err := readInts(r, v[:]); err != nil {
			return nil, fmt.Errorf("redis: list: read counts: %w: %w", ErrUnavailable, err)
		}
		out[at[j]].Counts = store.Counts{Total: v[0], Today: v[1], Locked: v[2] != 0}
	}
	return out, nil
}

// tokenRecord is a token as the hash of tokens holds it, by ID.
type tokenRecord struct {
	Name    string    `json:"name"`
	Prefix  string    `json:"prefix"`
	Exact   bool      `json:"exact,omitempty"` // absent in records from before exact tokens
	Hash    string    `json:"sha256"`          // hex
	Created time.Time `json:"created"`
}

// encodeToken returns t's record as the hash of tokens holds it.
func encodeToken(t store.Token) (string, error) {
	b, err := json.Marshal(tokenRecord{Name: t.Name, Prefix: t.Prefix, Exact: t.Exact, Hash: hex.EncodeToString(t.Hash[:]), Created: t.Created.UTC()})
	return string(b), err
}

// decodeToken reads the record v of token id.
func decodeToken(id, v string) (store.Token, error) {
	var r tokenRecord
	if err := json.Unmarshal([]byte(v), &r); err != nil {
		return store.Token{}, fmt.Errorf("redis: token %q: %w", id, err)
	}
	h, err := hex.DecodeString(r.Hash)
	if err != nil || len(h) != 32 {
		return store.Token{}, fmt.Errorf("redis: token %q: its hash %q is not 32 bytes of hex", id, r.Hash)
	}
	t := store.Token{ID: id, Name: r.Name, Prefix: r.Prefix, Exact: r.Exact, Created: r.Created}
	copy(t.Hash[:], h)
	return t, nil
}

// Create implements [store.Store]: one script (lua/create.lua) makes
// the counter's total if it is not there and, on a standalone Redis,
// stores the token in the same step. The key is admitted first, within
// the limit. In Batch the visits this instance counted and has not sent
// (or sent without an answer) make the key there; their check and the
// script hold the entry's lock, so a visit here comes before the check
// or after the creation, and roundMu for reading, so no round is on the
// wire meanwhile. On Redis Cluster the tokens are in a slot of their
// own: the token is one HSET after the script, and a Create that fails
// there made a key without a token.
func (s *Store) Create(ctx context.Context, key []byte, t store.Token) (bool, error) {
	if len(key) > store.MaxKeyBytes {
		return false, store.ErrKeyTooLong
	}
	b, err := encodeToken(t)
	if err != nil {
		return false, fmt.Errorf("create: %w", err)
	}
	// Claim the key in the set of every key first. Every instance admits
	// a key there before it counts the key's first visit (Store.admit),
	// so a claim that finds it there refuses: the counter may hold a
	// visit that no round has sent yet, on any instance. Scripts run
	// alone, so of a first visit and a Create exactly one admits the key.
	if claimed, err := s.claimKey(ctx, key); err != nil || !claimed {
		return false, err
	}
	cluster := len(s.o.Cluster) > 0
	made, err := s.createKey(ctx, key, t.ID, b, !cluster)
	if err != nil {
		s.unclaim(key)
	}
	if err != nil || !made || !cluster {
		return made, err
	}
	ctx, cancel := context.WithTimeout(ctx, s.o.Timeout)
	defer cancel()
	if err := s.c.Do(ctx, s.c.B().Hset().Key(s.n.tokens).FieldValue().FieldValue(t.ID, b).Build()).Error(); err != nil {
		return false, fmt.Errorf("redis: create %q: store its token: %w: %w", key, ErrUnavailable, err)
	}
	return true, nil
}

// unclaim takes back the claim of a Create that failed, unless the
// counter exists: the name would refuse every later Create (409) and
// hold a place of -max-keys, with no counter and no owner (the second
// hostile review of issue 23, a cluster node paused between the two
// steps). A first visit another instance admitted in between and has
// not sent yet keeps its counts, but its key is left out of the set
// (List, -max-keys) until it is admitted again: a window of one round
// trip after a failure.
func (s *Store) unclaim(key []byte) {
	ctx, cancel := context.WithTimeout(context.Background(), s.o.Timeout)
	defer cancel()
	n, err := s.c.Do(ctx, s.c.B().Exists().Key(total(s.n.tag(key))).Build()).AsInt64()
	if err != nil || n != 0 {
		return
	}
	s.c.Do(ctx, s.c.B().Zrem().Key(s.n.index).Member(string(key)).Build())
}

// claimKey admits key to the set of every key only if it is not there,
// within the limit, and reports whether it did.
func (s *Store) claimKey(ctx context.Context, key []byte) (bool, error) {
	ctx, cancel := context.WithTimeout(ctx, s.o.Timeout)
	defer cancel()
	sc := s.admitScript(string(key))
	sc.args = append(sc.args, "claim")
	n, err := s.doScripts(ctx, []script{sc})[0].AsInt64()
	switch {
	case err != nil:
		s.stats.errors[errAdmit].Add(1)
		return false, fmt.Errorf("redis: create %q: claim the key: %w: %w", key, ErrUnavailable, err)
	case n == -1:
		return false, store.ErrTooManyKeys
	case n == -2:
		return false, nil
	}
	s.seeKeys(n)
	return true, nil
}

// createKey runs lua/create.lua on key, with the token id and its
// record if withToken, unless this instance holds visits to it Redis has
// not counted, and reports whether it made key.
func (s *Store) createKey(ctx context.Context, key []byte, id, record string, withToken bool) (bool, error) {
	for {
		e, err := s.entry(ctx, key)
		if err != nil {
			return false, err
		}
		s.roundMu.RLock()
		e.mu.Lock()
		if e.dead.Load() {
			e.mu.Unlock()
			s.roundMu.RUnlock()
			continue // deleted: a new entry admits the key again
		}
		if s.o.Durability == store.Batch && (e.pendN > 0 || e.flightN > 0) {
			e.mu.Unlock()
			s.roundMu.RUnlock()
			return false, nil
		}
		sc := script{src: createSrc, sha: createSHA, keys: []string{e.total}}
		if withToken {
			sc.keys, sc.args = append(sc.keys, s.n.tokens), []string{id, record}
		}
		tctx, cancel := context.WithTimeout(ctx, s.o.Timeout)
		n, err := s.doScripts(tctx, []script{sc})[0].AsInt64()
		cancel()
		e.mu.Unlock()
		s.roundMu.RUnlock()
		if err != nil {
			return false, fmt.Errorf("redis: create %q: %w: %w", key, ErrUnavailable, err)
		}
		return n == 1, nil
	}
}

// AddToken implements [store.Store]: one HSETNX.
func (s *Store) AddToken(ctx context.Context, t store.Token) (bool, error) {
	b, err := encodeToken(t)
	if err != nil {
		return false, fmt.Errorf("add token: %w", err)
	}
	ctx, cancel := context.WithTimeout(ctx, s.o.Timeout)
	defer cancel()
	n, err := s.c.Do(ctx, s.c.B().Hsetnx().Key(s.n.tokens).Field(t.ID).Value(b).Build()).AsInt64()
	if err != nil {
		return false, fmt.Errorf("redis: add token: %w: %w", ErrUnavailable, err)
	}
	return n == 1, nil
}

// Token implements [store.Store]: one HGET.
func (s *Store) Token(ctx context.Context, id string) (store.Token, bool, error) {
	ctx, cancel := context.WithTimeout(ctx, s.o.Timeout)
	defer cancel()
	v, err := s.c.Do(ctx, s.c.B().Hget().Key(s.n.tokens).Field(id).Build()).ToString()
	if rueidis.IsRedisNil(err) {
		return store.Token{}, false, nil
	}
	if err != nil {
		return store.Token{}, false, fmt.Errorf("redis: read token: %w: %w", ErrUnavailable, err)
	}
	t, err := decodeToken(id, v)
	return t, err == nil, err
}

// PutToken implements [store.Store]: one HSET, acknowledged by Redis.
func (s *Store) PutToken(ctx context.Context, t store.Token) error {
	b, err := encodeToken(t)
	if err != nil {
		return fmt.Errorf("put token: %w", err)
	}
	ctx, cancel := context.WithTimeout(ctx, s.o.Timeout)
	defer cancel()
	if err := s.c.Do(ctx, s.c.B().Hset().Key(s.n.tokens).FieldValue().FieldValue(t.ID, b).Build()).Error(); err != nil {
		return fmt.Errorf("redis: put token: %w: %w", ErrUnavailable, err)
	}
	return nil
}

// DeleteToken implements [store.Store]: one HDEL; Tokens reads Redis on
// every call, so no instance sees the token after it.
func (s *Store) DeleteToken(ctx context.Context, id string) (bool, error) {
	ctx, cancel := context.WithTimeout(ctx, s.o.Timeout)
	defer cancel()
	n, err := s.c.Do(ctx, s.c.B().Hdel().Key(s.n.tokens).Field(id).Build()).AsInt64()
	if err != nil {
		return false, fmt.Errorf("redis: delete token: %w: %w", ErrUnavailable, err)
	}
	return n > 0, nil
}

// DeleteTokenIf implements [store.Store]: one script (lua/tokendel.lua)
// compares the record's hash and deletes it.
func (s *Store) DeleteTokenIf(ctx context.Context, id string, hash [32]byte) (bool, error) {
	ctx, cancel := context.WithTimeout(ctx, s.o.Timeout)
	defer cancel()
	sc := script{src: tokenDelSrc, sha: tokenDelSHA, keys: []string{s.n.tokens}, args: []string{id, hex.EncodeToString(hash[:])}}
	n, err := s.doScripts(ctx, []script{sc})[0].AsInt64()
	if err != nil {
		return false, fmt.Errorf("redis: delete token: %w: %w", ErrUnavailable, err)
	}
	return n > 0, nil
}

// Tokens implements [store.Store]: one HGETALL, with no cache.
func (s *Store) Tokens(ctx context.Context) ([]store.Token, error) {
	ctx, cancel := context.WithTimeout(ctx, s.o.Timeout)
	defer cancel()
	m, err := s.c.Do(ctx, s.c.B().Hgetall().Key(s.n.tokens).Build()).AsStrMap()
	if err != nil {
		return nil, fmt.Errorf("redis: read tokens: %w: %w", ErrUnavailable, err)
	}
	out := make([]store.Token, 0, len(m))
	for id, v := range m {
		t, err := decodeToken(id, v)
		if err != nil {
			return nil, err
		}
		out = append(out, t)
	}
	slices.SortFunc(out, func(a, b store.Token) int { return strings.Compare(a.ID, b.ID) })
	return out, nil
}

// flush sends a round of everything counted so far and waits for its
// answer, or for ctx: the round goes on without it.
func (s *Store) flush(ctx context.Context) error {
	ch := make(chan error, 1)
	select {
	case s.flushRq <- ch:
	case <-s.done:
		return errors.New("redisstore: closed")
	case <-ctx.Done():
		return ctx.Err()
	}
	select {
	case err := <-ch:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}
