// Package unique counts the distinct visitors of each key per UTC day
// without keeping who they were.
//
// A visitor is a client identity and a User-Agent. Neither is stored:
// each visit is reduced to a 64-bit SipHash-2-4 of the two (the
// User-Agent by its xxHash64) under a key
// that is random for each UTC day, and that hash goes into the key's
// HyperLogLog sketch of the day (github.com/axiomhq/hyperloglog,
// precision 14: 16,384 registers, 0.8% standard error; a sketch holds
// register maxima, never the hashes). So that a restart in the middle of
// a day does not count the same visitors again, both the sketches and
// the day's key must outlive the process:
//
//   - the sketches are written to a store that implements
//     [store.Sketches] (the embedded store) every flush interval and at
//     Close;
//   - the day's key is never written: a random 32-byte seed for the day
//     is, in the file [SeedFile] of the data directory (mode 0600), and
//     the key is derived from it with SHA-256. The file holds only the
//     current day's seed; at the first visit of a new UTC day a new seed
//     replaces it in place, so that no earlier day's key can be derived
//     from the disk, as GoatCounter and Plausible drop their daily salts.
//
// While the day lasts, whoever reads the data directory can derive the
// day's key, and so test whether a guessed identity and User-Agent was
// probably among a key's visitors; that is the price of surviving a
// restart, and it ends with the day. Without a data directory (the
// memory store) the seed lives in memory only.
//
// With a store that keeps unique visitors itself ([store.Uniques], the
// Redis store, [Options.Shared]), several instances count one set of
// visitors: a visitor is counted once per key and day whichever instance
// it reaches, and a restart of any or all of them counts no one again.
// For that, every instance must hash a visitor to the same value, so
// the day's seed is shared through the store: the first instance to ask
// makes a random one (SET NX in Redis) that expires an hour after the
// day ends, and every instance derives the key from it as above. The
// hashes go to the store (a Redis HyperLogLog per key and day, 0.81%
// standard error), and no sketch is kept here. The trade-off is the
// file's, moved: while the day lasts, whoever can read Redis (an
// operator, a backup of it, a replica) can derive the day's key and test
// guesses; no earlier day's key can be derived from Redis once its
// seed expired (a copy of Redis made during the day, such as an RDB
// snapshot or an AOF file, keeps it as long as the copy lives),
// and no address or User-Agent reaches Redis, only the keyed hashes, and
// PFADD keeps register maxima, not the hashes. The visits that arrive
// as a day begins wait for the store to answer for its seed, one round
// trip (at most its timeout); if it does not answer, the instance counts
// with a seed of its own until it does (those visitors may count again
// once). Each flush interval the counter asks the store for the day's
// seed again (SET NX and GET, off the request path), so that a seed the
// store lost and another instance made anew is taken by every instance
// within an interval (the day's visitors so far may count again once).
package unique

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/maphash"
	"io"
	"net/netip"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/axiomhq/hyperloglog"
	"github.com/cespare/xxhash/v2"
	"github.com/dchest/siphash"
	"github.com/rs/zerolog"

	"visitors/internal/store"
)

// SeedFile is the name of the file, in the data directory, that holds
// the current UTC day's seed.
const SeedFile = "unique-day-seed"

// seedMagic starts the seed file: a format, the day, then the seed.
const seedMagic = "visitors-unique-seed-1\n"

const numShards = 64

// Options configure [New].
type Options struct {
	// Dir is where [SeedFile] lives; "" keeps the seed in memory.
	Dir string
	// Store keeps the sketches; nil keeps them in memory (see [Memory]).
	Store store.Sketches
	// FlushInterval is how often changed sketches are written; 0 means
	// one second.
	FlushInterval time.Duration
	// Now is the clock that says which UTC day it is; nil means time.Now.
	Now func() time.Time
	// Log receives write failures.
	Log zerolog.Logger
	// Off counts nothing: every count is zero. Hash still works.
	Off bool
	// Shared, if set, is a store that keeps the unique visitors itself,
	// shared by every instance on it (the Redis store): the day's seed
	// and the visitors go there, and Dir and Store are not used.
	Shared store.Uniques
}

