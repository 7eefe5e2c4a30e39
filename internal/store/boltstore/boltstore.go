// Package boltstore is the durable [store.Store]: counts live in memory
// (package memstore) and reach one bbolt file in the data directory.
//
// One goroutine, the flusher, is the only writer. It takes the keys that
// changed since its last pass and writes their absolute counts in one
// bbolt transaction, which bbolt makes durable with fdatasync before it
// returns. Because there is one writer writing absolute values, no two
// writes can land out of order.
//
// With [Batch] durability the flusher runs every flush interval and
// requests never wait: a crash loses at most the visits of the last
// interval. The /hi numbers are reserved ahead, as database sequences do
// with a cache: the flusher makes a range durable before any number in it
// is handed out, so no number is given twice across a crash (a crash
// skips the unused rest of the range instead).
//
// With [Sync] durability each request waits for the next pass of the
// flusher to commit, so a visit is acknowledged only once it is on disk.
// Requests that arrive while a pass is committing share the next one:
// group commit, one fdatasync pair for all of them.
//
// A failed write keeps the changes in memory, marks the store unhealthy
// (see [Store.Health]) and is retried on the next pass; in Sync mode the
// waiting requests get the error, never a false acknowledgement.
package boltstore

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"
	bolt "go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"

	"visitors/internal/store"
	"visitors/internal/store/memstore"
)

var _ store.Store = (*Store)(nil)

// Durability says when a visit is on disk.
type Durability int

const (
	// Batch writes what changed every flush interval; requests never wait.
	Batch Durability = iota
	// Sync answers a request only after its visit is on disk.
	Sync
)

// String returns the flag value of d.
func (d Durability) String() string {
	if d == Sync {
		return "sync"
	}
	return "batch"
}

// ParseDurability parses a -durability value.
func ParseDurability(s string) (Durability, error) {
	switch s {
	case "batch":
		return Batch, nil
	case "sync":
		return Sync, nil
	}
	return 0, fmt.Errorf("durability %q: want batch or sync", s)
}

// FileName is the bbolt file inside the data directory.
const FileName = "visitors.db"

// formatValue marks a bbolt file as a visitors store of this format.
const formatValue = "visitors-counts-1"

var (
	bucketMeta   = []byte("meta")   // format, hits
	bucketTotals = []byte("totals") // key -> total
	bucketDays   = []byte("days")   // uvarint(len key) key day(4) -> count
	keyFormat    = []byte("format")
	keyHits      = []byte("hits")
)

// Options configure [Open].
type Options struct {
	Dir           string        // the data directory, created if missing
	Durability    Durability    // Batch or Sync
	FlushInterval time.Duration // Batch: how often changes are written; default 100ms
	MaxKeys       int           // most distinct keys; <= 0 means no limit
	Now           func() time.Time
	Log           zerolog.Logger // flush failures and recoveries
}

// Store is the durable [store.Store]. It is safe for concurrent use.
type Store struct {
	mem  *memstore.Store
	db   *bolt.DB
	path string
	o    Options

	reserved atomic.Uint64         // Batch: /hi numbers up to here are durable
	arrivals atomic.Uint64         // calls to wait so far: how a pass sees visits still joining
	health   atomic.Pointer[error] // the last flush error, nil when healthy
	next     atomic.Pointer[pass]  // the flusher pass that has not begun yet
	kick     chan struct{}         // wakes the flusher; buffered 1
	stop     chan struct{}
	done     chan struct{}
	once     sync.Once

	// Owned by the flusher.
	used    uint64 // hits at the previous pass, to size reservations
	pending []write
}

// pass is one run of the flusher; done is closed when its commit ends.
type pass struct {
	done chan struct{}
	err  error // read after done is closed
}

func newPass() *pass { return &pass{done: make(chan struct{})} }

// write is one entry's snapshot taken by the flusher.
type write struct {
	e         *memstore.Entry
	total     uint64
	day       store.Day
	count     uint64
	pastDay   store.Day // an earlier day to finish writing, or 0
	pastCount uint64
	writePast bool
}

