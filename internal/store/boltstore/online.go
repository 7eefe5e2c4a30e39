// Export and import of the running store ([Store.Export],
// [Store.Import]): through temporary spools in the data directory, and
// for an import one transaction that the flusher runs as an owner
// operation (owners.go). The offline ones are in backup.go.

package boltstore

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"

	bolt "go.etcd.io/bbolt"

	"visitors/internal/store"
	"visitors/internal/store/dump"
	"visitors/internal/store/tally"
)

var _ store.Backup = (*Store)(nil)

// Export implements [store.Backup]: it writes everything counted before
// the call to the file (Flush), then the dump of the file as it is then,
// with the exact /hi counter, in the format of [Offline.Export]. The
// dump is spooled to a temporary file in the data directory first, so
// that a slow reader never holds a bbolt read transaction open (a long
// one would stall the flusher when the file grows).
func (s *Store) Export(ctx context.Context, w io.Writer) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := s.Flush(); err != nil {
		return fmt.Errorf("export: %w", err)
	}
	hits := s.hits.Load() // after Flush: every number it wrote
	spool, err := os.CreateTemp(s.o.Dir, exportSpool)
	if err != nil {
		return fmt.Errorf("export: spool: %w", err)
	}
	defer os.Remove(spool.Name())
	defer spool.Close()
	err = s.db.View(func(tx *bolt.Tx) error { return exportTx(tx, hits, spool) })
	if err != nil {
		return fmt.Errorf("export %s: %w", s.path, err)
	}
	if _, err := spool.Seek(0, io.SeekStart); err != nil {
		return fmt.Errorf("export: spool: %w", err)
	}
	if _, err := io.Copy(w, dump.ContextReader(ctx, spool)); err != nil {
		return fmt.Errorf("export: %w", err)
	}
	return nil
}

// The spools of online export and import in the data directory.
const (
	exportSpool = "export-*.tmp"
	importSpool = "import-*.tmp"
)

// removeSpools removes the spools a crash left in dir.
func removeSpools(dir string) {
	for _, pattern := range []string{exportSpool, importSpool} {
		names, _ := filepath.Glob(filepath.Join(dir, pattern))
		for _, n := range names {
			os.Remove(n)
		}
	}
}

// imported is one key of an import as memory takes it.
type imported struct {
	total, today uint64
	locked       bool
	laterDate    string           // the dump's latest date after today, if any
	laters       []tally.DayCount // the key's days after today in the file after the import, in order
	tomorrow     uint64           // the dump's count of the day after today: a midnight during the transaction makes it today
}

