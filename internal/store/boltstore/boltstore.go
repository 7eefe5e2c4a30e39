// Package boltstore is the durable [store.Store]: counts live in memory
// and reach one bbolt file in the data directory.
//
// One goroutine, the flusher, is the only writer. It takes the keys that
// changed since its last pass and writes their absolute counts in one
// bbolt transaction, which bbolt makes durable with fdatasync before it
// returns. Because there is one writer writing absolute values, no two
// writes can land out of order, and a write that is repeated is harmless.
//
// With [store.Batch] durability the flusher runs every flush interval
// and requests never wait: a crash loses the visits answered since the
// last written pass began: at most one interval plus the length of the
// pass then writing
// (or, while the file is checked after Open, nothing being
// written until the check passes, every visit since Open). The /hi numbers are reserved ahead, as database sequences do
// with a cache: the flusher makes a range durable before any number in it
// is handed out, so no number is given twice across a crash (a crash
// skips the unused rest of the range; a clean stop writes the exact last
// number, so a restart skips none).
//
// With [store.Sync] durability a visit is a request to the flusher: the
// flusher counts it, makes it durable, and only then answers. Visits that
// arrive while a pass is writing share the next one: group commit. A pass
// appends one record to a write-ahead log (wal.go) and makes it durable
// with one fdatasync before it answers. Through AIO, or with more than
// one P, the passes are pipelined: up to four records are in flight, each
// synced by a syncer goroutine of its own side by side (concurrent syncs
// of one file share the device's flushes), while the next pass gathers
// its visits; a pass is answered once its record and every record before
// it are durable.
// The bbolt file catches up every flush interval, as in batch mode, and
// the log starts over. A pass that fails takes its visits back before any
// later pass can write them, so an error means the visit did not count.
//
// A failed write keeps the changes in memory, marks the store unhealthy
// (see [Store.Health]) and is retried on the next pass. A failure tied to
// one key (see format.go: the encoding leaves none that bbolt could
// refuse, but the flusher does not rely on it) never holds back the
// others: that key is reported and retried alone while the rest commit.
//
// Everything about the file is in file.go (opening, checking, migrating)
// and format.go (the layout and its checksums); export and import are in
// backup.go; the store's Prometheus collectors in metrics.go.
package boltstore

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"path/filepath"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"
	bolt "go.etcd.io/bbolt"

	"visitors/internal/store"
	"visitors/internal/store/tally"
)

var _ store.Store = (*Store)(nil)

// Options configure [Open].
type Options struct {
	Dir           string           // the data directory, created if missing
	Durability    store.Durability // store.Batch or store.Sync
	FlushInterval time.Duration    // Batch: how often changes are written; default 100ms
	MaxKeys       int              // most distinct keys; <= 0 means no limit
	Now           func() time.Time // the clock that says which UTC day it is; nil: time.Now
	Log           zerolog.Logger   // flush failures and recoveries
	// OnFlush, if set, is called by the flusher after each pass that
	// wrote something or failed, with when it began (before it took the
	// changes it writes), how long it took and its error. It must not
	// block.
	OnFlush func(begun time.Time, d time.Duration, err error)

	// holdCheck, if set, holds the background check of the file until
	// it is closed: a test's seam.
	holdCheck chan struct{}
}

// Store is the durable [store.Store]. It is safe for concurrent use.
type Store struct {
	hits     tally.Counter // the last /hi number handed out
	reserved atomic.Uint64 // Batch: /hi numbers up to here are durable
	fileHits uint64        // the file's /hi counter when the final pass began; only the flusher uses it
	cal      *tally.Calendar
	keys     *tally.Map[entry]
	journal  atomic.Pointer[entry] // entries changed since the flusher took them

	db   *bolt.DB
	path string
	o    Options

	health   atomic.Pointer[error] // why the last pass failed, nil when healthy
	flushes  prometheus.Histogram  // how long flush passes took, for Collectors
	stats    statCounters
	waiters  atomic.Int64         // requests waiting for a pass
	pending  atomic.Uint64        // visits acknowledged and not on disk, as of the last pass
	oldest   atomic.Int64         // Unix ns of the first pass that left visits unwritten; 0: none
	arrivals atomic.Uint64        // waits so far: how a pass sees visits still joining
	next     atomic.Pointer[pass] // the flusher pass that has not begun yet
	kick     chan struct{}        // wakes the flusher; buffered 1
	stop     chan struct{}
	done     chan struct{}
	once     sync.Once

	// putFault, when set, fails the write of the keys it returns an
	// error for. Tests use it: no real key fails any more.
	putFault atomic.Pointer[func(key string) error]
	// importRun, when set, is called by an online import's transaction
	// once it has taken today. Tests use it to bring a midnight there.
	importRun atomic.Pointer[func()]
	// entryMade, when set, is called by newEntry with the entry it hands
	// the map, and replaceGap by replace before it puts the new entry in
	// the map: in the place of the old one, retired, or of none. Tests
	// use them to bring a visit there.
	entryMade  atomic.Pointer[func(*entry)]
	replaceGap atomic.Pointer[func()]
	// logFault, when set, is called after a log record is written and
	// before its fdatasync, and fails the sync with the error it returns.
	logFault atomic.Pointer[func() error]

	// The check of the whole file (checkFile), which runs after Open
	// returns: checked is closed once it has, and damage then holds what
	// it found, nil if nothing. Until checked is closed nothing is
	// written to the file; once damage is set, nothing ever is.
	checked chan struct{}
	damage  atomic.Pointer[error]

	full atomic.Bool // Sync: the next pass commits to the bbolt file (Flush)
	log  *wal        // Sync: the write-ahead log; owned by the flusher

	// Owner operations (owners.go), run by the flusher.
	opMu       sync.Mutex
	ops        []*ownerOp // waiting for the flusher
	opsClosed  bool       // the flusher has stopped
	opsPending atomic.Bool
	incoming   atomic.Pointer[entry] // the entry replace is putting in place

	tokMu  sync.RWMutex
	tokens map[string]store.Token // every token, by ID

	// Owned by the flusher.
	used    uint64            // hits at the previous pass, to size reservations
	writes  []write           // the pass's snapshots
	taken   []*entry          // the pass's entries, from the journal
	days    []tally.DayCount  // their earlier days, back to back
	failing map[*entry]string // keys whose last write failed, with why
	plain   []*entry          // loaded from plain totals: rewritten dated once the file is checked (migrate)
	// Keys that had a day after today in the file at load (the clock
	// went back, or an import of later dates), with the latest such day
	// and its count: until the tally's own latest day reaches it, put
	// writes it in the dated total rather than the tally's earlier day,
	// so that the next load reads today's count from the days bucket and
	// never takes the later day's as absent. Set by load, then read by
	// the flusher alone.
	ahead  map[*entry]tally.DayCount
	marked bool // the file is marked format 3
}