// Counter counts unique visitors per key and day. It may be used
// concurrently.
type Counter struct {
	o    Options
	st   store.Sketches
	seed maphash.Seed  // spreads keys over the shards
	day  atomic.Uint32 // the current store.Day; changes under mu

	mu     sync.RWMutex           // held for reading by every visit; for writing by a day change
	key    atomic.Pointer[dayKey] // the current day's; replaced under mu
	shards [numShards]shard
	stored store.Day // a day whose sketches the store has and c has not all read: the day c started on, if any; guarded by mu

	flushMu sync.Mutex  // one flush at a time
	past    estimates   // past days' estimates, by their sketch's content
	local   atomic.Bool // Shared: the day's key is from a seed of this process's own, Shared did not answer
	stop    chan struct{}
	done    chan struct{}
	closed  sync.Once
}

// dayKey is one UTC day's SipHash key.
type dayKey struct {
	day    store.Day
	k0, k1 uint64
}

type shard struct {
	mu sync.Mutex         // guards m
	m  map[uint64]*sketch // by the key's maphash (seeded per process: no aimed collision)
	_  [48]byte
}

// sketch is one key's sketch of the current day. While it has at most
// len(vis) visitors it is those visitors, exactly, and no HyperLogLog:
// most keys have one or two visitors a day, and an empty sparse
// HyperLogLog alone costs 160 bytes (BenchmarkMemoryPerKey); written, it
// is the sketch of those visitors, byte for byte. A third visitor, or a
// sketch loaded from the store, makes it a HyperLogLog (big).
type sketch struct {
	key   string    // the store's own string of the key where it has one (store.HeldKeys)
	vis   [2]uint64 // while big is nil: the visitors, n of them
	big   *bigSketch
	n     uint8
	dirty bool // changed since it was written
}

// bigSketch is a sketch past its first visitors.
type bigSketch struct {
	hll    *hyperloglog.Sketch
	recent [4]uint64 // the last visitors added: adding one again changes nothing
	next   uint8     // where the next recent visitor goes
	known  bool      // est was computed (a sketch loaded from disk has none yet)
	est    uint64    // the estimate as Today last computed it
	since  uint64    // visitors added since est was computed
}

// add adds visitor v and reports whether that changed the sketch.
func (s *sketch) add(v uint64) bool {
	if s.big == nil {
		for _, w := range s.vis[:s.n] {
			if w == v {
				return false
			}
		}
		if int(s.n) < len(s.vis) {
			s.vis[s.n] = v
			s.n++
			return true
		}
		b := &bigSketch{hll: hyperloglog.New14()}
		for _, w := range s.vis[:s.n] {
			b.hll.InsertHash(w)
			b.recent[b.next%4] = w
			b.next++
		}
		s.big, s.n = b, 0
	}
	b := s.big
	if b.recent[0] == v || b.recent[1] == v || b.recent[2] == v || b.recent[3] == v {
		return false // a sketch is idempotent: the same hash again changes nothing
	}
	b.recent[b.next%4] = v
	b.next++
	b.hll.InsertHash(v)
	b.since++
	return true
}

// empty reports whether the sketch has no visitor: made by a read, or
// by Forget.
func (s *sketch) empty() bool { return s.big == nil && s.n == 0 }

// estimate returns the sketch's estimate of its visitors.
func (s *sketch) estimate() uint64 {
	b := s.big
	if b == nil {
		return uint64(s.n) // what the HyperLogLog of so few says, but for a 2^-25 chance
	}
	if !b.known || b.since > b.est/staleShare {
		b.est, b.known, b.since = estimate(b.hll), true, 0
	}
	return b.est
}