// Import implements [store.Backup]. The dump is read once into a
// temporary file in the data directory while [dump.Spool] checks all of
// it; a refused dump changes nothing. The flusher then commits what is
// pending and runs the import in one bbolt transaction, which decodes
// the spooled dump again: a count the addition would raise above the
// most it may hold refuses the dump then, and the transaction is rolled
// back. Replace empties the totals, days and locks first, and drops the
// unique-visitor sketches of the keys the dump does not have; tokens are
// kept. Only once the transaction has committed does memory change: each
// key of the dump gets a new entry (see replace in owners.go). The
// flusher is busy for the transaction: sync visits wait for it, batch
// visits count in memory meanwhile.
func (s *Store) Import(ctx context.Context, r io.Reader, replace bool) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	// The keys and where each lies in the spool, to write them in the
	// file's order: bbolt splits a node only at the commit, so one
	// transaction of keys in another order moves a growing node's tail on
	// every put (an online import of 80,000 keys in random order took 16 s,
	// of a million about 40 minutes, the flusher held all along).
	var order []dump.Spooled
	spool, hits, err := dump.Spool(ctx, r, s.o.Dir, importSpool, func(keys []dump.Key, spans []dump.Span) error {
		for i := range keys {
			order = append(order, dump.Spooled{Key: keys[i].Key, At: spans[i]})
		}
		return nil
	})
	switch {
	case errors.Is(err, store.ErrInvalidDump):
		return fmt.Errorf("import: %w; the store was not changed", err)
	case err != nil:
		return fmt.Errorf("import: %w", err)
	}
	defer os.Remove(spool.Name())
	defer spool.Close()
	slices.SortStableFunc(order, func(a, b dump.Spooled) int { return compareFile(a.Key, b.Key) })

	var (
		keys     map[string]*imported
		refused  error
		tooMany  error
		fileHits uint64
		today    store.Day
	)
	op := &ownerOp{
		run: func(tx *bolt.Tx, floor uint64) error {
			// Today is the flusher's, after the pass before this run: the
			// dump's count of it is the key's count of it in memory, and
			// applyImport restores each entry on this day. Read before the
			// import waited for the flusher, a midnight meanwhile counted
			// the dump's count of the day that ended on the new one too,
			// and lost the new one's (TestOnlineImportAcrossMidnight).
			today = s.cal.Today()
			todayDate := today.Time().Format(dump.DateLayout)
			tomorrowDate := (today + 1).Time().Format(dump.DateLayout)
			if f := s.testHooks().importRun; f != nil {
				f()
			}
			keys = map[string]*imported{}
			held := 0 // the keys the store holds besides the dump's new ones
			if !replace {
				held = s.keys.Len() // the file holds them all: runOps committed what was pending
			}
			if replace {
				if floor != 0 { // the log holds counts of keys the file does not: floor every key memory has
					var err error
					s.keys.Range(func(k string, _ *entry) bool {
						err = putFloor(tx, keyPrefix([]byte(k)), floor)
						return err == nil
					})
					if err != nil {
						return err
					}
				}
				for _, b := range [][]byte{bucketTotals, bucketDays, bucketLocks} {
					if err := tx.DeleteBucket(b); err != nil {
						return err
					}
					if _, err := tx.CreateBucket(b); err != nil {
						return err
					}
				}
			}
			err := dump.ReadSpooled(spool, order, func(batch []dump.Key) error {
				added, err := addKeys(tx, batch)
				held += added
				var oe *overflowError
				if errors.As(err, &oe) {
					refused = err
				}
				if err != nil {
					return err
				}
				for _, kd := range batch {
					im := keys[kd.Key]
					if im == nil {
						im = &imported{}
						keys[kd.Key] = im
					}
					im.total += kd.Total
					im.today += kd.Days[todayDate]
					im.tomorrow += kd.Days[tomorrowDate]
					im.locked = im.locked || kd.Locked
					for date := range kd.Days { // canonical dates sort as days
						if date > todayDate && date > im.laterDate {
							im.laterDate = date
						}
					}
				}
				return nil
			})
			if err != nil {
				return err
			}
			// The days after today that the file holds for a key, the
			// dump's and (with merge) those the key held before, each with
			// its count after the import: the new entry's tally counts on
			// from each when its day comes (tally.Later), and put keeps
			// the latest in the dated total (see Store.ahead).
			days := tx.Bucket(bucketDays).Cursor()
			for k, im := range keys {
				_, held := s.ahead[s.keys.Load([]byte(k))]
				if im.laterDate == "" && (replace || !held) {
					continue
				}
				prefix := keyPrefix([]byte(k))
				for dk, dv := days.Seek(dayKey([]byte(k), today+1)); isDayOf(dk, prefix); dk, dv = days.Next() {
					d := store.Day(binary.BigEndian.Uint32(dk[len(prefix):]))
					n, err := readRecord(tagDays, dk, dv)
					if err != nil {
						return fmt.Errorf("key %q: day %s: %w", k, d.Time().Format(dump.DateLayout), err)
					}
					if n > 0 {
						im.laters = append(im.laters, tally.DayCount{Day: d, Count: n})
					}
				}
			}
			if s.o.MaxKeys > 0 && held > s.o.MaxKeys {
				tooMany = dump.TooManyKeys(held, s.o.MaxKeys)
				return tooMany
			}
			if replace {
				if err := dropSketches(tx, keys); err != nil {
					return err
				}
			}
			meta := tx.Bucket(bucketMeta)
			old, err := readRecord(tagMeta, keyHits, meta.Get(keyHits))
			if err != nil {
				return fmt.Errorf("the /hi counter: %w", err)
			}
			fileHits = max(old, hits)
			return meta.Put(keyHits, record(tagMeta, keyHits, fileHits))
		},
		apply: func() { s.applyImport(keys, today, hits, fileHits, replace) },
	}
	if err := s.do(op); err != nil {
		if tooMany != nil {
			return fmt.Errorf("import: %w; the store was not changed", tooMany)
		}
		if refused != nil {
			return fmt.Errorf("import: %w: %w; the store was not changed", store.ErrInvalidDump, refused)
		}
		return fmt.Errorf("import: %w; the store was not changed", err)
	}
	return nil
}