// entry is one key's counts and its place in the journal.
type entry struct {
	tally.Tally
	key      string
	dirty    atomic.Bool // in the journal, or about to be
	next     *entry      // the journal's link; written only by the pusher
	written  uint64      // the total on disk; only the flusher uses it
	logStamp uint64      // the log record that lists it; only the flusher uses it
	// Set by the flusher when an owner operation retires the entry (see
	// owners.go); only the flusher reads it. Apart, as few entries are
	// ever retired: an entry is 96 bytes, not 112.
	ret *retired
}

// retired is what an entry retired by an owner operation still holds.
type retired struct {
	succ *entry // where visits counted on it after that go, or nil
	fwd  uint64 // its total up to which visits have gone to succ
}

// gone reports whether e is no longer its key's: never written again.
// Only the flusher calls it.
func (e *entry) gone() bool { return e.ret != nil }

// pass is one run of the flusher; done is closed when its commit ends.
type pass struct {
	visits atomic.Pointer[visit] // Sync: visits to count in this pass; sealed once taken
	done   chan struct{}
	err    error // read after done is closed
}

func newPass() *pass { return &pass{done: make(chan struct{})} }

// visit is one Sync visit handed to the flusher, and its answer.
type visit struct {
	e    *entry
	v    tally.Visit // the counts, set by the flusher
	err  error       // set by the flusher
	skip bool        // set by the flusher: not counted (a locked key, or an error)
	made bool        // the visit made its key's entry: refused, it takes the key back too
	next *visit
}

// closedPass answers visits that arrive after Close.
var closedPass = func() *pass {
	p := newPass()
	p.err = errors.New("store closed")
	close(p.done)
	return p
}()

// sealed marks a pass whose visits the flusher has taken.
var sealed = new(visit)

var visitPool = sync.Pool{New: func() any { return new(visit) }}

// write is one entry's snapshot taken by the flusher.
type write struct {
	e      *entry
	total  uint64
	latest tally.DayCount
	past   []tally.DayCount // earlier days not yet on disk
	err    string           // why its write failed, or ""
}

// statCounters are the flusher's counters, read by [Store.Stats].
type statCounters struct {
	passes, passErrors, keyErrors, syncVisits, logRecords atomic.Uint64
	failing                                               atomic.Int64
	replayed                                              int
}

// Stats are the store's counters for operators.
type Stats struct {
	Passes      uint64 // flusher passes that wrote something
	PassErrors  uint64 // passes whose transaction failed as a whole
	KeyErrors   uint64 // writes of one key that failed, summed over passes
	FailingKeys int    // keys whose last write failed, held in memory
	SyncVisits  uint64 // Sync: visits the passes counted (per pass: SyncVisits/Passes)
	LogRecords  uint64 // Sync: passes that wrote the log, not the bbolt file
	Replayed    int    // log records applied at open: visits a crash left in the log only
}

// Open opens or creates the store in o.Dir and loads every count into
// memory. It refuses, with an error naming the file, the problem and what
// to do, a directory it cannot write, a file that is not a visitors
// store, an empty or truncated file, a file whose meta pages or any of
// whose totals are damaged, and a directory another process has open.
//
// The rest of the file (bbolt's check of every page, and the checksum
// of every other record) is checked in the background once Open has
// returned, and nothing is written to the file before that check has
// passed: visits are answered meanwhile (in Batch mode from memory, in
// Sync mode through the write-ahead log, another file), and what must
// reach the file waits. If the check finds damage, the store logs it,
// [Store.Health] names it, and every write is refused from then on; what
// was acknowledged stays in memory (Sync: and in the log). A file that
// needs a write at open (format 1 to migrate, a bucket to add, a log to
// apply) is checked in full first, as before.
//
// The caller must call Close, which writes everything still in memory.
func Open(o Options) (*Store, error) {
	if o.FlushInterval <= 0 {
		o.FlushInterval = 100 * time.Millisecond
	}
	db, path, checked, err := openDB(o.Dir, true)
	if err != nil {
		return nil, err
	}
	removeSpools(o.Dir)
	// Visits a crash left in the log only go into the file before it is
	// read; in either mode, as a sync run may be followed by a batch run.
	// Applying them is a write: the whole file is checked first.
	checkFirst := func() error {
		if checked {
			return nil
		}
		checked = true
		return checkDB(db, path)
	}
	id, seq, replayed, err := replayLog(db, filepath.Join(o.Dir, LogName), checkFirst)
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	if replayed > 0 {
		o.Log.Info().Str("file", path).Int("records", replayed).Msg("applied the visits a crash left in the write-ahead log")
	}
	var log *wal
	if o.Durability == store.Sync {
		switch log, err = openLog(o.Dir, id, seq); {
		case errors.Is(err, syscall.ENOSPC):
			// Sync mode still works without the log, at the cost of a
			// bbolt commit per pass: better than refusing to start.
			o.Log.Warn().Err(err).Msg("no room for the write-ahead log; sync passes commit to the data file, more slowly, until a restart finds room")
		case err != nil:
			db.Close()
			return nil, err
		}
	}
	s := &Store{
		flushes: newFlushDurations(),
		cal:     tally.NewCalendar(o.Now),
		db:      db,
		path:    path,
		o:       o,
		kick:    make(chan struct{}, 1),
		stop:    make(chan struct{}),
		done:    make(chan struct{}),
		failing: make(map[*entry]string),
		log:     log,
		tokens:  make(map[string]store.Token),
		checked: make(chan struct{}),
	}
	s.marked = s.formatMarked()
	s.stats.replayed = replayed
	s.keys = tally.NewMap(o.MaxKeys, s.newEntry, func(e *entry) string { return e.key })
	if err := s.load(); err != nil {
		s.cal.Stop()
		db.Close()
		if log != nil {
			log.close()
		}
		return nil, err
	}
	s.next.Store(newPass())
	if log != nil {
		for _, sl := range log.slots {
			go s.syncer(log, sl)
		}
	}
	if checked {
		close(s.checked)
	} else {
		go s.checkFile()
	}
	go s.flusher()
	return s, nil
}