// Open opens or creates the store in o.Dir and loads every count into
// memory. It refuses, with an error naming the file and the problem, a
// directory it cannot write, a file that is not a visitors store, a
// corrupted file, and a directory another process has open. The caller
// must call Close, which writes everything still in memory.
func Open(o Options) (*Store, error) {
	if o.FlushInterval <= 0 {
		o.FlushInterval = 100 * time.Millisecond
	}
	db, path, err := openDB(o.Dir)
	if err != nil {
		return nil, err
	}
	s := &Store{
		mem:  memstore.New(memstore.Options{MaxKeys: o.MaxKeys, Now: o.Now, Track: true}),
		db:   db,
		path: path,
		o:    o,
		kick: make(chan struct{}, 1),
		stop: make(chan struct{}),
		done: make(chan struct{}),
	}
	if err := s.load(); err != nil {
		s.mem.Close()
		db.Close()
		return nil, err
	}
	s.next.Store(newPass())
	go s.flusher()
	return s, nil
}

// load checks the file's format and integrity and reads every count
// into memory.
func (s *Store) load() (err error) {
	defer func() {
		// bbolt panics on some corruptions deep in a page; report them
		// as what they are rather than crash without a word.
		if r := recover(); r != nil {
			err = fmt.Errorf("read %s: the file is corrupted (%v); restore it from a backup (visitors import)", s.path, r)
		}
	}()
	today := s.mem.Today()
	return s.db.View(func(tx *bolt.Tx) error {
		var bad error
		for err := range tx.Check() { // drain: Check's goroutine sends them all
			if bad == nil {
				bad = err
			}
		}
		if bad != nil {
			return fmt.Errorf("check %s: the file is corrupted (%v); restore it from a backup (visitors import)", s.path, bad)
		}
		meta := tx.Bucket(bucketMeta)
		hits, err := u64(meta.Get(keyHits))
		if err != nil {
			return fmt.Errorf("read %s: hits: %w", s.path, err)
		}
		s.mem.SetHits(hits)
		s.reserved.Store(hits)
		s.used = hits
		days := tx.Bucket(bucketDays)
		return tx.Bucket(bucketTotals).ForEach(func(k, v []byte) error {
			total, err := u64(v)
			if err != nil {
				return fmt.Errorf("read %s: total of %q: %w", s.path, k, err)
			}
			n, _ := u64(days.Get(dayKey(k, today)))
			s.mem.Restore(k, total, today, n)
			return nil
		})
	})
}

// openDB opens, or creates, the bbolt file in dir and checks that it is
// a visitors store. It maps bbolt's errors to messages that name the file
// and say what to do.
func openDB(dir string) (*bolt.DB, string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, "", fmt.Errorf("create data directory %s: %w", dir, err)
	}
	path := filepath.Join(dir, FileName)
	_, statErr := os.Stat(path)
	existed := statErr == nil
	db, err := boltOpen(path, &bolt.Options{Timeout: 200 * time.Millisecond})
	switch {
	case errors.Is(err, berrors.ErrTimeout):
		return nil, "", fmt.Errorf("open %s: another process has it open (the file is locked); run one visitors per data directory", path)
	case errors.Is(err, berrors.ErrInvalid), errors.Is(err, berrors.ErrVersionMismatch):
		return nil, "", fmt.Errorf("open %s: not a visitors data file (%v); refusing to start rather than overwrite it", path, err)
	case errors.Is(err, berrors.ErrChecksum):
		return nil, "", fmt.Errorf("open %s: the file is corrupted (%v); restore it from a backup (visitors import)", path, err)
	case err != nil && strings.Contains(err.Error(), "corrupted"):
		return nil, "", err
	case err != nil && existed:
		return nil, "", fmt.Errorf("open %s: not a visitors data file, or a damaged one (%v); refusing to start rather than overwrite it", path, err)
	case err != nil:
		return nil, "", fmt.Errorf("open %s: %w", path, err)
	}
	if err := db.Update(initBuckets); err != nil {
		db.Close()
		return nil, "", fmt.Errorf("open %s: %w", path, err)
	}
	return db, path, nil
}

// boltOpen is bolt.Open that turns the panics bbolt raises on some
// corrupted pages (a broken freelist, say) into an error.
func boltOpen(path string, o *bolt.Options) (db *bolt.DB, err error) {
	defer func() {
		if r := recover(); r != nil {
			db, err = nil, fmt.Errorf("open %s: the file is corrupted (%v); restore it from a backup (visitors import)", path, r)
		}
	}()
	return bolt.Open(path, 0o644, o)
}