// marshal returns the sketch as the store keeps it: a HyperLogLog's
// binary form.
func (s *sketch) marshal() ([]byte, error) {
	if s.big != nil {
		return s.big.hll.MarshalBinary()
	}
	h := hyperloglog.New14()
	for _, w := range s.vis[:s.n] {
		h.InsertHash(w)
	}
	return h.MarshalBinary()
}

// New returns a Counter, loading today's seed from o.Dir; today's
// sketches in o.Store are read as each key is first visited or read.
// The caller must call Close, which writes what is not yet written,
// before closing the store.
func New(o Options) (*Counter, error) {
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.FlushInterval <= 0 {
		o.FlushInterval = time.Second
	}
	c := &Counter{o: o, st: o.Store, seed: maphash.MakeSeed(), stop: make(chan struct{}), done: make(chan struct{})}
	if c.st == nil {
		c.st = NewMemory()
	}
	for i := range c.shards {
		c.shards[i].m = make(map[uint64]*sketch)
	}
	today := store.DayOf(o.Now())
	if err := c.setDay(today, true); err != nil {
		if o.Shared == nil || c.key.Load() == nil {
			return nil, err
		}
		// The shared store did not answer: the flusher asks again.
		o.Log.Error().Err(err).Msg("unique visitors: counting with a seed of this instance's own until the store answers; its visitors may count again once")
	}
	if o.Shared != nil {
		go c.flusher()
		return c, nil
	}
	// Today's sketches are read from the store as each key is first
	// touched, not all at start: a million of them took 41 s to decode
	// before the first answer (scripts/starttime.sh), and held a
	// HyperLogLog each whether or not the key was visited again.
	errAny := errors.New("found one")
	switch err := c.st.LoadSketches(today, func(_, _ []byte) error { return errAny }); {
	case errors.Is(err, errAny):
		c.stored = today
	case err != nil: // count on: a damaged store costs today's counts, not the service
		o.Log.Error().Err(err).Msg("unique visitors: today's sketches cannot be read; their visitors count again")
	}
	go c.flusher()
	return c, nil
}

// setDay makes d the current day, with its key. c.mu must be held, or c
// not yet shared. At start (resume) the stored seed of d is reused. An
// error writing the seed is returned, but d is the current day all the
// same, with its key in memory only.
func (c *Counter) setDay(d store.Day, resume bool) error {
	var seed [32]byte
	found := false
	if c.o.Shared != nil {
		return c.sharedDay(d)
	}
	if resume && c.o.Dir != "" {
		var err error
		found, err = readSeed(filepath.Join(c.o.Dir, SeedFile), d, &seed)
		if err != nil {
			return err
		}
	}
	var werr error
	if !found {
		if _, err := io.ReadFull(rand.Reader, seed[:]); err != nil {
			return fmt.Errorf("unique visitors: a random seed: %w", err)
		}
		if c.o.Dir != "" {
			werr = writeSeed(filepath.Join(c.o.Dir, SeedFile), d, &seed)
		}
	}
	c.useSeed(d, &seed)
	return werr
}

// sharedDay makes d the current day with the key of its shared seed or,
// if the shared store does not answer, of a random seed of its own,
// which the flusher replaces once it does. c.mu must be held, or c not
// yet shared.
func (c *Counter) sharedDay(d store.Day) error {
	seed, err := c.o.Shared.DaySeed(context.Background(), d)
	c.local.Store(err != nil)
	if err != nil {
		if _, rerr := io.ReadFull(rand.Reader, seed[:]); rerr != nil {
			return fmt.Errorf("unique visitors: a random seed: %w", rerr)
		}
		err = fmt.Errorf("unique visitors: the day's shared seed: %w", err)
	}
	c.useSeed(d, &seed)
	return err
}

// useSeed makes d the current day, with the key derived from seed.
func (c *Counter) useSeed(d store.Day, seed *[32]byte) {
	k0, k1 := derive(seed)
	c.key.Store(&dayKey{day: d, k0: k0, k1: k1})
	c.day.Store(uint32(d))
}

