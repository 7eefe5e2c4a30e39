// Package redisstore is the shared [store.Store]: counts live in Redis, a
// standalone server or a Redis Cluster, so that several instances of
// visitors behind a load balancer count into one set of numbers.
//
// The client is rueidis (auto-pipelining: concurrent calls share one
// connection per node and one write per batch of commands). Every Redis
// name starts with Options.Prefix, and all the names of one counter share
// a hash tag, so a counter never spans two cluster slots (see keys.go).
//
// One goroutine per store, the flusher, writes counts. It sends a round:
// for each group of slots it touched (in a cluster a group is one slot,
// standalone one of 64), one Lua script (lua/apply.lua) that adds the
// round's deltas to the totals and day counts and returns the new
// values. Each round carries the instance's next sequence number, and the
// script stores it per group and instance and adds nothing if the group
// already holds it: a round whose answer was lost (a timeout, a broken
// connection, Redis killed) is sent again, unchanged, until an answer
// comes, and it lands exactly once.
//
// With [store.Batch] durability requests never wait for Redis. A visit is
// added to its key's pending delta in memory, and an instance shows
// Redis's value as of its last round plus its own pending delta. The
// flusher sends a round every flush interval, so Redis sees one command
// per touched group per interval, not one per visit. The /hi numbers are
// reserved from Redis in blocks with INCRBY, so no two instances hand out
// the same number. While Redis is down the store keeps counting the keys
// it knows in memory, retries with backoff, and [Store.Health] names
// Redis; a new key, or /hi past its block, fails until Redis is back.
//
// With [store.Sync] durability a visit is answered only once Redis has
// confirmed it. Visits that arrive while a round is in flight share the
// next one (group commit); /hi is one INCR per visit. An error means the
// visit did not count (but for ErrOutcomeUnknown). A visit whose round
// was sent and got no answer is not answered with an error: it waits
// until the resend learns whether it counted (it then counts exactly
// once), or until its client leaves. If Close gives up on the round
// first, one plain command per group asks Redis whether the round landed
// and fences it so that it never lands later: the visit is answered
// with its counts if it did, an error if it did not, and
// ErrOutcomeUnknown if Redis does not answer that either. While a round
// is unanswered new visits fail at once.
//
// Keys, List and -max-keys use one sorted set of every key ({keys}i, all
// scores 0, so ZRANGE BYLEX is byte order), updated by a script
// (lua/admit.lua) so that the limit holds across all instances.
//
// The owner's operations (owner.go) are shared by every instance: Set
// and Delete give the counter a new generation, which the round script
// compares with the one each delta was counted under, so no delta from
// before them, on any instance, lands after them; a lock is a name the
// round script checks, so no visit that reaches Redis after it counts;
// tokens are read from Redis on every call.
package redisstore

import (
	"context"
	"crypto/rand"
	"crypto/sha1"
	_ "embed"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/rueidis"
	"github.com/rs/zerolog"

	"visitors/internal/store"
	"visitors/internal/store/tally"
)

var _ store.Store = (*Store)(nil)

// DefaultURL is the Redis a store connects to when Options.URL is empty.
const DefaultURL = "redis://127.0.0.1:6379/0"

// DefaultPrefix starts every Redis name when Options.Prefix is empty.
const DefaultPrefix = "visitors:"

// Options configure [Open].
type Options struct {
	// URL is redis://[user:pass@]host:port/db, or rediss:// for TLS;
	// empty means DefaultURL. With Cluster it gives only the user,
	// password and TLS.
	URL string
	// Password, if set, replaces the URL's password.
	Password string
	// Cluster lists host:port seeds of a Redis Cluster; nil means the
	// server at URL.
	Cluster []string
	// Prefix starts every Redis name; empty means DefaultPrefix. It may
	// not hold '{' or '}', which would change the hash slots.
	Prefix        string
	Durability    store.Durability // store.Batch or store.Sync
	FlushInterval time.Duration    // Batch: how often rounds are sent; default 100ms
	MaxKeys       int              // most distinct keys across all instances; <= 0: no limit
	Now           func() time.Time // the clock that says which UTC day it is; nil: time.Now
	Log           zerolog.Logger   // failed rounds and recoveries
	// Timeout bounds one round trip to Redis; default 2s.
	Timeout time.Duration
	// CloseTimeout bounds how long Close keeps trying to send what is
	// pending while Redis is unreachable; default 10s.
	CloseTimeout time.Duration
	// HiBlock is how many /hi numbers Batch reserves at once; default 1000.
	HiBlock uint64
	// OnRound, if set, is told of every attempt to send a round to Redis
	// (see [RoundPart]), how long it took and its error.
	OnRound func(part RoundPart, d time.Duration, err error)
	// MaxPendingUniques bounds the unique visitors an instance holds in
	// memory not yet answered by Redis (8 bytes each, and a set entry);
	// past it, a new visitor is not counted (Report.UniquesDropped) until
	// a round is answered. Default 1<<20.
	MaxPendingUniques int
}

