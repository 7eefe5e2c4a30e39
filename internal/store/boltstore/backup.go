package boltstore

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"time"

	bolt "go.etcd.io/bbolt"

	"visitors/internal/store"
	"visitors/internal/store/dump"
)

// Offline is the embedded store in Dir while no service runs on it: what
// the CLI's "visitors export" and "visitors import" read and write. Its
// methods take the file's lock, so a service cannot start on the store
// meanwhile, and they fail if one holds it. A running store is exported
// and imported through its owner instead, [Store.Export] and
// [Store.Import] (the owner API's /api/v1/export and /api/v1/import),
// while it keeps counting. An Offline holds nothing open between calls;
// two imports into one store must not run at once.
type Offline struct {
	Dir string // the data directory, as [Options.Dir]
	// MaxKeys is the most distinct keys the store may hold after an
	// import; <= 0: no limit. Export ignores it.
	MaxKeys int
}

// Export writes every counter of the store in o.Dir, totals, daily
// counts and locks, as one JSON [dump.Dump] to w, one key a line,
// streaming. The store must not be open in another process: Export takes
// its lock. A record whose checksum fails stops the export with an error
// naming it.
func (o Offline) Export(w io.Writer) error {
	path := filepath.Join(o.Dir, FileName)
	if _, err := os.Stat(path); err != nil {
		return fmt.Errorf("export: %w", err)
	}
	if _, err := verifyFile(path); err != nil {
		return err
	}
	db, err := boltOpen(path, &bolt.Options{Timeout: 200 * time.Millisecond, ReadOnly: true})
	if err != nil {
		return err
	}
	defer db.Close()
	// Visits a crash left in the log are exported too, from a copy:
	// export writes nothing in dir.
	switch n, err := logPending(db, o.Dir); {
	case err != nil:
		return fmt.Errorf("export %s: %w", path, err)
	case n > 0:
		cp, remove, err := settledCopy(db, o.Dir)
		if err != nil {
			return fmt.Errorf("export: %w", err)
		}
		defer remove()
		db = cp
	}
	err = db.View(func(tx *bolt.Tx) error {
		meta := tx.Bucket(bucketMeta)
		if meta == nil || string(meta.Get(keyFormat)) != formatValue && string(meta.Get(keyFormat)) != formatValueV2 {
			return errors.New("not a visitors data file of this version (start the service once to migrate an older one)")
		}
		hits, err := readRecord(tagMeta, keyHits, meta.Get(keyHits))
		if err != nil {
			return fmt.Errorf("the /hi counter: %w", err)
		}
		return exportTx(tx, hits, w)
	})
	if err != nil {
		return fmt.Errorf("export %s: %w", path, err)
	}
	return nil
}

// exportTx writes the dump of the store in tx, with hits as its /hi
// counter, to w: one key a line, in the file's order.
func exportTx(tx *bolt.Tx, hits uint64, w io.Writer) error {
	enc := dump.NewEncoder(w, hits)
	days := tx.Bucket(bucketDays).Cursor()
	locks := tx.Bucket(bucketLocks) // nil in a file from before locks
	err := tx.Bucket(bucketTotals).ForEach(func(k, v []byte) error {
		key, t, err := keyTotal(k, v)
		if err != nil {
			return err
		}
		kd := dump.Key{Key: string(key), Total: t.n, Days: map[string]uint64{}}
		if locks != nil {
			if lv := locks.Get(k); lv != nil {
				if _, err := readRecord(tagLocks, k, lv); err != nil {
					return fmt.Errorf("the lock of key %q: %w", key, err)
				}
				kd.Locked = true
			}
		}
		for dk, dv := days.Seek(k); isDayOf(dk, k); dk, dv = days.Next() {
			_, d, err := splitDayKey(dk)
			if err != nil {
				return fmt.Errorf("a day of key %q: %w", key, err)
			}
			n, err := readRecord(tagDays, dk, dv)
			if err != nil {
				return fmt.Errorf("the count of key %q on %s: %w", key, d.Time().Format(dump.DateLayout), err)
			}
			kd.Days[d.Time().Format(dump.DateLayout)] = n
		}
		return enc.Encode(&kd)
	})
	if err != nil {
		return err
	}
	return enc.Close()
}

// importBatch is how many keys one transaction of an import writes. A
// test lowers it.
var importBatch = 10_000