// initBuckets creates the buckets of a new file, or checks that an
// existing one is a visitors store.
func initBuckets(tx *bolt.Tx) error {
	meta := tx.Bucket(bucketMeta)
	if meta == nil {
		empty := true
		tx.ForEach(func([]byte, *bolt.Bucket) error { empty = false; return nil })
		if !empty {
			return errors.New("a bbolt database, but not a visitors store (no meta bucket); refusing to start rather than change it")
		}
		for _, b := range [][]byte{bucketMeta, bucketTotals, bucketDays} {
			if _, err := tx.CreateBucket(b); err != nil {
				return err
			}
		}
		meta = tx.Bucket(bucketMeta)
		if err := meta.Put(keyFormat, []byte(formatValue)); err != nil {
			return err
		}
		return meta.Put(keyHits, be64(0))
	}
	if f := string(meta.Get(keyFormat)); f != formatValue {
		return fmt.Errorf("format %q, want %q: not a data file this version of visitors can read", f, formatValue)
	}
	if tx.Bucket(bucketTotals) == nil || tx.Bucket(bucketDays) == nil {
		return errors.New("a visitors store with buckets missing: the file is damaged")
	}
	return nil
}

// Hit implements [store.Store].
func (s *Store) Hit(ctx context.Context) (uint64, error) {
	n, _ := s.mem.Hit(ctx)
	if s.o.Durability == Sync {
		return n, s.wait(ctx)
	}
	for n > s.reserved.Load() { // past the durable reservation: rare
		if err := s.wait(ctx); err != nil {
			return 0, err
		}
	}
	return n, nil
}

// Incr implements [store.Store].
func (s *Store) Incr(ctx context.Context, key []byte) (store.Counts, error) {
	c, err := s.mem.Incr(ctx, key)
	if err != nil || s.o.Durability == Batch {
		return c, err
	}
	return c, s.wait(ctx)
}

// wait blocks until a flusher pass that begins after this call has
// committed, and returns its error.
func (s *Store) wait(ctx context.Context) error {
	s.arrivals.Add(1)
	p := s.next.Load()
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
		return errors.New("store closed")
	}
}

// Get implements [store.Store].
func (s *Store) Get(ctx context.Context, key []byte) (store.Counts, error) {
	return s.mem.Get(ctx, key)
}

// Days implements [store.Store]. Days before this process started come
// from the file; memory wins where it knows more.
func (s *Store) Days(ctx context.Context, key []byte, n int) (store.Daily, error) {
	d, err := s.mem.Days(ctx, key, n)
	if err != nil {
		return d, err
	}
	first := store.DayOf(d.Last) - store.Day(n-1)
	err = s.db.View(func(tx *bolt.Tx) error {
		c := tx.Bucket(bucketDays).Cursor()
		prefix := keyPrefix(key)
		for k, v := c.Seek(dayKey(key, first)); k != nil && len(k) == len(prefix)+4 && string(k[:len(prefix)]) == string(prefix); k, v = c.Next() {
			day := store.Day(binary.BigEndian.Uint32(k[len(prefix):]))
			i := int(day) - int(first)
			if i < 0 || i >= n {
				break
			}
			if v, err := u64(v); err == nil && v > d.Counts[i] {
				d.Counts[i] = v
			}
		}
		return nil
	})
	if err != nil {
		return d, fmt.Errorf("read %s: %w", s.path, err)
	}
	return d, nil
}

// Keys implements [store.Store].
func (s *Store) Keys() int { return s.mem.Keys() }

// Health returns the error of the last flush, or nil if it succeeded.
func (s *Store) Health() error {
	if p := s.health.Load(); p != nil {
		return *p
	}
	return nil
}

// Close stops the flusher after a last flush, and closes the file. It
// returns the error of that last flush: visits it could not write are
// lost, and the error says so.
func (s *Store) Close() error {
	s.once.Do(func() { close(s.stop) })
	<-s.done
	err := s.Health()
	s.mem.Close()
	if cerr := s.db.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("close %s: %w", s.path, cerr)
	}
	return err
}