// checkFile checks the whole file, as openDB did before the store was
// read (bbolt's check of every page, and every record's checksum), and
// closes s.checked. On damage it sets s.damage, which refuses every
// write from then on, and logs what it found and what to do.
func (s *Store) checkFile() {
	defer func() {
		close(s.checked)
		select {
		case s.kick <- struct{}{}: // owner operations may be waiting
		default:
		}
	}()
	if s.o.holdCheck != nil {
		<-s.o.holdCheck
	}
	if err := checkDB(s.db, s.path); err != nil {
		err = fmt.Errorf("%w; every write is refused until the file is replaced, visits acknowledged so far are held in memory", err)
		s.damage.Store(&err)
		s.o.Log.Error().Err(err).Str("file", s.path).Msg("the file is damaged: stop the service and " + restoreHint)
	}
}

// fileChecked reports whether the background check has run (whatever it
// found).
func (s *Store) fileChecked() bool {
	select {
	case <-s.checked:
		return true
	default:
		return false
	}
}

// writable waits for the background check, and returns the damage it
// found, if any: the reason to write nothing to the file.
func (s *Store) writable() error {
	<-s.checked
	return s.damaged()
}

// refused is why a visit or a /hi number is refused before it is
// counted: the damage the check found (it could never be written), or
// nil.
func (s *Store) refused() error {
	if err := s.damaged(); err != nil {
		return fmt.Errorf("write %s: %w", s.path, err)
	}
	return nil
}

// damaged returns the damage the check found, or nil (none, or not
// checked yet).
func (s *Store) damaged() error {
	if d := s.damage.Load(); d != nil {
		return *d
	}
	return nil
}

// awaitFile is [Store.writable] for the flusher, which, the first time
// the file is found sound, migrates the plain totals (see migrate).
func (s *Store) awaitFile() error {
	if err := s.writable(); err != nil {
		return err
	}
	if s.plain != nil {
		s.migrate()
	}
	return nil
}

// formatMarked reports whether the file says format 3. Only Open calls it.
func (s *Store) formatMarked() bool {
	marked := false
	s.db.View(func(tx *bolt.Tx) error {
		marked = string(tx.Bucket(bucketMeta).Get(keyFormat)) == formatValue
		return nil
	})
	return marked
}

// migrate puts the keys loaded from plain totals in the journal, so that
// the next pass writes them dated and the next start reads no days for
// them: once, after the check (nothing is written before it). Only the
// flusher calls it.
func (s *Store) migrate() {
	for _, e := range s.plain {
		s.markDirty(e)
	}
	s.plain = nil
}

// load reads every total, and today's counts, into memory: a dated
// total says today's count itself; for a plain one (written by an older
// binary, an owner operation, an import or a replay) it is read from
// the days bucket. It checks what it reads (every total's checksum and
// the /hi counter); the rest of the file is checked in the background
// (see [Store.checkFile]), or was before, by openDB.
func (s *Store) load() error {
	today := s.cal.Today()
	err := safely(func() error {
		return s.db.View(func(tx *bolt.Tx) error {
			hits, err := readRecord(tagMeta, keyHits, tx.Bucket(bucketMeta).Get(keyHits))
			if err != nil {
				return fmt.Errorf("the /hi counter: %w", err)
			}
			s.hits.Store(hits)
			s.reserved.Store(hits)
			s.used = hits
			// The entries are made in one slice and their keys' bytes in a
			// few large blocks, and handed to the map at once
			// (tally.Map.Fill), which sizes its table once and takes the
			// keys in the file's order: a million allocations, the table's
			// growth and a B-tree's inserts took most of the load of a
			// million keys (docs/performance.md).
			totals := tx.Bucket(bucketTotals)
			es := make([]entry, 0, totals.Stats().KeyN)
			var block []byte // the keys' bytes, never changed once written
			var plain []int  // the entries whose totals are plain, by index in es
			var ahead []int  // those whose totals are dated after today, by index in es
			var aheadDays []tally.DayCount
			var laters []tally.DayCount // the key's days after today
			// Both buckets sort by key, so for a plain total one cursor
			// walks the days beside the totals, a few steps, then seeks.
			days := tx.Bucket(bucketDays).Cursor()
			var dk, dv []byte
			var want []byte
			err = totals.ForEach(func(k, v []byte) error {
				key, err := splitTotalKey(k)
				if err != nil {
					return fmt.Errorf("a total's key %q: %w", k, err)
				}
				t, err := parseTotal(k, v)
				if err != nil {
					return fmt.Errorf("the total of key %q: %w", key, err)
				}
				n, ok := t.on(today)
				if !ok {
					// A day's key is the total's key and the day.
					want = binary.BigEndian.AppendUint32(append(want[:0], k...), uint32(today))
					for i := 0; dk != nil && bytes.Compare(dk, want) < 0; i++ {
						if i == 8 {
							dk, dv = days.Seek(want)
							break
						}
						dk, dv = days.Next()
					}
					if dk == nil && len(plain) == 0 {
						dk, dv = days.Seek(want)
					}
					if bytes.Equal(dk, want) {
						if n, err = readRecord(tagDays, dk, dv); err != nil {
							return fmt.Errorf("today's count of key %q: %w", key, err)
						}
						dk, dv = days.Next()
					}
					// Days after today (a clock that went back, an import
					// of later dates): the latest one, which put keeps in
					// the dated total (see ahead). Mostly none: no step.
					var later tally.DayCount
					for dk != nil && len(dk) == len(k)+4 && bytes.Equal(dk[:len(k)], k) {
						c, err := readRecord(tagDays, dk, dv)
						if err != nil {
							return fmt.Errorf("a later day's count of key %q: %w", key, err)
						}
						later = tally.DayCount{Day: store.Day(binary.BigEndian.Uint32(dk[len(k):])), Count: c}
						if later.Day > today {
							laters = append(laters, later) // the tally counts on from it when the day comes
						}
						dk, dv = days.Next()
					}
					plain = append(plain, len(es))
					if later.Day > today {
						ahead = append(ahead, len(es))
						aheadDays = append(aheadDays, later)
					}
				}
				if cap(block)-len(block) < len(key) {
					block = make([]byte, 0, max(64<<10, len(key)))
				}
				at := len(block)
				block = append(block, key...)
				es = slices.Grow(es, 1)[:len(es)+1]
				e := &es[len(es)-1]
				e.key = unsafe.String(unsafe.SliceData(block[at:]), len(key))
				e.Restore(t.n, today, n)
				for _, dc := range laters {
					e.Later(dc.Day, dc.Count)
				}
				laters = laters[:0]
				e.written = t.n
				return nil
			})
			if err != nil {
				return err
			}
			s.keys.Fill(es)
			for _, i := range plain {
				s.plain = append(s.plain, &es[i])
			}
			for j, i := range ahead {
				if s.ahead == nil {
					s.ahead = make(map[*entry]tally.DayCount)
				}
				s.ahead[&es[i]] = aheadDays[j]
			}
			return s.loadOwned(tx)
		})
	})
	if err != nil {
		return fmt.Errorf("read %s: the file is damaged: %w; %s", s.path, err, restoreHint)
	}
	return nil
}