// derive returns the hash key of a day's seed.
func derive(seed *[32]byte) (k0, k1 uint64) {
	k := sha256.Sum256(append([]byte("visitors unique-visitor key\x00"), seed[:]...))
	return binary.LittleEndian.Uint64(k[:8]), binary.LittleEndian.Uint64(k[8:16])
}

// checkSeed asks the shared store for the day's seed and takes it if
// the current key is not derived from it: the key is of a seed of this
// process's own (the store did not answer), or the store lost the seed
// (Redis restarted without it, a failover, a flush) and another instance
// made a new one, which every instance must take or each visitor who
// reaches two of them counts twice for the rest of the day. The
// visitors counted under the old key may count again once. It asks
// without holding c.mu, so visits never wait for a store that does not
// answer.
func (c *Counter) checkSeed() {
	if c.o.Shared == nil {
		return
	}
	d := store.Day(c.day.Load())
	if store.DayOf(c.o.Now()) != d {
		return // the next visit moves to the new day, and asks for its seed
	}
	seed, err := c.o.Shared.DaySeed(context.Background(), d)
	if err != nil {
		return
	}
	k0, k1 := derive(&seed)
	if k := c.key.Load(); !c.local.Load() && k.day == d && k.k0 == k0 && k.k1 == k1 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if store.Day(c.day.Load()) != d {
		return // a new day began meanwhile, with its own seed
	}
	was := c.local.Load()
	c.useSeed(d, &seed)
	c.local.Store(false)
	if was {
		c.o.Log.Info().Msg("unique visitors: the day's shared seed is in use again")
	} else {
		c.o.Log.Warn().Msg("unique visitors: the store's seed of the day is not the one in use (lost and made anew): taken; today's visitors so far may count again once")
	}
}

// readSeed reads the seed file and reports whether it holds day d's
// seed. A missing file, or another day's, is no error.
func readSeed(path string, d store.Day, seed *[32]byte) (bool, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("unique visitors: read the day's seed: %w", err)
	}
	if len(b) != len(seedMagic)+4+32 || string(b[:len(seedMagic)]) != seedMagic {
		return false, fmt.Errorf("unique visitors: %s is not a seed file (%d bytes); remove it to start the day's unique count again", path, len(b))
	}
	if store.Day(binary.BigEndian.Uint32(b[len(seedMagic):])) != d {
		return false, nil
	}
	copy(seed[:], b[len(seedMagic)+4:])
	return true, nil
}

// writeSeed writes day d's seed over the file's previous content, in
// place, and syncs it: the previous day's seed is overwritten, not left
// in a free block by a rename.
func writeSeed(path string, d store.Day, seed *[32]byte) error {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return fmt.Errorf("unique visitors: write the day's seed: %w", err)
	}
	b := append(binary.BigEndian.AppendUint32([]byte(seedMagic), uint32(d)), seed[:]...)
	_, err = f.WriteAt(b, 0)
	if err == nil {
		err = f.Truncate(int64(len(b)))
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("unique visitors: write the day's seed: %w", err)
	}
	return nil
}

// shardOf returns key's shard and its key in the shard's map.
func (c *Counter) shardOf(key []byte) (*shard, uint64) {
	h := maphash.Bytes(c.seed, key)
	return &c.shards[h%numShards], h
}

// Visitor is a visitor's hash under the current day's key.
type Visitor uint64

// lock takes c.mu for reading on the current day of now, moving to a new
// day first if now is on a later one. The caller must RUnlock.
func (c *Counter) lock(now time.Time) {
	d := store.DayOf(now)
	for {
		c.mu.RLock()
		if d <= store.Day(c.day.Load()) {
			return // a clock stepping back stays on the current day
		}
		c.mu.RUnlock()
		c.rollover(d)
	}
}