// Store is the Redis [store.Store]. It is safe for concurrent use.
type Store struct {
	c              rueidis.Client
	o              Options
	n              names
	id             string // this instance, in sequence keys
	cal            *tally.Calendar
	cluster        bool
	roundDurations *prometheus.HistogramVec // how long sends of rounds took, for Collectors

	entries  sync.Map     // string -> *entry: keys this instance has counted
	keyCount atomic.Int64 // the set of every key's size, as last seen
	admits   atomic.Int64 // admissions begun, and
	admitted atomic.Int64 // admissions ended: a count read meanwhile may be stale

	block     atomic.Pointer[block] // Batch: the /hi numbers being handed out
	hiMu      sync.Mutex            // guards block changes, spareEnd and reserving
	spareEnd  uint64                // Batch: the last number of the block reserved ahead; 0: none
	reserving bool                  // Batch: a block is being reserved ahead
	hiClosed  bool                  // Batch: Close has begun: no more blocks
	reserveWG sync.WaitGroup
	reserved  *sync.Cond // on hiMu: signalled when a reservation ahead ends

	dirtyMu sync.Mutex // guards dirty
	dirty   []*entry   // Batch: entries counted or read since the last round

	syncMu sync.Mutex // guards cur
	cur    *round     // Sync: visits for the next round

	roundMu sync.RWMutex // held by the flusher while a round is on the wire

	health  atomic.Pointer[error] // why the last round failed; nil when healthy
	pingErr atomic.Pointer[error] // why the last check between rounds failed
	hiErr   atomic.Pointer[error] // why Redis refused the last /hi reservation (an error reply); nil once one succeeds
	stuck   atomic.Bool           // a round is unanswered
	rounds  atomic.Uint64         // rounds answered
	held    atomic.Int64          // visits in memory not yet confirmed by Redis, as of the last round
	stats   statCounters
	uq      uniques       // the unique visitors (uniques.go)
	kick    chan struct{} // Sync: wakes the flusher; buffered 1
	flushRq chan chan error
	stop    chan struct{}
	done    chan struct{}
	once    sync.Once

	seq  uint64   // owned by the flusher: the last round's number
	work []*entry // owned by the flusher: the round's entries
}

// block is a range of /hi numbers reserved in Redis: next hands them out
// without a lock; a number past end is not handed out, the caller takes
// the next block.
type block struct {
	next atomic.Uint64 // the last number taken (some may be past end)
	end  uint64
}

// entry is one key this instance counts.
type entry struct {
	key   string
	tag   string // P{k<hex>}
	total string // the total's name
	group uint16
	ready chan struct{} // closed once admitted and loaded
	err   error         // why it could not be; read after ready
	// dead is set, under mu, once the entry is out of entries: its key was
	// deleted (here, or elsewhere as a round learned). Visits retry with a
	// new entry, which admits the key again.
	dead atomic.Bool

	mu        sync.Mutex // guards the fields below
	base      uint64     // Batch: Redis's total as of the last read
	baseDay   store.Day  // Batch: the day of baseToday
	baseToday uint64     // Batch: Redis's count of baseDay
	fresh     uint64     // Batch: the round that last read base
	pend      []dayDelta // Batch: visits not yet sent
	pendN     uint64
	flight    []dayDelta // visits sent and not yet confirmed
	flightN   uint64
	queued    bool   // Batch: in dirty
	gen       uint64 // Batch: the key's generation that pend is counted under
	flightGen uint64 // Batch: the generation flight was counted under
	locked    bool   // Batch: the key is locked, as of the last read
	// justAdmitted: no round has answered for the entry since this
	// instance admitted its key; a round that creates the key then needs
	// no admission again.
	justAdmitted bool

	// Owned by the flusher.
	resTotal  uint64
	resDays   []dayDelta // counts per day as Redis returned them
	seen      []dayDelta // Sync: visits already answered, per day
	seenN     uint64
	resLocked bool   // Sync: Redis found the key locked and counted nothing
	resLost   uint64 // Sync: the round's visits Redis counted nothing of, at a bound
}

// dayDelta is a number of visits (or a count) on one day.
type dayDelta struct {
	day store.Day
	n   uint64
}

// round is one Sync round's visits and their answers.
type round struct {
	visits []visit
	done   chan struct{}
	err    error // read after done is closed
}

type visit struct {
	e   *entry
	day store.Day
	c   store.Counts // set by the flusher
	err error        // set by the flusher: why the visit has no counts
}

// statCounters are the flusher's counters, read by [Store.Stats].
type statCounters struct {
	rounds, roundErrors, commands, syncVisits atomic.Uint64
	uniqueCommands, keysSent, reserves        atomic.Uint64
	errors                                    [numErrKinds]atomic.Uint64
	lastRound                                 atomic.Int64 // Unix ns of the last round answered
}

// Stats are the store's counters for operators.
type Stats struct {
	Rounds      uint64 // rounds answered
	RoundErrors uint64 // attempts that failed (each is sent again)
	Commands    uint64 // scripts sent by rounds, retries included
	SyncVisits  uint64 // Sync: visits the rounds counted
	HeldVisits  int64  // visits in memory not yet confirmed by Redis
}

// Scripts; the flusher and the subcommands run them.
var (
	//go:embed lua/apply.lua
	applySrc string
	//go:embed lua/admit.lua
	admitSrc string
	//go:embed lua/giveback.lua
	givebackSrc string
	//go:embed lua/atleast.lua
	atleastSrc string
	//go:embed lua/owner.lua
	ownerSrc string
	//go:embed lua/migrate.lua
	migrateSrc string
	//go:embed lua/tokendel.lua
	tokenDelSrc string
	//go:embed lua/create.lua
	createSrc string
	//go:embed lua/hit.lua
	hitSrc string

	applySHA    = sha(applySrc)
	admitSHA    = sha(admitSrc)
	givebackSHA = sha(givebackSrc)
	atleastSHA  = sha(atleastSrc)
	ownerSHA    = sha(ownerSrc)
	migrateSHA  = sha(migrateSrc)
	tokenDelSHA = sha(tokenDelSrc)
	createSHA   = sha(createSrc)
	hitSHA      = sha(hitSrc)
)