// Rollover makes a new UTC day, if one has begun on the store's clock,
// the day visits count towards. The store does it itself at each UTC
// midnight; tests with a manual clock call it after moving the clock.
func (s *Store) Rollover() { s.cal.Rollover() }

// Hit implements [store.Store].
func (s *Store) Hit(ctx context.Context) (uint64, error) {
	if err := s.refused(); err != nil {
		return 0, err
	}
	var n uint64
	for { // past MaxHits the counter stays, so what it holds imports
		h := s.hits.Load()
		if h >= store.MaxHits {
			return 0, store.ErrHiExhausted
		}
		if s.hits.CompareAndSwap(h, h+1) {
			n = h + 1
			break
		}
	}
	if s.o.Durability == store.Sync {
		return n, s.wait(ctx, s.join(nil))
	}
	for n > s.reserved.Load() { // past the durable reservation: rare
		if err := s.wait(ctx, s.join(nil)); err != nil {
			return 0, err
		}
	}
	return n, nil
}

// Visit implements [store.Counter]: every key is in memory, so whether
// key is new is known without reading the file.
func (s *Store) Visit(_ context.Context, key []byte, create bool) (store.Counts, bool, error) {
	if err := s.refused(); err != nil { // before a new key is made
		return store.Counts{}, false, err
	}
	if !create {
		e := s.keys.Load(key)
		if e == nil {
			return store.Counts{}, false, store.ErrNewKey
		}
		c, err := s.count(e, false)
		return c, false, err
	}
	e, made, err := s.keys.LoadOrMake(key)
	if err != nil {
		return store.Counts{}, false, err
	}
	c, err := s.count(e, made)
	return c, made && err == nil, err
}

// count counts one visit to e, unless it is locked: in Batch at once, in
// Sync once the pass that writes it has committed. made says the visit
// made e: in Sync, a refused visit then takes the key back (takeBack),
// so that a visit that did not count leaves no key.
func (s *Store) count(e *entry, made bool) (store.Counts, error) {
	if e.Locked() { // frozen: answered, not counted
		return e.Counts(s.cal.Today()), nil
	}
	if s.o.Durability == store.Batch {
		v := e.Add(s.cal.Today())
		if !v.Saturated {
			s.markDirty(e)
		}
		return v.Counts, nil
	}
	vis := visitPool.Get().(*visit)
	*vis = visit{e: e, made: made}
	// No giving up when ctx ends: the visit is in the pass now, and an
	// error must mean it did not count. A pass is bounded by one commit.
	if err := s.wait(context.Background(), s.join(vis)); err != nil {
		return store.Counts{}, err
	}
	c, err := vis.v.Counts, vis.err
	*vis = visit{}
	visitPool.Put(vis)
	return c, err
}

// join adds vis (nil for a /hi visit, which the flusher reads from the
// counter) to the pass that has not begun yet, and returns that pass.
func (s *Store) join(vis *visit) *pass {
	s.arrivals.Add(1)
	for {
		p := s.next.Load()
		if vis == nil {
			return p
		}
		head := p.visits.Load()
		if head == sealed { // taken: the flusher has stored the next pass, or stopped
			select {
			case <-s.done:
				return closedPass
			default:
			}
			continue
		}
		vis.next = head
		if p.visits.CompareAndSwap(head, vis) {
			return p
		}
	}
}

// wait wakes the flusher and blocks until pass p has committed.
func (s *Store) wait(ctx context.Context, p *pass) error {
	s.waiters.Add(1)
	defer s.waiters.Add(-1)
	select {
	case s.kick <- struct{}{}:
	default: // a kick is already pending
	}
	select {
	case <-p.done:
		if p.err != nil {
			return fmt.Errorf("write %s: %w", s.path, p.err)
		}
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-s.done:
		// The flusher closes every pass before it stops: p has its answer.
		<-p.done
		if p.err != nil {
			return fmt.Errorf("write %s: %w", s.path, p.err)
		}
		return nil
	}
}

// markDirty puts e in the journal unless it is there already.
func (s *Store) markDirty(e *entry) {
	if e.dirty.Load() || !e.dirty.CompareAndSwap(false, true) {
		return
	}
	for {
		head := s.journal.Load()
		e.next = head
		if s.journal.CompareAndSwap(head, e) {
			return
		}
	}
}

// Flush waits for a flusher pass that begins after the call, which
// writes everything counted before it to the bbolt file, and returns that
// pass's error.
func (s *Store) Flush() error {
	s.full.Store(true)
	return s.wait(context.Background(), s.join(nil))
}

// Get implements [store.Store].
func (s *Store) Get(_ context.Context, key []byte) (store.Counts, error) {
	if e := s.keys.Load(key); e != nil {
		return e.Counts(s.cal.Today()), nil
	}
	return store.Counts{}, nil
}

// Days implements [store.Store]. Memory holds today and the days not yet
// written; the rest come from the file. Memory wins where it knows more.
func (s *Store) Days(_ context.Context, key []byte, n int) (store.Daily, error) {
	today := s.cal.Today()
	d := store.Daily{Last: today.Time(), Counts: make([]uint64, n)}
	first := today - store.Day(n-1)
	if e := s.keys.Load(key); e != nil {
		for i := range d.Counts {
			d.Counts[i] = e.On(first + store.Day(i))
		}
	}
	// Before the check of the file has read its pages, a damaged one may
	// make bbolt panic: an error, not a crash (safely).
	err := safely(func() error {
		return s.db.View(func(tx *bolt.Tx) error {
			c := tx.Bucket(bucketDays).Cursor()
			prefix := keyPrefix(key)
			for k, v := c.Seek(dayKey(key, first)); k != nil && len(k) == len(prefix)+4 && string(k[:len(prefix)]) == string(prefix); k, v = c.Next() {
				_, day, err := splitDayKey(k)
				if err != nil {
					return err
				}
				i := int(day) - int(first)
				if i < 0 || i >= n {
					break
				}
				m, err := readRecord(tagDays, k, v)
				if err != nil {
					return fmt.Errorf("the count of key %q on %s: %w", key, day.Time().Format(time.DateOnly), err)
				}
				d.Counts[i] = max(d.Counts[i], m)
			}
			return nil
		})
	})
	if err != nil {
		return d, fmt.Errorf("read %s: %w", s.path, err)
	}
	return d, nil
}