// fileBefore is the count of day d, after today, that the file held for
// im's key before the import: the file's after it less the dump's (of
// the day after today; a transaction is not a day long).
func fileBefore(im *imported, today, d store.Day) uint64 {
	var n uint64
	for _, dc := range im.laters {
		if dc.Day == d {
			n = dc.Count
		}
	}
	if d == today+1 {
		n -= min(n, im.tomorrow)
	}
	return n
}

// dropSketches removes the unique-visitor sketches of every key not in
// keep.
func dropSketches(tx *bolt.Tx, keep map[string]*imported) error {
	b := tx.Bucket(bucketUniques)
	if b == nil {
		return nil
	}
	var drop [][]byte
	err := b.ForEach(func(k, _ []byte) error {
		if len(k) < 4 {
			return nil
		}
		if key, err := splitTotalKey(k[4:]); err == nil && keep[string(key)] != nil {
			return nil
		}
		drop = append(drop, append([]byte(nil), k...))
		return nil
	})
	if err != nil {
		return err
	}
	for _, k := range drop {
		if err := b.Delete(k); err != nil {
			return err
		}
	}
	return nil
}

// applyImport brings memory to what an import committed: each key of
// the dump gets a new entry (with merge, from the old entry's counts
// plus the dump's, and the old entry's later visits forwarded to it);
// with replace every other key is retired. The /hi counter becomes at
// least the dump's. Today is the day the import's transaction took as
// today: its counts are that day's, should a midnight have come since
// (the new entry begins the next day with its first visit, on from the
// count the file holds for it, as Later gives). Only the flusher calls
// it.
func (s *Store) applyImport(keys map[string]*imported, today store.Day, hits, fileHits uint64, replace bool) {
	if replace {
		var drop []*entry
		s.keys.Range(func(k string, e *entry) bool {
			if keys[k] == nil {
				drop = append(drop, e)
			}
			return true
		})
		for _, e := range drop {
			s.retire(e, nil, 0)
			s.keys.Delete(e.key, e)
		}
	}
	for k, im := range keys {
		e2 := &entry{key: k}
		total, count, locked := im.total, im.today, im.locked
		old := s.keys.Load([]byte(k))
		var base uint64
		if old != nil && !replace {
			// A midnight since the transaction took today: the visits the
			// old entry counted on the new day are forwarded to the new
			// entry (replace), which counts them on from the file's count
			// of that day, as visits after it; base leaves them out. They
			// are what the old entry has of the day beyond the count it
			// held (Later), which is the file's before the import. Read
			// before base: a visit between the two is in base and the
			// total, not forwarded (TestOnlineImportMidnightDuringItsTransaction).
			var after uint64
			if now := s.cal.Today(); now > today {
				on := old.On(now) // once: a visit between two reads would count in one
				after = on - min(on, fileBefore(im, today, now))
			}
			base = old.Total() - after
			total += base
			count += old.On(today)
			locked = locked || old.Locked()
		}
		e2.Restore(total, today, count)
		for _, dc := range im.laters {
			e2.Later(dc.Day, dc.Count)
		}
		if old != nil {
			delete(s.ahead, old)
		}
		if n := len(im.laters); n > 0 {
			if s.ahead == nil {
				s.ahead = make(map[*entry]tally.DayCount)
			}
			s.ahead[e2] = im.laters[n-1]
		}
		e2.SetLocked(locked)
		e2.written = total
		s.replace(e2, !replace, old, base)
		if !replace {
			s.markDirty(e2) // memory may be ahead of the file by the visits that raced
		}
		if old != nil && old.gone() && old.ret.succ == e2 && old.Total() > old.ret.fwd {
			// Now, not when a pass meets old in the journal: the visits
			// of a midnight during the transaction put old there before
			// e2, so a pass would write e2 before forwarding them, and
			// Close's last pass would leave them out of the file.
			if to := s.forward(old); to != nil {
				s.markDirty(to)
			}
		}
	}
	for {
		n := s.hits.Load()
		if n >= hits || s.hits.CompareAndSwap(n, hits) {
			break
		}
	}
	if fileHits > s.reserved.Load() {
		s.reserved.Store(fileHits) // the file holds it: numbers up to it are durable
	}
	s.used = max(s.used, s.hits.Load())
}