func sha(s string) string {
	h := sha1.Sum([]byte(s))
	return hex.EncodeToString(h[:])
}

// ErrUnavailable is wrapped by the errors of calls that need Redis while
// it does not answer.
var ErrUnavailable = errors.New("redis unavailable")

// ErrOutcomeUnknown is wrapped by the error of a Sync visit whose round
// Close gave up on while Redis answered neither the round nor the check
// of whether it had applied it: the visit may have counted. It is the
// one error of Visit after which the visit may have counted.
// It is store.ErrOutcomeUnknown, which the web layer tells apart.
var ErrOutcomeUnknown = store.ErrOutcomeUnknown

// Open connects to Redis as o says and returns a store on it. It fails if
// Redis does not answer. The caller must call Close, which sends what is
// pending and gives back the unused /hi numbers.
func Open(o Options) (*Store, error) {
	c, err := Connect(o)
	if err != nil {
		return nil, err
	}
	return open(c, o)
}

// Connect returns a rueidis client for o's URL, password and cluster,
// after a PING. The caller must close it.
func Connect(o Options) (rueidis.Client, error) {
	if o.URL == "" {
		o.URL = DefaultURL
	}
	opt, err := rueidis.ParseURL(o.URL)
	if err != nil {
		// url.Error quotes the URL, password and all: keep only why.
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return nil, fmt.Errorf("-redis-url %s: %w", redact(o.URL), err)
	}
	if o.Password != "" {
		opt.Password = o.Password
	}
	if len(o.Cluster) > 0 {
		opt.InitAddress = o.Cluster
		opt.ShuffleInit = true
	}
	// Counts are read back by the rounds the flusher sends anyway (see
	// the package doc); tracking would add an invalidation per write.
	opt.DisableCache = true
	if o.Timeout <= 0 {
		o.Timeout = 2 * time.Second
	}
	opt.ConnWriteTimeout = o.Timeout
	opt.Dialer.Timeout = o.Timeout
	where := o.URL
	if len(o.Cluster) > 0 {
		where = "cluster " + strings.Join(o.Cluster, ",")
	}
	c, err := rueidis.NewClient(opt)
	if err != nil {
		return nil, fmt.Errorf("connect to redis at %s: %w", redact(where), err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), o.Timeout)
	defer cancel()
	if err := c.Do(ctx, c.B().Ping().Build()).Error(); err != nil {
		c.Close()
		return nil, fmt.Errorf("connect to redis at %s: %w", redact(where), err)
	}
	if len(o.Cluster) > 0 && c.Mode() != rueidis.ClientModeCluster {
		c.Close()
		return nil, fmt.Errorf("-redis-cluster %s: the server is not a Redis Cluster", strings.Join(o.Cluster, ","))
	}
	return c, nil
}

// redact hides the password of a redis URL.
func redact(s string) string {
	if i, j := strings.Index(s, "://"), strings.LastIndex(s, "@"); i >= 0 && j > i {
		if k := strings.Index(s[i+3:j], ":"); k >= 0 {
			return s[:i+3+k+1] + "xxxxx" + s[j:]
		}
	}
	return s
}

func checkPrefix(p string) error {
	if strings.ContainsAny(p, "{}") {
		return fmt.Errorf("-redis-prefix %q: it may not hold { or }, which would move keys between cluster slots", p)
	}
	return nil
}

func open(c rueidis.Client, o Options) (*Store, error) {
	if o.Prefix == "" {
		o.Prefix = DefaultPrefix
	}
	if err := checkPrefix(o.Prefix); err != nil {
		c.Close()
		return nil, err
	}
	if o.FlushInterval <= 0 {
		o.FlushInterval = 100 * time.Millisecond
	}
	if o.Timeout <= 0 {
		o.Timeout = 2 * time.Second
	}
	if o.CloseTimeout <= 0 {
		o.CloseTimeout = 10 * time.Second
	}
	if o.HiBlock == 0 {
		o.HiBlock = 1000
	}
	if o.MaxPendingUniques <= 0 {
		o.MaxPendingUniques = 1 << 20
	}
	var id [8]byte
	rand.Read(id[:])
	s := &Store{
		c:              c,
		o:              o,
		roundDurations: newRoundDurations(),
		n:              newNames(o.Prefix),
		id:             hex.EncodeToString(id[:]),
		cal:            tally.NewCalendar(o.Now),
		cluster:        c.Mode() == rueidis.ClientModeCluster,
		kick:           make(chan struct{}, 1),
		flushRq:        make(chan chan error),
		stop:           make(chan struct{}),
		done:           make(chan struct{}),
		cur:            &round{done: make(chan struct{})},
	}
	s.reserved = sync.NewCond(&s.hiMu)
	ctx, cancel := context.WithTimeout(context.Background(), o.Timeout)
	defer cancel()
	n, err := migrate(ctx, c, s.n)
	if err != nil {
		s.cal.Stop()
		c.Close()
		return nil, fmt.Errorf("redis: count keys: %w", err)
	}
	s.keyCount.Store(n)
	s.checkConfig(ctx)
	go s.flusher()
	return s, nil
}

