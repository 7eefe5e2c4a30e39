// The Store: Open (and its load of the file into memory), the visits'
// path up to the journal and the pass they join, the reads, the
// counters and Close. What the visits count reaches the file through the
// flusher (flush.go).

package boltstore

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"path/filepath"
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

	hooks atomic.Pointer[hooks] // tests' hooks (hooks.go); nil: none

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

// formatMarked reports whether the file says format 3. Only Open calls it.
func (s *Store) formatMarked() bool {
	marked := false
	s.db.View(func(tx *bolt.Tx) error {
		marked = string(tx.Bucket(bucketMeta).Get(keyFormat)) == formatValue
		return nil
	})
	return marked
}

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
				key, t, err := keyTotal(k, v)
				if err != nil {
					return err
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
					for isDayOf(dk, k) {
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
			for k, v := c.Seek(dayKey(key, first)); isDayOf(k, prefix); k, v = c.Next() {
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