// Keys implements [store.Store].
func (s *Store) Keys() int { return s.keys.Len() }

// Health implements [store.Store]: the damage the check of the file
// found, or the error of the last flush, or the keys that could not be
// written, or nil.
func (s *Store) Health() error {
	if err := s.damaged(); err != nil {
		return err
	}
	if p := s.health.Load(); p != nil {
		return *p
	}
	return nil
}

// Stats returns the store's counters.
func (s *Store) Stats() Stats {
	return Stats{
		Passes:      s.stats.passes.Load(),
		PassErrors:  s.stats.passErrors.Load(),
		KeyErrors:   s.stats.keyErrors.Load(),
		FailingKeys: int(s.stats.failing.Load()),
		SyncVisits:  s.stats.syncVisits.Load(),
		LogRecords:  s.stats.logRecords.Load(),
		Replayed:    s.stats.replayed,
	}
}

// Pending reports the visits acknowledged but not yet on disk as the last
// pass left them (visits since that pass are not counted: in batch mode
// they wait at most one flush interval), when the first pass that could
// not write them began (zero if none is pending: the oldest of them is at
// least that old), and how many requests wait for a pass now.
func (s *Store) Pending() (visits uint64, oldest time.Time, syncWaiters int) {
	if ns := s.oldest.Load(); ns != 0 {
		oldest = time.Unix(0, ns)
	}
	return s.pending.Load(), oldest, int(s.waiters.Load())
}

// Held reports how many earlier days key's counts hold in memory: days
// not yet on disk.
func (s *Store) Held(key []byte) int {
	if e := s.keys.Load(key); e != nil {
		return e.Held()
	}
	return 0
}

// Close stops the flusher after a last flush, which writes the exact last
// /hi number, and closes the file. It returns the error of that last
// flush: visits it could not write are lost, and the error says so.
func (s *Store) Close() error {
	s.once.Do(func() { close(s.stop) })
	<-s.done
	// The check after Open reads the file: closing it first made the
	// check fail with "database not open", logged as damage (stop the
	// service, restore it or move it away) of a sound file, when a stop
	// came before the check's first read (the hostile review of issue
	// 26: TestCloseDuringTheCheck). A stop right after the start waits
	// for the check, as a stop with visits to write already did.
	<-s.checked
	err := s.Health()
	s.cal.Stop()
	if cerr := s.db.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("close %s: %w", s.path, cerr)
	}
	if s.log != nil {
		if cerr := s.log.close(); err == nil && cerr != nil {
			err = fmt.Errorf("close %s: %w", s.log.path, cerr)
		}
	}
	return err
}

func (s *Store) flusher() {
	defer close(s.done)
	// Batch mode flushes on the timer. In Sync mode every visit kicks the
	// flusher, which writes the log, and the timer brings the bbolt file
	// up to date (and retries a failed flush, so that the store heals, and
	// /healthz says so, without waiting for a visit).
	t := time.NewTicker(s.o.FlushInterval)
	defer t.Stop()
	for {
		var landed chan *flight // nil: nothing in flight
		if s.log != nil && len(s.log.flying) > 0 {
			landed = s.log.landed
		}
		select {
		case f := <-landed:
			s.land(f)
			continue
		case <-s.stop:
			s.runOps() // the operations that came before Close
			s.flush(true)
			if s.Health() != nil { // one more try before giving up
				s.flush(true)
			}
			s.closeOps()
			if s.log != nil {
				close(s.log.queue) // nothing is in flight: flush settled it
			}
			p := s.next.Load()
			p.err = errors.New("store closed")
			s.answer(p.visits.Swap(sealed), p.err)
			close(p.done)
			return
		case <-t.C:
			if s.log != nil {
				// The file catches up; the visits waiting stay for the
				// log (their kick is pending), so that a file that
				// cannot be written refuses none while the log has room.
				// Not before the file's check: the log answers meanwhile.
				if s.fileChecked() {
					s.commit(newPass(), nil, false)
				}
				continue
			}
		case <-s.kick:
			// Records in flight or not: a record that takes the
			// handlers already running costs one sync for all of them
			// (measured: 16.2k badges a second against 15.1k without
			// gathering while records fly, docs/performance.md).
			s.gather()
			// Owner operations wait for the file's check (checkFile kicks
			// the flusher when it ends) without holding the log's passes.
			if s.opsPending.Load() && s.fileChecked() {
				s.runOps()
				continue
			}
			if s.log != nil {
				s.logPass()
				continue
			}
		}
		s.flush(false)
	}
}

// maxGather bounds how long a pass waits for visits to join it.
const maxGather = time.Millisecond

// gather lets the visits that are already running join the coming pass
// before it commits: it yields the processor until a round of yielding
// brings no new waiter (or maxGather passes). On a server with one
// processor this matters most: the fdatasync of a pass blocks it, so
// without gathering each pass would commit the few visits that happened
// to be waiting and the next would start before the rest had run —
// one commit per visit. Visits that gather sees are all in one commit.
func (s *Store) gather() {
	deadline := time.Now().Add(maxGather)
	last := s.arrivals.Load()
	for {
		runtime.Gosched()
		n := s.arrivals.Load()
		if n == last || time.Now().After(deadline) {
			return
		}
		last = n
	}
}

// flush runs one pass: it counts the pass's Sync visits, writes every
// changed entry and the /hi counter in one bbolt transaction, and answers
// the visits. A final pass (at Close) writes the exact /hi counter
// instead of a reservation.
func (s *Store) flush(final bool) {
	if final {
		// From here every Hit waits, and gets "store closed": none may
		// take a number above the exact one this pass writes. The file
		// holds the reservation still: the pass writes the exact number
		// over it, 0 included.
		s.fileHits = s.reserved.Swap(0)
	}
	p, visits := s.take()
	s.commit(p, visits, final)
}