// checkConfig warns in the log for each Redis node that may lose what it
// confirmed without an error:
//   - one whose maxmemory-policy is not noeviction may evict a count, a
//     day, a lock or a round's sequence number (a resent round would then
//     count twice), where noeviction refuses writes, which the store
//     reports;
//   - one that keeps no append-only file loses, when it restarts, what it
//     confirmed since its last snapshot, and one whose appendfsync is not
//     always may answer a write up to two seconds before the write reaches
//     its file (it holds it back while an earlier fsync is slow), so a
//     crash loses visits it confirmed and hands /hi numbers out again.
//
// A node that does not let CONFIG GET be run (some managed services) is
// noted at info level.
func (s *Store) checkConfig(ctx context.Context) {
	for addr, node := range s.c.Nodes() {
		m, err := node.Do(ctx, node.B().ConfigGet().Parameter("maxmemory-policy", "appendonly", "appendfsync").Build()).AsStrMap()
		if err != nil {
			s.o.Log.Info().Err(err).Str("node", addr).Msg("redis: could not read maxmemory-policy, appendonly and appendfsync; they should be noeviction, yes and always, or Redis may lose counts it confirmed")
			continue
		}
		if p, ok := m["maxmemory-policy"]; ok && p != "noeviction" {
			s.o.Log.Warn().Str("node", addr).Str("maxmemory-policy", p).
				Msg("redis may evict keys when full and so lose counts, locks or round numbers silently: set maxmemory-policy noeviction")
		}
		switch aof, fsync := m["appendonly"], m["appendfsync"]; {
		case aof == "no":
			s.o.Log.Warn().Str("node", addr).Str("appendonly", aof).
				Msg("redis keeps no append-only file: a restart of Redis loses the counts it confirmed since its last snapshot and hands /hi numbers out again; set appendonly yes and appendfsync always")
		case aof == "yes" && fsync != "always" && fsync != "":
			s.o.Log.Warn().Str("node", addr).Str("appendfsync", fsync).
				Msg("redis may confirm a write before it reaches its append-only file: a crash of Redis can lose visits it confirmed and hand /hi numbers out again; set appendfsync always")
		}
	}
}

// migrate moves the set of every key of an older store into the sorted
// set List reads, if there is one, and returns how many keys the sorted
// set holds.
func migrate(ctx context.Context, c rueidis.Client, n names) (int64, error) {
	mig := script{src: migrateSrc, sha: migrateSHA, keys: []string{n.oldSet, n.index}}
	return (&Store{c: c}).doScripts(ctx, []script{mig})[0].AsInt64()
}

// Rollover makes a new UTC day, if one has begun on the store's clock,
// the day visits count towards. The store does it itself at each UTC
// midnight; tests with a manual clock call it after moving the clock.
func (s *Store) Rollover() { s.cal.Rollover() }

// groupOf returns the group of slots a counter's names belong to.
func (s *Store) groupOf(tag string) uint16 {
	sl := slotOf(tag)
	if s.cluster {
		return sl
	}
	return sl >> 8 // 64 groups
}

// Hit implements [store.Store].
func (s *Store) Hit(ctx context.Context) (uint64, error) {
	if s.o.Durability == store.Sync {
		ctx, cancel := context.WithTimeout(ctx, s.o.Timeout)
		defer cancel()
		n, err := s.hitScript(ctx, 1)
		s.noteHi(err)
		if err != nil {
			return 0, fmt.Errorf("redis: /hi: %w: %w", ErrUnavailable, err)
		}
		if n < 0 || n > store.MaxHits {
			return 0, store.ErrHiExhausted
		}
		return uint64(n), nil
	}
	for {
		b := s.block.Load()
		if b != nil {
			n := b.next.Add(1)
			if n > store.MaxHits {
				return 0, store.ErrHiExhausted // the last block passed the bound
			}
			if n <= b.end {
				if n == b.end-s.o.HiBlock/2 {
					s.reserveAhead()
				}
				return n, nil
			}
		}
		if err := s.nextBlock(ctx, b); err != nil {
			return 0, err
		}
	}
}

// reserveAhead reserves the next block in the background, so that no
// request waits for Redis when this one runs out.
func (s *Store) reserveAhead() {
	s.hiMu.Lock()
	defer s.hiMu.Unlock()
	if s.spareEnd != 0 || s.reserving || s.hiClosed {
		return
	}
	s.reserving = true
	s.reserveWG.Add(1)
	go func() {
		defer s.reserveWG.Done()
		end, err := s.reserve(context.Background())
		s.hiMu.Lock()
		defer s.hiMu.Unlock()
		s.reserving = false
		s.reserved.Broadcast()
		if err == nil {
			s.spareEnd = end
		}
	}()
}

// nextBlock replaces the used-up block old with the one reserved ahead,
// or, if there is none, reserves one now.
func (s *Store) nextBlock(ctx context.Context, old *block) error {
	s.hiMu.Lock()
	defer s.hiMu.Unlock()
	for s.block.Load() == old && s.spareEnd == 0 && s.reserving {
		s.reserved.Wait() // the block ahead is on its way: two would leave a gap
	}
	if s.block.Load() != old {
		return nil // another caller replaced it
	}
	if s.hiClosed {
		return fmt.Errorf("redis: /hi: %w", errClosed)
	}
	end := s.spareEnd
	if end != 0 {
		s.spareEnd = 0
	} else {
		var err error
		if end, err = s.reserve(ctx); err != nil {
			return err
		}
	}
	nb := &block{end: end}
	nb.next.Store(end - s.o.HiBlock)
	s.block.Store(nb)
	return nil
}

// reserve reserves a block of HiBlock /hi numbers and returns its last.
func (s *Store) reserve(ctx context.Context) (uint64, error) {
	ctx, cancel := context.WithTimeout(ctx, s.o.Timeout)
	defer cancel()
	end, err := s.hitScript(ctx, s.o.HiBlock)
	s.noteHi(err)
	if err != nil {
		s.stats.errors[errReserve].Add(1)
		return 0, fmt.Errorf("redis: reserve /hi numbers: %w: %w", ErrUnavailable, err)
	}
	if end < 0 {
		return 0, store.ErrHiExhausted
	}
	s.stats.reserves.Add(1)
	return uint64(end), nil
}