// Import reads a [dump.Dump] from r into the store in o.Dir, creating it
// if needed. With replace, the dump replaces every count and lock (the
// owner's tokens are kept); otherwise its counts are added to what the
// store holds, and its locks join the store's. Either way the /hi counter
// becomes the larger of the two, so no number is handed out twice. A dump
// that would take the store past o.MaxKeys distinct keys is refused whole,
// with an error wrapping [store.ErrTooManyKeys].
//
// It is strict and all or nothing: a dump with a date outside
// 1970-01-01..9999-12-31, a count that would overflow, days adding up to
// more than the key's total, a key the service would not accept, a field
// it does not know, or anything after the document is refused with its
// line and the reason, and the store is left as it was. It streams: the
// dump is read one key at a time into a copy of the store, which replaces
// the store (a rename) only once the whole dump has been read. The store
// must not be open in another process.
func (o Offline) Import(r io.Reader, replace bool) error {
	if err := os.MkdirAll(o.Dir, DirMode); err != nil {
		return fmt.Errorf("import: create data directory %s: %w", o.Dir, err)
	}
	path := filepath.Join(o.Dir, FileName)
	// The store, if there is one, is checked and opened read-only: its
	// shared lock keeps a service from starting on it meanwhile, and
	// nothing writes to it (a format 1 store is migrated in the copy).
	var live *bolt.DB
	format := ""
	switch _, err := os.Stat(path); {
	case err == nil:
		if format, err = verifyFile(path); err != nil {
			return err
		}
		// Visits a crash left in the log join the store first. (A store
		// made from scratch below gets a log id of its own, so the old
		// log's records can never replay onto it.)
		if err := settleLog(o.Dir, path); err != nil {
			return fmt.Errorf("import: %w", err)
		}
		if live, err = boltOpen(path, &bolt.Options{Timeout: 200 * time.Millisecond, ReadOnly: true}); err != nil {
			return err
		}
		defer live.Close()
	case !errors.Is(err, os.ErrNotExist):
		return fmt.Errorf("import: %w", err)
	}
	tmpPath := path + ".import"
	if err := os.Remove(tmpPath); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("import: remove the leftover %s: %w", tmpPath, err)
	}
	var oldHits uint64
	var tokens []kv // replace keeps the owner's tokens: they are not counts
	held := 0       // the keys the store holds besides the dump's new ones
	if live != nil {
		err := live.View(func(tx *bolt.Tx) error {
			var err error
			oldHits, err = readHits(tx, format)
			if err != nil {
				return err
			}
			if !replace {
				held = tx.Bucket(bucketTotals).Stats().KeyN
			}
			if replace {
				tokens, err = readTokens(tx)
				return err
			}
			return tx.CopyFile(tmpPath, FileMode)
		})
		if err != nil {
			os.Remove(tmpPath)
			return fmt.Errorf("import: read %s: %w", path, err)
		}
	}
	tmp, err := bolt.Open(tmpPath, FileMode, &bolt.Options{NoSync: true})
	if err != nil {
		os.Remove(tmpPath)
		return fmt.Errorf("import: open %s: %w", tmpPath, err)
	}
	placed := false
	defer func() {
		if !placed {
			tmp.Close()
			os.Remove(tmpPath)
		}
	}()
	switch {
	case live == nil || replace:
		err = tmp.Update(func(tx *bolt.Tx) error {
			if err := createBuckets(tx); err != nil {
				return err
			}
			b := tx.Bucket(bucketTokens)
			for _, t := range tokens {
				if err := b.Put(t.k, t.v); err != nil {
					return err
				}
			}
			return nil
		})
	case format == formatValueV1:
		err = tmp.Update(migrateV1)
	}
	if err != nil {
		return fmt.Errorf("import: %s: %w", tmpPath, err)
	}
	hits, err := dump.Decode(r, importBatch, func(keys []dump.Key, _ []dump.Span) error {
		added, err := writeKeys(tmp, keys)
		held += added
		return err
	})
	if err == nil && o.MaxKeys > 0 && held > o.MaxKeys {
		err = dump.TooManyKeys(held, o.MaxKeys)
	}
	if err != nil {
		return fmt.Errorf("import: %w; the store was not changed", err)
	}
	err = tmp.Update(func(tx *bolt.Tx) error {
		return tx.Bucket(bucketMeta).Put(keyHits, record(tagMeta, keyHits, max(oldHits, hits)))
	})
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("import: write %s: %w; the store was not changed", tmpPath, err)
	}
	if live != nil {
		err = os.Rename(tmpPath, path)
	} else if err = os.Link(tmpPath, path); err == nil { // fails if a store appeared meanwhile
		os.Remove(tmpPath)
	}
	if err != nil {
		return fmt.Errorf("import: put the new store in place: %w; the store was not changed", err)
	}
	placed = true
	if err := syncDir(o.Dir); err != nil {
		return fmt.Errorf("import: %w", err)
	}
	return nil
}