// take seals the pass that has not begun and counts its Sync visits.
func (s *Store) take() (*pass, *visit) {
	p := s.next.Load()
	s.next.Store(newPass()) // visits from here on join the next pass
	visits := p.visits.Swap(sealed)
	today := s.cal.Today()
	for v := visits; v != nil; v = v.next {
		if v.e.gone() { // retired by an owner operation: count on the key's entry now
			e, err := s.keys.LoadOrNew([]byte(v.e.key))
			if err != nil {
				v.err, v.skip = err, true
				continue
			}
			v.e, v.made = e, false
		}
		if v.e.Locked() {
			v.v, v.skip = tally.Visit{Counts: v.e.Counts(today)}, true
			continue
		}
		if v.v = v.e.Add(today); v.v.Saturated { // at a bound: counted nothing, nothing to take back
			v.skip = true
			continue
		}
		s.markDirty(v.e)
		s.stats.syncVisits.Add(1)
	}
	return p, visits
}

// logPass runs one Sync pass through the log: it counts the pass's
// visits, appends one record with their keys' counts, and answers them
// once the record is durable. Passes are pipelined (see pipelineLog): up
// to len(l.slots) records are in flight at once, each synced by a syncer
// goroutine of its own while the next pass gathers; a record's pass is
// answered once its sync and those of every record before it have
// returned (see syncRecord). With all slots busy logPass waits for the
// oldest record to land, so the visits queue meanwhile and the next
// record takes them all: the batch grows with the load, and no timer
// holds a record back. Without pipelining the flusher syncs and answers
// each record itself, after gathering the pass's visits. When the log
// cannot take the record (it is full and the file could not catch up, or
// a write failed), or Flush asked for it, the pass commits to the bbolt
// file instead.
func (s *Store) logPass() {
	l := s.log
	pipelined := pipelineLog(l.aio != nil)
	for len(l.flying) >= len(l.slots) || (!pipelined && len(l.flying) > 0) {
		s.land(<-l.landed) // the oldest record first
	}
	p, visits := s.take()
	// After take: a Flush that joined this pass has set full by now.
	if s.full.Swap(false) || l.broken != nil {
		s.commit(p, visits, false) // a bbolt commit also retires a failed record
		return
	}
	hits := s.hits.Load() // after take: every /hi visit of the pass is in it
	if visits == nil && hits == l.hits {
		// A kick with nothing to write: the /hi numbers it waits for are
		// in the records before, which must be durable first.
		s.settle()
		if l.broken != nil { // one failed, and so did the file: try again
			s.commit(p, visits, false)
			return
		}
		close(p.done)
		return
	}
	l.begin()
	days := s.days[:0]
	for v := visits; v != nil; v = v.next {
		if !v.skip {
			days = l.add(v.e, days)
		}
	}
	s.days = days[:0]
	rec := l.finish(hits)
	if !l.fits(len(rec)) {
		s.commit(p, visits, false) // the file catches up, and the log starts over
		return
	}
	f := l.cur
	f.p, f.visits, f.start, f.err = p, visits, time.Now(), nil
	f.synced, f.answered, f.back = false, false, false
	if err := l.append(rec); err != nil {
		s.o.Log.Error().Err(err).Msg("write-ahead log write failed; committing this pass to the data file instead")
		s.observeFlush(f.start, time.Since(f.start), err)
		f.p, f.visits = nil, nil
		s.commit(p, visits, false)
		return
	}
	l.hits = hits
	l.cur = nil
	l.mu.Lock()
	l.order = append(l.order, f)
	l.mu.Unlock()
	l.flying = append(l.flying, f)
	if !pipelined {
		s.syncRecord(l, l.slots[0], f)
		s.land(f)
		return
	}
	l.queue <- f // never blocks: at most len(l.slots) are in flight
}

// pipelineLog reports whether log passes are pipelined: with AIO (aio:
// the log syncs through it), or with more than one P. With one P and a
// blocking fdatasync, a goroutine in the system call keeps the only P
// until sysmon takes it back (20 µs to 10 ms later), so the handlers do
// not run during the sync, and when the call returns the syncer waits in
// the global run queue behind them: measured, the pipelined passes were
// slower than one goroutine that gathers every visit, writes, syncs and
// answers (docs/performance.md). Through AIO a syncer parks in the
// netpoller and frees the P at once. A variable for tests.
var pipelineLog = func(aio bool) bool { return aio || runtime.GOMAXPROCS(0) > 1 }

// syncer makes each record the flusher hands it durable through its slot
// and answers the passes it can (see syncRecord); a failed sync's pass is
// left to the flusher (see land). It returns when the flusher closes the
// queue.
func (s *Store) syncer(l *wal, sl syncSlot) {
	for f := range l.queue {
		s.syncRecord(l, sl, f)
		l.landed <- f
	}
}

// syncRecord makes f's record durable through sl, then answers, in the
// order written, every pass whose record and every record before it are
// durable: f's, if the records before it are, and those after it whose
// syncs returned first. A record whose sync failed answers nothing, and
// holds back every record after it (the flusher lands them: see land).
func (s *Store) syncRecord(l *wal, sl syncSlot, f *flight) {
	var err error
	if fault := s.logFault.Load(); fault != nil {
		err = (*fault)()
	}
	if err == nil {
		err = sl.sync()
	}
	f.took, f.err = time.Since(f.start), err
	l.mu.Lock()
	f.synced = true
	n := 0
	for _, h := range l.order {
		if !h.synced || h.err != nil {
			break
		}
		h.answered = true
		s.stats.passes.Add(1)
		s.stats.logRecords.Add(1)
		close(h.p.done) // durable, and so is every record before: the answer (the visits have no error)
		n++
	}
	l.order = append(l.order[:0], l.order[n:]...)
	l.mu.Unlock()
}

// settle waits for the records in flight, if there are any, and lands
// them.
func (s *Store) settle() {
	for s.log != nil && len(s.log.flying) > 0 {
		s.land(<-s.log.landed)
	}
}

// land takes back a record from a syncer, and finishes the flusher's part
// of the records back so far, in the order written: the visits they made
// durable are not pending any more. From the first that was not answered
// (its sync failed) on, see failFlying.
func (s *Store) land(f *flight) {
	l := s.log
	f.back = true
	for len(l.flying) > 0 && l.flying[0].back {
		h := l.flying[0]
		l.mu.Lock()
		answered := h.answered
		l.mu.Unlock()
		if !answered {
			s.failFlying()
			return
		}
		l.flying = append(l.flying[:0], l.flying[1:]...)
		s.observeFlush(h.start, h.took, nil)
		for i, e := range h.entries {
			e.written = max(e.written, h.totals[i])
		}
		l.release(h)
	}
}

// release gives back a flight whose pass is answered, or about to be:
// the waiters reuse their visits.
func (l *wal) release(f *flight) {
	f.p, f.visits = nil, nil
	l.free = append(l.free, f)
}