// hitScript adds n to the /hi counter, unless it is at store.MaxHits
// (lua/hit.lua): it returns the counter after the add, or -1.
func (s *Store) hitScript(ctx context.Context, n uint64) (int64, error) {
	sc := script{src: hitSrc, sha: hitSHA, keys: []string{s.n.hi},
		args: []string{strconv.FormatUint(store.MaxHits, 10), strconv.FormatUint(n, 10)}}
	res := s.doScripts(ctx, []script{sc})[0]
	if n, err := res.AsInt64(); err == nil {
		return n, nil // -1: at the bound
	}
	v, err := res.ToString()
	if err != nil {
		return 0, err
	}
	return strconv.ParseInt(v, 10, 64)
}

// noteHi keeps, for Health, the error of a /hi reservation that Redis
// refused with an error reply (a counter that would overflow, or that is
// not a number: every /hi fails until it is mended), and forgets it once
// one succeeds. A Redis that does not answer is the check's to report.
func (s *Store) noteHi(err error) {
	switch _, refused := rueidis.IsRedisErr(err); {
	case err == nil:
		if s.hiErr.Load() != nil {
			s.hiErr.Store(nil)
		}
	case refused:
		herr := fmt.Errorf("redis refuses to hand out /hi numbers: %w", err)
		s.hiErr.Store(&herr)
	}
}

// load returns key's entry, or nil. The key is viewed as a string
// without a copy: sync.Map.Load keeps nothing.
func (s *Store) load(key []byte) *entry {
	if e, ok := s.entries.Load(unsafe.String(unsafe.SliceData(key), len(key))); ok {
		return e.(*entry)
	}
	return nil
}

// entry returns key's entry, admitted to the set of every key (and, in
// Batch, with its counts read), making it if needed. It returns
// ErrTooManyKeys if the key is new and the set is full.
func (s *Store) entry(ctx context.Context, key []byte) (*entry, error) {
	e, _, err := s.entryFor(ctx, key, admitAny)
	return e, err
}

// admitMode is what an admission asks of lua/admit.lua.
type admitMode int

const (
	admitAny  admitMode = iota // make the key if new, within the limit (owners)
	admitOld                   // a visit that may not make the key: store.ErrNewKey if new
	admitMake                  // a visit that may make it, told whether it did
)

// entryFor is entry for an admission in mode: it also reports whether
// this call's admission made the key in Redis (admitMake only). A key
// this instance holds is admitted already, made by nobody now. An entry
// refused as new (admitOld) is dropped at once, so that a caller who may
// make the key, waiting on it, admits it anew.
func (s *Store) entryFor(ctx context.Context, key []byte, mode admitMode) (*entry, bool, error) {
	for {
		e := s.load(key)
		if e == nil {
			k := string(key)
			tag := s.n.tag(key)
			ne := &entry{key: k, tag: tag, total: total(tag), group: s.groupOf(tag), ready: make(chan struct{})}
			v, loaded := s.entries.LoadOrStore(k, ne)
			e = v.(*entry)
			if !loaded {
				made, err := s.admit(ctx, e, mode)
				if err != nil {
					e.err = err
					s.entries.Delete(k)
					close(e.ready)
					return nil, false, err
				}
				close(e.ready)
				return e, made, nil
			}
		}
		select {
		case <-e.ready:
		default:
			select {
			case <-e.ready:
			case <-ctx.Done():
				return nil, false, ctx.Err()
			}
		}
		if e.err == store.ErrNewKey && mode != admitOld {
			continue // refused to a visit that may not make it: this one may
		}
		if e.err != nil {
			return nil, false, e.err
		}
		return e, false, nil
	}
}

// admit adds e's key to the set of every key and, in Batch, reads its
// counts, in one round trip, and reports whether it made the key (in
// admitMake alone).
func (s *Store) admit(ctx context.Context, e *entry, mode admitMode) (bool, error) {
	ctx, cancel := context.WithTimeout(ctx, s.o.Timeout)
	defer cancel()
	s.admits.Add(1)
	defer s.admitted.Add(1)
	today := s.cal.Today()
	sc := s.admitScript(e.key)
	switch mode {
	case admitOld:
		sc.args = append(sc.args, "visit", "0")
	case admitMake:
		sc.args = append(sc.args, "visit", "1")
	}
	admit := []script{sc}
	var res []rueidis.RedisResult
	if s.o.Durability == store.Batch {
		res = s.doScripts(ctx, admit, s.c.B().Mget().Key(e.total, dayKey(e.tag, today), genKey(e.tag), lockKey(e.tag)).Build())
	} else {
		res = s.doScripts(ctx, admit)
	}
	n, made, err := admitted(res[0], mode)
	if err != nil {
		s.stats.errors[errAdmit].Add(1)
		return false, fmt.Errorf("redis: admit key: %w: %w", ErrUnavailable, err)
	}
	switch {
	case n == -3:
		return false, store.ErrNewKey
	case n < 0:
		return false, store.ErrTooManyKeys
	}
	s.seeKeys(n)
	e.justAdmitted = true
	if s.o.Durability == store.Batch {
		var v [4]uint64
		if err := readInts(res[1], v[:]); err != nil {
			return false, fmt.Errorf("redis: read counts: %w: %w", ErrUnavailable, err)
		}
		e.base, e.baseDay, e.baseToday, e.fresh = v[0], today, v[1], s.rounds.Load()
		e.gen, e.flightGen, e.locked = v[2], v[2], v[3] != 0
	}
	return made, nil
}