// Hash returns the visitor of identity id with User-Agent ua under the
// key of now's day: a SipHash-2-4 of the identity and of the
// User-Agent's own SipHash.
func (c *Counter) Hash(id netip.Addr, ua string, now time.Time) uint64 {
	k := c.keyOf(now)
	var buf [24]byte
	a := id.As16()
	copy(buf[:16], a[:])
	// The User-Agent enters the keyed hash as its xxHash64: unkeyed, but
	// only ever in memory, and four times as fast over a browser's 100
	// bytes as a second SipHash.
	binary.LittleEndian.PutUint64(buf[16:24], xxhash.Sum64String(ua))
	return siphash.Hash(k.k0, k.k1, buf[:])
}

// keyOf returns the key of now's day, moving to that day first if it is
// a new one.
func (c *Counter) keyOf(now time.Time) *dayKey {
	k := c.key.Load()
	if store.DayOf(now) <= k.day {
		return k
	}
	c.lock(now)
	k = c.key.Load()
	c.mu.RUnlock()
	return k
}

// Pair returns the hash of visitor v's views of key under the key of
// now's day, for a [Repeats].
func (c *Counter) Pair(v uint64, key []byte, now time.Time) uint64 {
	k := c.keyOf(now)
	var buf [8 + store.MaxKeyBytes]byte
	binary.LittleEndian.PutUint64(buf[:8], v)
	n := copy(buf[8:], key)
	return siphash.Hash(k.k1, k.k0, buf[:8+n])
}

// Add records visitor v (from [Counter.Hash]) as a visitor of key today.
func (c *Counter) Add(key []byte, v uint64, now time.Time) {
	if c.o.Off {
		return
	}
	c.lock(now)
	defer c.mu.RUnlock()
	if c.o.Shared != nil {
		c.o.Shared.AddUnique(key, store.Day(c.day.Load()), v)
		return
	}
	sh, k := c.shardOf(key)
	sh.mu.Lock()
	s := c.sketchOf(sh, k, key)
	if s.add(v) {
		s.dirty = true
	}
	sh.mu.Unlock()
}

// sketchOf returns key's sketch of the current day, making it: read
// from the store if the store may hold it (c.stored), else empty. A
// sketch the store holds damaged is logged and starts empty: its key's
// visitors count again. c.mu must be held for reading, and sh.mu.
func (c *Counter) sketchOf(sh *shard, k uint64, key []byte) *sketch {
	if s := sh.m[k]; s != nil {
		return s
	}
	s := &sketch{key: c.keyString(key)}
	sh.m[k] = s
	d := store.Day(c.day.Load())
	if c.stored != d {
		return s
	}
	data, err := c.st.SketchDays(key, d, 1)
	if err == nil && data[0] != nil {
		h := hyperloglog.New14()
		if err = h.UnmarshalBinary(data[0]); err == nil {
			s.big = &bigSketch{hll: h}
			return s
		}
		err = fmt.Errorf("the sketch of key %q: %w", key, err)
	}
	if err != nil {
		c.o.Log.Error().Err(err).Msg("unique visitors: a sketch of today was not loaded; its visitors count again")
	}
	return s
}

// keyString returns key as a string to keep: the store's own where it
// holds one, else a copy.
func (c *Counter) keyString(key []byte) string {
	if hk, ok := c.st.(store.HeldKeys); ok {
		if k, ok := hk.HeldKey(key); ok {
			return k
		}
	}
	return string(key)
}

// Today returns the estimated number of unique visitors of key today.
// With Options.Shared, a key the store has not read lately costs a
// round trip, and a store that does not answer gives 0.
func (c *Counter) Today(key []byte, now time.Time) uint64 {
	if c.o.Off {
		return 0
	}
	c.lock(now)
	defer c.mu.RUnlock()
	if c.o.Shared != nil {
		n, _ := c.o.Shared.UniqueToday(context.Background(), key, store.Day(c.day.Load()))
		return n
	}
	sh, k := c.shardOf(key)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	return c.sketchOf(sh, k, key).estimate()
}