// failFlying handles a record whose sync failed, the first of l.flying:
// it waits for every record in flight, breaks the log (see wal.fail), and
// commits the passes of that record and of every one after it (none of
// them answered: a record is answered only after the ones before it) to
// the bbolt file, which answers them.
func (s *Store) failFlying() {
	l := s.log
	for _, f := range l.flying {
		for !f.back {
			(<-l.landed).back = true
		}
	}
	flights := append([]*flight(nil), l.flying...)
	l.flying = l.flying[:0]
	l.mu.Lock()
	l.order = l.order[:0]
	l.mu.Unlock()
	first := flights[0]
	cause := first.err
	if cause == nil { // cannot be: the first unanswered record is a failed one
		cause = errors.New("a record's sync did not answer it")
	}
	err := l.fail(first.off, cause)
	s.o.Log.Error().Err(err).Int("records", len(flights)).Msg("write-ahead log write failed; committing these passes to the data file instead")
	for _, f := range flights {
		s.observeFlush(f.start, f.took, f.err)
		p, visits := f.p, f.visits
		l.release(f)
		s.commit(p, visits, false)
	}
}

// commit writes every changed entry and the /hi counter in one bbolt
// transaction and answers the pass's visits, which take has counted.
func (s *Store) commit(p *pass, visits *visit, final bool) {
	// A pass's duration counts from here, before it takes the changes:
	// a crash keeps every visit answered before the last completed pass
	// began, which OnFlush's duration (and the flush histogram) tells
	// (TestBatchCrashKeepsEveryVisitBeforeTheLastPass).
	start := time.Now()
	s.settle() // the log's record in flight first: this commit may retire it
	s.writes, s.days = s.writes[:0], s.days[:0]
	defer s.trimScratch()
	// The journal's entries, taken whole before any is marked clean (a
	// visit after that pushes it again, and its link with it).
	taken := s.taken[:0]
	for e := s.journal.Swap(nil); e != nil; e = e.next {
		taken = append(taken, e)
	}
	// Retired by an owner operation first: never written again, their
	// visits since it are forwarded to the key's entry before that is
	// read, so that this pass writes them. A successor not in the
	// journal joins this pass: were it left to the next, Close's last
	// pass would leave them out of the file
	// (TestVisitRacingANegativeAddReachesTheFileAtClose).
	for i := 0; i < len(taken); i++ {
		e := taken[i]
		if !e.gone() {
			continue
		}
		e.dirty.Store(false) // before reading: a visit after this puts e back
		if to := s.forward(e); to != nil && to.dirty.CompareAndSwap(false, true) {
			taken = append(taken, to) // in this pass, as if in the journal
		}
	}
	for _, e := range taken {
		if e.gone() {
			continue
		}
		e.dirty.Store(false) // before reading: a visit after this puts e back
		w := write{e: e}
		start := len(s.days)
		w.total, w.latest, s.days = e.Snapshot(s.days)
		w.past = s.days[start:len(s.days):len(s.days)]
		s.writes = append(s.writes, w)
	}
	clear(taken)
	s.taken = taken[:0]
	// In the file's order: bbolt grows a node in memory and splits it only
	// at the commit, so each key put out of order moves the node's tail, and
	// a pass of n new keys in the journal's order cost O(n²) (3 minutes for
	// 200,000 new keys; compareFile is the file's order:
	// TestCompareFileIsTheFileOrder).
	slices.SortFunc(s.writes, func(a, b write) int { return compareFile(a.e.key, b.e.key) })
	hits := s.hits.Load()
	reserve := hits
	if s.o.Durability == store.Batch && !final {
		reserve = s.reservation(hits)
	}
	// A failed pass puts its writes back, and the reservation it did not
	// write stays ahead: an unhealthy store always has something to write.
	logBehind := s.log != nil && s.log.seq != s.log.applied
	inFile := s.reserved.Load() // what the file's /hi counter holds
	if final {
		inFile = s.fileHits
	}
	if len(s.writes) == 0 && reserve == inFile && !logBehind {
		s.answer(visits, nil)
		close(p.done) // nothing to write
		return
	}

	// Nothing is written before the file's check has passed: this pass
	// waits for it, and fails if it found damage.
	err := s.awaitFile()
	if err == nil {
		err = s.db.Update(func(tx *bolt.Tx) error {
			return s.commitTx(tx, reserve, inFile, logBehind)
		})
	}
	s.stats.passes.Add(1)
	s.observeFlush(start, time.Since(start), err)
	if err != nil {
		s.stats.passErrors.Add(1)
		for _, w := range s.writes {
			s.markDirty(w.e) // keep them for the next pass
		}
		s.takeBack(visits, nil)
		s.notWritten(start, s.writes, nil)
		if s.Health() == nil {
			s.o.Log.Error().Err(err).Str("file", s.path).Int("keys", len(s.writes)).Msg("flush failed; keeping the counts in memory and retrying")
		}
		err = fmt.Errorf("flush to %s: %w", s.path, err)
		s.health.Store(&err)
		s.answer(visits, err)
		p.err = err
		close(p.done)
		return
	}
	s.marked = true
	s.reserved.Store(reserve)
	s.used = hits
	for _, w := range s.writes {
		if w.err != "" {
			s.markDirty(w.e) // retried alone next pass
			s.stats.keyErrors.Add(1)
			if _, known := s.failing[w.e]; !known {
				s.o.Log.Error().Str("file", s.path).Str("key", w.e.key).Str("error", w.err).Msg("a key's counts cannot be written; keeping them in memory and retrying")
			}
			s.failing[w.e] = w.err
			continue
		}
		w.e.Forget(w.past) // on disk now
		w.e.written = w.total
		if _, was := s.failing[w.e]; was {
			delete(s.failing, w.e)
			s.o.Log.Info().Str("file", s.path).Str("key", w.e.key).Msg("a key's counts are written again")
		}
	}
	s.takeBack(visits, s.failing)
	s.notWritten(start, s.writes, s.failing)
	s.stats.failing.Store(int64(len(s.failing)))
	if s.log != nil && len(s.failing) == 0 {
		s.log.reset()
	}
	if len(s.failing) > 0 {
		err := s.failingError()
		s.health.Store(&err)
	} else if s.health.Swap(nil) != nil {
		s.o.Log.Info().Str("file", s.path).Msg("flush recovered")
	}
	s.answer(visits, nil)
	close(p.done)
}