// admitted reads lua/admit.lua's answer to an admission in mode: a
// number, or {n, made} for a visit's.
func admitted(r rueidis.RedisResult, mode admitMode) (n int64, made bool, err error) {
	if mode == admitAny {
		n, err = r.AsInt64()
		return n, false, err
	}
	vs, err := r.ToArray()
	if err == nil && len(vs) != 2 {
		err = fmt.Errorf("admit.lua answered %d values, want 2", len(vs))
	}
	if err != nil {
		return 0, false, err
	}
	if n, err = vs[0].AsInt64(); err != nil {
		return 0, false, err
	}
	m, err := vs[1].AsInt64()
	return n, m == 1, err
}

// admitScript is the run of lua/admit.lua that admits key within the
// limit.
func (s *Store) admitScript(key string) script {
	return script{src: admitSrc, sha: admitSHA, keys: []string{s.n.index}, args: []string{key, strconv.Itoa(s.o.MaxKeys)}}
}

// seeKeys records that the set of every key holds at least n keys.
func (s *Store) seeKeys(n int64) {
	for {
		old := s.keyCount.Load()
		if n <= old || s.keyCount.CompareAndSwap(old, n) {
			return
		}
	}
}

// script is one run of a Lua script.
type script struct {
	src, sha   string
	keys, args []string
}

func (c script) evalsha(cl rueidis.Client) rueidis.Completed {
	return cl.B().Evalsha().Sha1(c.sha).Numkeys(int64(len(c.keys))).Key(c.keys...).Arg(c.args...).Build()
}

func (c script) eval(cl rueidis.Client) rueidis.Completed {
	return cl.B().Eval().Script(c.src).Numkeys(int64(len(c.keys))).Key(c.keys...).Arg(c.args...).Build()
}

// doScripts runs the scripts by EVALSHA and then the extra commands, in
// one pipelined batch, and returns their results in that order. A script
// Redis does not know (a restarted Redis forgets them; NOSCRIPT means it
// did not run) is sent again as EVAL, which also loads it.
func (s *Store) doScripts(ctx context.Context, scripts []script, extra ...rueidis.Completed) []rueidis.RedisResult {
	cmds := make(rueidis.Commands, 0, len(scripts)+len(extra))
	for _, sc := range scripts {
		cmds = append(cmds, sc.evalsha(s.c))
	}
	cmds = append(cmds, extra...)
	res := s.c.DoMulti(ctx, cmds...)
	var again rueidis.Commands
	var at []int
	for i := range scripts {
		if re, ok := rueidis.IsRedisErr(res[i].Error()); ok && re.IsNoScript() {
			again = append(again, scripts[i].eval(s.c))
			at = append(at, i)
		}
	}
	if len(again) > 0 {
		for j, r := range s.c.DoMulti(ctx, again...) {
			res[at[j]] = r
		}
	}
	return res
}

// readInts reads an MGET's answer of len(out) numbers into out; a name
// that does not exist reads 0.
func readInts(r rueidis.RedisResult, out []uint64) error {
	vs, err := r.ToArray()
	if err != nil {
		return err
	}
	if len(vs) != len(out) {
		return fmt.Errorf("want %d values, got %d", len(out), len(vs))
	}
	for i, v := range vs {
		out[i] = 0
		if v.IsNil() {
			continue
		}
		s, err := v.ToString()
		if err != nil {
			return err
		}
		if out[i], err = strconv.ParseUint(s, 10, 64); err != nil {
			return err
		}
	}
	return nil
}

// readCounts reads the counts of key from Redis: its total, today's
// count and lock.
func (s *Store) readCounts(ctx context.Context, key []byte, today store.Day) (store.Counts, error) {
	tag := s.n.tag(key)
	ctx, cancel := context.WithTimeout(ctx, s.o.Timeout)
	defer cancel()
	var v [3]uint64
	if err := readInts(s.c.Do(ctx, s.c.B().Mget().Key(total(tag), dayKey(tag, today), lockKey(tag)).Build()), v[:]); err != nil {
		s.stats.errors[errRead].Add(1)
		return store.Counts{}, fmt.Errorf("redis: read counts: %w: %w", ErrUnavailable, err)
	}
	return store.Counts{Total: v[0], Today: v[1], Locked: v[2] != 0}, nil
}

// Visit implements [store.Counter]: whether key is new, and its
// admission if it may be made, are one run of lua/admit.lua, in the
// round trip that reads its counts; a key this instance holds needs
// none.
func (s *Store) Visit(ctx context.Context, key []byte, create bool) (store.Counts, bool, error) {
	mode := admitOld
	if create {
		mode = admitMake
	}
	return s.count(ctx, key, mode)
}

// count counts one visit to key, admitted in mode, and reports whether
// the admission made it.
func (s *Store) count(ctx context.Context, key []byte, mode admitMode) (store.Counts, bool, error) {
	if len(key) > store.MaxKeyBytes {
		return store.Counts{}, false, store.ErrKeyTooLong
	}
	if s.o.Durability == store.Sync {
		return s.incrSync(ctx, key, mode)
	}
	for {
		e, made, err := s.entryFor(ctx, key, mode)
		if err != nil {
			return store.Counts{}, false, err
		}
		today := s.cal.Today()
		e.mu.Lock()
		if e.dead.Load() {
			e.mu.Unlock()
			continue // deleted: a new entry admits the key again
		}
		c := e.counts(today)
		switch {
		case e.locked:
		case c.Total >= store.MaxTotal || c.Today >= store.MaxDay:
			// At a bound as this instance sees it: counted nothing (Redis
			// drops what other instances send past it).
			c.Saturated = true
		default:
			e.pend = addDay(e.pend, today, 1)
			e.pendN++
			c.Total++
			c.Today++
		}
		q := !e.queued
		e.queued = true // locked, the next round reads whether it still is
		e.mu.Unlock()
		if q {
			s.queue(e)
		}
		return c, made, nil
	}
}