// staleShare bounds how far Today may lag the sketch: it computes the
// estimate again once more than 1/staleShare of it (0.39%, half the
// sketch's own standard error of 0.81%) has been added since, and
// serves the last estimate until then. Below 256 visitors every change
// is read at once. An estimate goes over all 16,384 registers, with a
// math.Pow each in the library: 385 µs for a dense sketch of 20,000
// visitors here (BenchmarkTodayWhileCounting before Today cached it),
// which a JSON read of a busy counter
// paid on every request before.
const staleShare = 256

// Days returns key's unique visitors for the n days that end with the
// day of now, oldest first.
func (c *Counter) Days(key []byte, now time.Time, n int) ([]uint64, error) {
	if c.o.Shared != nil && !c.o.Off {
		c.lock(now)
		last := store.Day(c.day.Load())
		c.mu.RUnlock()
		return c.o.Shared.UniqueDays(context.Background(), key, last, n)
	}
	today := c.Today(key, now)
	last := store.Day(c.day.Load())
	out := make([]uint64, n)
	out[n-1] = today
	if n == 1 || c.o.Off {
		return out, nil
	}

	past, err := c.st.SketchDays(key, last-1, n-1)
	if err != nil {
		return nil, err
	}
	for i, data := range past {
		if data == nil {
			continue
		}
		sum := maphash.Bytes(c.seed, data)
		if est, ok := c.past.get(sum); ok {
			out[i] = est
			continue
		}
		h := hyperloglog.New14()
		if err := h.UnmarshalBinary(data); err != nil {
			return nil, fmt.Errorf("the sketch of key %q on %s: %w", key, (last - store.Day(n-1-i)).Time().Format("2006-01-02"), err)
		}
		out[i] = estimate(h)
		c.past.put(sum, out[i])
	}
	return out, nil
}

// estimates remembers the estimates of past days' sketches by a hash of
// their bytes (seeded per process, so no sketch can be made to collide
// on purpose): a sketch that changes, by an import or a delete, is a new
// entry, never a stale one. Estimating every past day made
// daily.json?days=365 of a counter with 20,000 unique visitors a day
// cost 112 ms of CPU a request (BenchmarkDays365 before this cache). At most maxEstimates are kept (a map of 2.4 MB,
// measured); past that the map starts over.
type estimates struct {
	mu sync.Mutex
	m  map[uint64]uint64
}

const maxEstimates = 1 << 16

func (e *estimates) get(sum uint64) (uint64, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	est, ok := e.m[sum]
	return est, ok
}

func (e *estimates) put(sum, est uint64) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.m == nil || len(e.m) >= maxEstimates {
		e.m = make(map[uint64]uint64)
	}
	e.m[sum] = est
}

// rollover moves to day d: the old day's sketches are written and
// dropped, and d gets a new random key.
func (c *Counter) rollover(d store.Day) {
	c.mu.Lock()
	defer c.mu.Unlock()
	old := store.Day(c.day.Load())
	if d <= old {
		return
	}
	if err := c.flushLocked(old); err != nil {
		c.o.Log.Error().Err(err).Msg("unique visitors: the last sketches of the day were not written")
	}
	for i := range c.shards {
		clear(c.shards[i].m)
	}
	c.stored = 0 // a day begun here: the store has nothing of it that c has not
	if err := c.setDay(d, false); err != nil {
		// The seed could not be written: the day is counted with a key
		// kept in memory; a restart today counts its visitors again.
		c.o.Log.Error().Err(err).Msg("unique visitors: the day's seed is in memory only")
	}
}

// Flush writes the sketches changed since the last flush. With
// Options.Shared it does nothing: the store sends the visitors.
func (c *Counter) Flush() error {
	if c.o.Shared != nil {
		return nil
	}
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.flushLocked(store.Day(c.day.Load()))
}