// commitTx writes, in tx, the /hi reservation (unless the file holds it
// already, inFile), the format's mark, the pass's writes and, if the log
// is behind and every key was written, the log position.
func (s *Store) commitTx(tx *bolt.Tx, reserve, inFile uint64, logBehind bool) error {
	if reserve != inFile { // else the page holding it stays as it is
		if err := tx.Bucket(bucketMeta).Put(keyHits, record(tagMeta, keyHits, reserve)); err != nil {
			return err
		}
	}
	if !s.marked {
		if err := tx.Bucket(bucketMeta).Put(keyFormat, []byte(formatValue)); err != nil {
			return err
		}
	}
	totals, days := tx.Bucket(bucketTotals), tx.Bucket(bucketDays)
	whole := true
	for i := range s.writes {
		var err error
		if s.writes[i].err, err = s.put(totals, days, &s.writes[i]); err != nil {
			return fmt.Errorf("key %q: %w", s.writes[i].e.key, err)
		}
		whole = whole && s.writes[i].err == ""
	}
	// The file holds every log record only if every key was written:
	// a key that failed has its acknowledged visits in the log alone.
	if logBehind && whole {
		if err := clearFloors(tx); err != nil {
			return err
		}
		return tx.Bucket(bucketMeta).Put(keyLogSeq, record(tagMeta, keyLogSeq, s.log.seq))
	}
	return nil
}

// maxScratch is the most writes whose room the flusher keeps between
// passes: a pass that wrote every key (the first after a start, or a day
// that touched them all) would otherwise keep 72 bytes a key for good.
const maxScratch = 4096

// trimScratch lets the room of a large pass go.
func (s *Store) trimScratch() {
	if cap(s.writes) > maxScratch {
		s.writes = nil
	}
	if cap(s.days) > maxScratch {
		s.days = nil
	}
	if cap(s.taken) > maxScratch {
		s.taken = nil
	}
}

// put writes w's records. Everything that could make bbolt refuse one of
// them is checked before the first is written, so that a key is written
// whole or not at all: a refusal tied to this key alone is returned as
// why, and the others still commit. An error from bbolt after that is
// the transaction's, and fails the pass.
func (s *Store) put(totals, days *bolt.Bucket, w *write) (why string, err error) {
	key := []byte(w.e.key)
	if f := s.putFault.Load(); f != nil {
		if err := (*f)(w.e.key); err != nil {
			return err.Error(), nil
		}
	}
	if len(key) > store.MaxKeyBytes { // the encoding keeps every other key within bbolt's limits
		return store.ErrKeyTooLong.Error(), nil
	}
	tk := keyPrefix(key)
	// Dated: the load reads today's count here (format.go), and putDay
	// writes the same count of the same day below, in this transaction.
	dated := w.latest
	if a, ok := s.ahead[w.e]; ok && a.Day > dated.Day { // the file holds a later day (see ahead)
		dated = a
	}
	if err := totals.Put(tk, totalRecord(tk, w.total, dated.Day, dated.Count)); err != nil {
		return "", err
	}
	for _, dc := range w.past {
		if err := putDay(days, key, dc); err != nil {
			return "", err
		}
	}
	return "", putDay(days, key, w.latest)
}

// putDay writes key's count on one day. A day without visits (a key
// restored before its first visit of the day, or a visit taken back) has
// no record.
func putDay(days *bolt.Bucket, key []byte, dc tally.DayCount) error {
	if dc.Count == 0 {
		return nil
	}
	dk := dayKey(key, dc.Day)
	return days.Put(dk, record(tagDays, dk, dc.Count))
}

// notWritten records what the pass that began at start left unwritten:
// every write's visits if failed is nil, else those of the failing keys.
// Sync visits that were taken back are not counted: they were refused.
func (s *Store) notWritten(start time.Time, writes []write, failed map[*entry]string) {
	var n uint64
	for _, w := range writes {
		if _, ok := failed[w.e]; failed == nil || ok {
			n += w.e.Total() - w.e.written
		}
	}
	s.pending.Store(n)
	switch {
	case n == 0:
		s.oldest.Store(0)
	case s.oldest.Load() == 0:
		s.oldest.Store(start.UnixNano())
	}
}

// takeBack undoes the pass's Sync visits that were not written: all of
// them if failed is nil, else those to the keys in failed. It runs before
// the next pass, so no later pass can write a visit that was refused. A
// key that a refused visit made, and that holds nothing once its refused
// visits are taken back, goes too (unmake): a refused visit leaves no
// key to take a place under -max-keys.
func (s *Store) takeBack(visits *visit, failed map[*entry]string) {
	var made []*entry
	for v := visits; v != nil; v = v.next {
		if v.skip {
			continue
		}
		if failed == nil {
			v.e.Sub(v.v.Day)
		} else if why, ok := failed[v.e]; ok {
			v.e.Sub(v.v.Day)
			v.err = fmt.Errorf("write %s: key %q: %s", s.path, v.e.key, why)
		} else {
			continue
		}
		if v.made {
			made = append(made, v.e)
		}
	}
	for _, e := range made { // after every Sub: the key's other refused visits too
		s.unmake(e)
	}
}

// unmake removes e, the entry a refused visit made, from the map if it
// holds nothing: no count, no lock, nothing on disk. A visit that loads
// it after this counts on a new entry (take finds e gone). Only the
// flusher calls it.
func (s *Store) unmake(e *entry) {
	if e.gone() || e.Total() != 0 || e.Locked() || e.written != 0 {
		return
	}
	s.retire(e, nil, 0)
	s.keys.Delete(e.key, e)
}

// answer sets err on each visit that has no error of its own.
func (s *Store) answer(visits *visit, err error) {
	for v := visits; v != nil; v = v.next {
		if v.err == nil {
			v.err = err
		}
	}
}

// failingError describes the keys that cannot be written, naming the
// first in byte order, so that the message stays the same while they do.
func (s *Store) failingError() error {
	var first *entry
	for e := range s.failing {
		if first == nil || e.key < first.key {
			first = e
		}
	}
	return fmt.Errorf("write %s: %d keys cannot be written and are kept in memory, retried every pass; the first: key %q: %s", s.path, len(s.failing), first.key, s.failing[first])
}

// reservation returns how far the durable /hi reservation should reach:
// unchanged while more than half of it is left, else ten intervals of the
// current rate ahead (at least 1,000 numbers, at most 10 million).
func (s *Store) reservation(hits uint64) uint64 {
	r := s.reserved.Load()
	rate := hits - s.used // numbers used in the last interval
	size := min(max(10*rate, 1000), 10_000_000)
	if r > hits && r-hits >= size/2 {
		return r
	}
	return hits + size
}