func (s *Store) flusher() {
	defer close(s.done)
	// Batch mode flushes on the timer. In Sync mode every visit kicks the
	// flusher, and the timer only retries a failed flush, so that the
	// store heals, and /healthz says so, without waiting for a visit.
	t := time.NewTicker(s.o.FlushInterval)
	defer t.Stop()
	for {
		select {
		case <-s.stop:
			s.flush()
			if s.Health() != nil { // one more try before giving up
				s.flush()
			}
			p := s.next.Load()
			p.err = errors.New("store closed")
			close(p.done)
			return
		case <-t.C:
		case <-s.kick:
			s.gather()
		}
		s.flush()
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

// flush writes every changed entry, and the /hi counter, in one bbolt
// transaction, then completes the pass the waiting requests hold.
func (s *Store) flush() {
	p := s.next.Load()
	s.next.Store(newPass()) // visits from here on wait for the next pass

	s.pending = s.pending[:0]
	s.mem.TakeDirty(func(e *memstore.Entry) {
		e.Clean() // before reading: a visit after this marks e dirty again
		w := write{e: e}
		w.total, w.day, w.count = e.Snapshot()
		if e.FlushedDay != 0 && e.FlushedDay < w.day {
			// The day rolled over since the last write: finish the old day.
			if n, ok := e.Past(e.FlushedDay); ok {
				w.pastDay, w.pastCount, w.writePast = e.FlushedDay, n, true
			}
		}
		s.pending = append(s.pending, w)
	})
	hits := s.mem.Hits()
	reserve := hits
	if s.o.Durability == Batch {
		reserve = s.reservation(hits)
	}
	if len(s.pending) == 0 && reserve == s.reserved.Load() && s.Health() == nil {
		close(p.done) // nothing to write
		return
	}

	err := s.db.Update(func(tx *bolt.Tx) error {
		if err := tx.Bucket(bucketMeta).Put(keyHits, be64(reserve)); err != nil {
			return err
		}
		totals, days := tx.Bucket(bucketTotals), tx.Bucket(bucketDays)
		for _, w := range s.pending {
			k := []byte(w.e.Key())
			if err := totals.Put(k, be64(w.total)); err != nil {
				return err
			}
			if err := days.Put(dayKey(k, w.day), be64(w.count)); err != nil {
				return err
			}
			if w.writePast {
				if err := days.Put(dayKey(k, w.pastDay), be64(w.pastCount)); err != nil {
					return err
				}
			}
		}
		return nil
	})
	if err != nil {
		for _, w := range s.pending {
			s.mem.MarkDirty(w.e) // keep them for the next pass
		}
		if s.Health() == nil {
			s.o.Log.Error().Err(err).Str("file", s.path).Int("keys", len(s.pending)).Msg("flush failed; keeping the counts in memory and retrying")
		}
		err = fmt.Errorf("flush to %s: %w", s.path, err)
		s.health.Store(&err)
	} else {
		for _, w := range s.pending {
			if w.day > w.e.FlushedDay {
				w.e.FlushedDay = w.day
			}
		}
		s.reserved.Store(reserve)
		s.used = hits
		if s.health.Swap(nil) != nil {
			s.o.Log.Info().Str("file", s.path).Msg("flush recovered")
		}
	}
	p.err = err
	close(p.done)
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

// keyPrefix is what every day of key starts with in the days bucket.
func keyPrefix(key []byte) []byte {
	return append(binary.AppendUvarint(make([]byte, 0, len(key)+9), uint64(len(key))), key...)
}

// dayKey is the key of key's count on day d: the key's length as a
// uvarint, the key, and the day as 4 big-endian bytes, so that one key's
// days sort together and in order.
func dayKey(key []byte, d store.Day) []byte {
	return binary.BigEndian.AppendUint32(keyPrefix(key), uint32(d))
}

func be64(n uint64) []byte { return binary.BigEndian.AppendUint64(nil, n) }

func u64(b []byte) (uint64, error) {
	if b == nil {
		return 0, nil
	}
	if len(b) != 8 {
		return 0, fmt.Errorf("value of %d bytes, want 8", len(b))
	}
	return binary.BigEndian.Uint64(b), nil
}