// flushLocked writes day d's changed sketches. c.mu must be held.
func (c *Counter) flushLocked(d store.Day) error {
	c.flushMu.Lock()
	defer c.flushMu.Unlock()
	var batch []store.Sketch
	type mark struct {
		sh *shard
		s  *sketch
	}
	var marked []mark
	for i := range c.shards {
		sh := &c.shards[i]
		sh.mu.Lock()
		for _, s := range sh.m {
			if !s.dirty {
				continue
			}
			data, err := s.marshal()
			if err != nil {
				sh.mu.Unlock()
				return fmt.Errorf("encode the sketch of key %q: %w", s.key, err)
			}
			s.dirty = false
			batch = append(batch, store.Sketch{Key: []byte(s.key), Data: data})
			marked = append(marked, mark{sh, s})
		}
		sh.mu.Unlock()
	}
	if err := c.st.PutSketches(d, batch); err != nil {
		for _, m := range marked { // written next time
			m.sh.mu.Lock()
			m.s.dirty = true
			m.sh.mu.Unlock()
		}
		return err
	}
	return nil
}

func (c *Counter) flusher() {
	defer close(c.done)
	t := time.NewTicker(c.o.FlushInterval)
	defer t.Stop()
	for {
		select {
		case <-c.stop:
			return
		case <-t.C:
			c.checkSeed()
			if err := c.Flush(); err != nil {
				c.o.Log.Error().Err(err).Msg("unique visitors: write sketches")
			}
		}
	}
}

// Keys returns how many keys have a sketch today.
func (c *Counter) Keys() int {
	n := 0
	for i := range c.shards {
		sh := &c.shards[i]
		sh.mu.Lock()
		for _, s := range sh.m {
			if !s.empty() {
				n++
			}
		}
		sh.mu.Unlock()
	}
	return n
}

// Held returns the keys that have a sketch today in memory. With
// Options.Shared it returns none: the store holds them.
func (c *Counter) Held() [][]byte {
	var keys [][]byte
	for i := range c.shards {
		sh := &c.shards[i]
		sh.mu.Lock()
		for _, s := range sh.m {
			if !s.empty() {
				keys = append(keys, []byte(s.key))
			}
		}
		sh.mu.Unlock()
	}
	return keys
}

// Forget drops today's unique visitors of keys, for a counter the owner
// deleted: they are shown no more, and the store's sketch of today is
// written over with an empty one, after any flush in flight, so that
// neither this process nor a restart brings them back. (The store's
// Delete removes its own sketches; a flush that began before it could
// write today's again.) Visitors after Forget count anew. With
// Options.Shared it does nothing: the store forgets them with the key.
func (c *Counter) Forget(keys [][]byte) error {
	if c.o.Off || c.o.Shared != nil || len(keys) == 0 {
		return nil
	}
	c.mu.RLock()
	defer c.mu.RUnlock()
	c.flushMu.Lock() // after a flush in flight, and before the next
	defer c.flushMu.Unlock()
	empty, err := hyperloglog.New14().MarshalBinary()
	if err != nil {
		return fmt.Errorf("unique visitors: encode an empty sketch: %w", err)
	}
	batch := make([]store.Sketch, 0, len(keys))
	for _, key := range keys {
		sh, k := c.shardOf(key)
		sh.mu.Lock()
		if c.stored == store.Day(c.day.Load()) {
			// Empty, not gone: the store's sketch is not read back
			// before the empty one below is written over it.
			sh.m[k] = &sketch{key: c.keyString(key)}
		} else {
			delete(sh.m, k)
		}
		sh.mu.Unlock()
		batch = append(batch, store.Sketch{Key: key, Data: empty})
	}
	if err := c.st.PutSketches(store.Day(c.day.Load()), batch); err != nil {
		return fmt.Errorf("unique visitors: forget %d keys: %w", len(keys), err)
	}
	return nil
}

// Close stops the flusher and writes what changed. The store must still
// be open.
func (c *Counter) Close() error {
	var err error
	c.closed.Do(func() {
		close(c.stop)
		<-c.done
		err = c.Flush()
	})
	return err
}