func (s *Store) queue(e *entry) {
	s.dirtyMu.Lock()
	s.dirty = append(s.dirty, e)
	s.dirtyMu.Unlock()
}

// addDay adds n visits on day d to ds.
func addDay(ds []dayDelta, d store.Day, n uint64) []dayDelta {
	for i := len(ds) - 1; i >= 0; i-- {
		if ds[i].day == d {
			ds[i].n += n
			return ds
		}
	}
	return append(ds, dayDelta{d, n})
}

func onDay(ds []dayDelta, d store.Day) uint64 {
	for i := len(ds) - 1; i >= 0; i-- {
		if ds[i].day == d {
			return ds[i].n
		}
	}
	return 0
}

// counts returns what e shows in Batch: Redis's counts as last read plus
// what this instance has not yet had confirmed (less a round in flight
// that a Set made stale: Redis will drop it). e.mu must be held.
func (e *entry) counts(today store.Day) store.Counts {
	c := store.Counts{Total: e.base + e.pendN, Locked: e.locked}
	if e.baseDay == today {
		c.Today = e.baseToday
	}
	c.Today += onDay(e.pend, today)
	if e.flightGen == e.gen {
		c.Total += e.flightN
		c.Today += onDay(e.flight, today)
	}
	return c
}

func (s *Store) incrSync(ctx context.Context, key []byte, mode admitMode) (store.Counts, bool, error) {
	if s.stuck.Load() {
		return store.Counts{}, false, s.downErr()
	}
	e, made, err := s.entryFor(ctx, key, mode)
	for err == nil && e.dead.Load() {
		e, made, err = s.entryFor(ctx, key, mode) // deleted: a new entry admits the key again
	}
	if err != nil {
		return store.Counts{}, false, err
	}
	today := s.cal.Today()
	s.syncMu.Lock()
	r := s.cur
	i := len(r.visits)
	r.visits = append(r.visits, visit{e: e, day: today})
	s.syncMu.Unlock()
	select {
	case s.kick <- struct{}{}:
	default:
	}
	select {
	case <-r.done:
	default:
		select {
		case <-r.done:
		case <-ctx.Done():
			// The client left. Its visit may still count: no answer
			// reaches it, so none can say otherwise.
			return store.Counts{}, false, ctx.Err()
		}
	}
	if r.err != nil {
		return store.Counts{}, false, r.err
	}
	if v := &r.visits[i]; v.err != nil {
		return store.Counts{}, false, v.err
	}
	return r.visits[i].c, made, nil
}

func (s *Store) downErr() error {
	if p := s.health.Load(); p != nil {
		return fmt.Errorf("%w: %w", ErrUnavailable, *p)
	}
	return ErrUnavailable
}

// Get implements [store.Store].
func (s *Store) Get(ctx context.Context, key []byte) (store.Counts, error) {
	if len(key) > store.MaxKeyBytes {
		return store.Counts{}, store.ErrKeyTooLong
	}
	today := s.cal.Today()
	e := s.load(key)
	if s.o.Durability == store.Batch && e != nil {
		select {
		case <-e.ready:
		default:
			e = nil // being admitted: read Redis
		}
	}
	if s.o.Durability == store.Sync || e == nil || e.err != nil || e.dead.Load() {
		return s.readCounts(ctx, key, today)
	}
	if s.rounds.Load() > e.freshRound()+2 {
		s.refresh(ctx, e, today) // best effort: a failure shows the counts as last read
	}
	e.mu.Lock()
	c := e.counts(today)
	q := !e.queued
	e.queued = true // the next round reads it again
	e.mu.Unlock()
	if q {
		s.queue(e)
	}
	return c, nil
}

func (e *entry) freshRound() uint64 {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.fresh
}

// refresh reads e's counts from Redis, for an entry no round has read
// lately. No round is on the wire meanwhile, so what Redis holds either
// has all of e.flight or none of it; the read is used only when nothing
// is in flight.
func (s *Store) refresh(ctx context.Context, e *entry, today store.Day) {
	s.roundMu.RLock()
	defer s.roundMu.RUnlock()
	ctx, cancel := context.WithTimeout(ctx, s.o.Timeout)
	defer cancel()
	var v [4]uint64
	if err := readInts(s.c.Do(ctx, s.c.B().Mget().Key(e.total, dayKey(e.tag, today), genKey(e.tag), lockKey(e.tag)).Build()), v[:]); err != nil {
		return
	}
	e.mu.Lock()
	// Of another generation (a Set or Delete elsewhere), the counts wait
	// for the next round, which drops what was counted under the old one.
	if e.flightN == 0 && v[2] == e.gen {
		e.base, e.baseDay, e.baseToday, e.fresh = v[0], today, v[1], s.rounds.Load()
		if e.locked = v[3] != 0; e.locked {
			e.pend, e.pendN = e.pend[:0], 0
		}
	}
	e.mu.Unlock()
}