// kv is one bbolt record, copied.
type kv struct{ k, v []byte }

// readTokens copies the token records of the store in tx, checking them.
func readTokens(tx *bolt.Tx) ([]kv, error) {
	b := tx.Bucket(bucketTokens)
	if b == nil {
		return nil, nil
	}
	var out []kv
	err := b.ForEach(func(k, v []byte) error {
		if _, err := decodeToken(k, v); err != nil {
			return fmt.Errorf("the token %q: %w", k, err)
		}
		out = append(out, kv{bytes.Clone(k), bytes.Clone(v)})
		return nil
	})
	return out, err
}

// readHits reads the /hi counter of a store of the given format.
func readHits(tx *bolt.Tx, format string) (uint64, error) {
	v := tx.Bucket(bucketMeta).Get(keyHits)
	if format == formatValueV1 {
		if len(v) != 8 {
			return 0, errors.New("the /hi counter is malformed")
		}
		return binary.BigEndian.Uint64(v), nil
	}
	return readRecord(tagMeta, keyHits, v)
}

// syncDir makes a rename in dir durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("sync %s: %w", dir, err)
	}
	return nil
}

// writeKeys adds the keys' counts to what db holds, in one transaction,
// and returns how many of them it did not hold.
func writeKeys(db *bolt.DB, keys []dump.Key) (added int, err error) {
	err = db.Update(func(tx *bolt.Tx) error {
		added, err = addKeys(tx, keys)
		return err
	})
	return added, err
}

// addKeys adds the keys' counts to what tx holds, and locks the keys
// the dump locks. It returns how many of the keys tx did not hold.
func addKeys(tx *bolt.Tx, keys []dump.Key) (added int, err error) {
	totals, days := tx.Bucket(bucketTotals), tx.Bucket(bucketDays)
	locks, err := tx.CreateBucketIfNotExists(bucketLocks) // a copy of a file from before locks lacks it
	if err != nil {
		return 0, err
	}
	for i, kd := range keys {
		key := []byte(kd.Key)
		tk := keyPrefix(key)
		if totals.Get(tk) == nil {
			added++
		}
		if err := addRecord(totals, tagTotals, tk, kd.Total, store.MaxTotal); err != nil {
			return added, &dump.KeyError{I: i, Err: fmt.Errorf("key %q: total: %w", kd.Key, err)}
		}
		dates := make([]string, 0, len(kd.Days))
		for d := range kd.Days {
			dates = append(dates, d)
		}
		slices.Sort(dates)
		for _, date := range dates {
			t, _ := time.Parse(dump.DateLayout, date) // checked by checkdump.Key
			if err := addRecord(days, tagDays, dayKey(key, store.DayOf(t)), kd.Days[date], store.MaxDay); err != nil {
				return added, &dump.KeyError{I: i, Err: fmt.Errorf("key %q: day %s: %w", kd.Key, date, err)}
			}
		}
		if kd.Locked {
			if err := locks.Put(tk, record(tagLocks, tk, 1)); err != nil {
				return added, &dump.KeyError{I: i, Err: fmt.Errorf("key %q: lock: %w", kd.Key, err)}
			}
		}
	}
	return added, nil
}

// addRecord adds n to the record under k, up to most. A total it writes
// is plain (format.go): the days it adds to say today's count.
func addRecord(b *bolt.Bucket, tag byte, k []byte, n, most uint64) error {
	old, err := readValue(tag, k, b.Get(k))
	if err != nil {
		return err
	}
	if old > most || n > most-old {
		return &overflowError{old, n, most}
	}
	if old+n == 0 && tag == tagDays {
		return nil
	}
	return b.Put(k, record(tag, k, old+n))
}

// overflowError refuses a count that an import would raise above the
// most it may hold.
type overflowError struct{ old, n, most uint64 }

func (e *overflowError) Error() string {
	return fmt.Sprintf("%d + %d is above the most it may hold, %d", e.old, e.n, e.most)
}