// Days implements [store.Store].
func (s *Store) Days(ctx context.Context, key []byte, n int) (store.Daily, error) {
	if len(key) > store.MaxKeyBytes {
		return store.Daily{}, store.ErrKeyTooLong
	}
	if n < 1 || n > store.MaxDays {
		return store.Daily{}, fmt.Errorf("days: n = %d, want 1..%d", n, store.MaxDays)
	}
	today := s.cal.Today()
	tag := s.n.tag(key)
	names := make([]string, n)
	for i := range n {
		names[i] = dayKey(tag, today-store.Day(n-1-i))
	}
	d := store.Daily{Last: today.Time(), Counts: make([]uint64, n)}
	s.roundMu.RLock()
	defer s.roundMu.RUnlock()
	ctx, cancel := context.WithTimeout(ctx, s.o.Timeout)
	defer cancel()
	vs, err := s.c.Do(ctx, s.c.B().Mget().Key(names...).Build()).ToArray()
	if err != nil {
		s.stats.errors[errRead].Add(1)
		return store.Daily{}, fmt.Errorf("redis: read days: %w: %w", ErrUnavailable, err)
	}
	for i, v := range vs {
		if v.IsNil() {
			continue
		}
		str, err := v.ToString()
		if err != nil {
			return store.Daily{}, fmt.Errorf("redis: read days: %w", err)
		}
		if d.Counts[i], err = strconv.ParseUint(str, 10, 64); err != nil {
			return store.Daily{}, fmt.Errorf("redis: read days: %w", err)
		}
	}
	if e := s.load(key); e != nil && s.o.Durability == store.Batch {
		e.mu.Lock()
		for i := range d.Counts {
			day := today - store.Day(n-1-i)
			if day == today && e.baseDay == today {
				// Visits in flight may be in Redis already (a round whose
				// answer was lost): Redis's count plus what was not sent,
				// or the entry's own view (read before the round, plus
				// the round, plus what was not sent), whichever is more;
				// never Redis's count plus the round again.
				d.Counts[i] = max(d.Counts[i]+onDay(e.pend, day), e.counts(today).Today)
				continue
			}
			d.Counts[i] += onDay(e.pend, day)
			if e.flightGen == e.gen {
				d.Counts[i] += onDay(e.flight, day)
			}
		}
		e.mu.Unlock()
	}
	return d, nil
}

// Keys implements [store.Store]: the size of the set of every key as this
// instance last saw it (at its last admission, or flush interval).
func (s *Store) Keys() int { return int(s.keyCount.Load()) }

// Health implements [store.Store].
func (s *Store) Health() error {
	if p := s.health.Load(); p != nil {
		return *p
	}
	if p := s.pingErr.Load(); p != nil {
		return *p
	}
	if p := s.hiErr.Load(); p != nil {
		return *p
	}
	return nil
}

// Held reports how many earlier days of key the store holds in memory.
func (s *Store) Held(key []byte) int {
	e := s.load(key)
	if e == nil {
		return 0
	}
	today := s.cal.Today()
	e.mu.Lock()
	defer e.mu.Unlock()
	n := 0
	for _, ds := range [][]dayDelta{e.pend, e.flight} {
		for _, d := range ds {
			if d.day < today {
				n++
			}
		}
	}
	return n
}

// Stats returns the store's counters.
func (s *Store) Stats() Stats {
	return Stats{
		Rounds:      s.stats.rounds.Load(),
		RoundErrors: s.stats.roundErrors.Load(),
		Commands:    s.stats.commands.Load(),
		SyncVisits:  s.stats.syncVisits.Load(),
		HeldVisits:  s.held.Load(),
	}
}

// Flush sends a round of everything counted so far and waits for its
// answer.
func (s *Store) Flush() error {
	ch := make(chan error, 1)
	select {
	case s.flushRq <- ch:
		return <-ch
	case <-s.done:
		return errors.New("redisstore: closed")
	}
}

// errClosed answers a /hi visit that arrives while the store closes.
var errClosed = errors.New("store closed")

// Close sends what is pending (trying for up to Options.CloseTimeout
// while Redis does not answer), gives back the unused /hi numbers of the
// block if no one reserved after it, and disconnects. It returns an
// error if visits could not be sent.
func (s *Store) Close() error {
	var err error
	s.once.Do(func() {
		close(s.stop)
		<-s.done
		if h := s.held.Load(); h > 0 {
			err = fmt.Errorf("redis: %d visits could not be sent: %w", h, s.Health())
		}
		s.hiMu.Lock()
		s.hiClosed = true // no block is reserved from here on
		s.hiMu.Unlock()
		s.reserveWG.Wait()
		s.hiMu.Lock()
		if s.o.Durability == store.Batch {
			// What was reserved last, and from where on it is unused. One
			// swap: a Hit racing with Close either got its number before
			// it (and the number is not given back) or finds the block
			// used up and is refused.
			var end, unused uint64
			if b := s.block.Load(); b != nil {
				end, unused = b.end, min(b.next.Swap(b.end), b.end)+1
			}
			switch {
			case s.spareEnd != 0 && s.spareEnd-s.o.HiBlock == end:
				end = s.spareEnd // contiguous: both go back
			case s.spareEnd != 0:
				end, unused = s.spareEnd, s.spareEnd-s.o.HiBlock+1 // only the spare
			}
			if end != 0 && unused <= end {
				ctx, cancel := context.WithTimeout(context.Background(), s.o.Timeout)
				give := script{src: givebackSrc, sha: givebackSHA, keys: []string{s.n.hi},
					args: []string{strconv.FormatUint(end, 10), strconv.FormatUint(unused-1, 10)}}
				if res := s.doScripts(ctx, []script{give}); res[0].Error() != nil {
					s.o.Log.Warn().Err(res[0].Error()).Msg("redis: could not give back unused /hi numbers; they are skipped")
				}
				cancel()
			}
			s.spareEnd = 0
		}
		s.hiMu.Unlock()
		s.cal.Stop()
		s.c.Close()
	})
	return err
}
