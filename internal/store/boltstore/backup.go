package boltstore

import (
	"bufio"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"time"

	bolt "go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"

	"visitors/internal/store"
)

// ExportFormat names the JSON format of [Export] and [Import].
const ExportFormat = "visitors-export-1"

// Dump is the JSON document [Export] writes and [Import] reads.
type Dump struct {
	Format string    `json:"format"`
	Hits   uint64    `json:"hits"`
	Keys   []KeyDump `json:"keys"`
}

// KeyDump is one key's counts in a [Dump]; Days maps a UTC date,
// 2006-01-02, to that day's count.
type KeyDump struct {
	Key   string            `json:"key"`
	Total uint64            `json:"total"`
	Days  map[string]uint64 `json:"days,omitempty"`
}

const dateLayout = "2006-01-02"

// Export writes every counter of the store in dir, totals and daily
// counts, as one JSON [Dump] to w. The store must not be open in another
// process: Export takes its lock.
func Export(dir string, w io.Writer) error {
	path := filepath.Join(dir, FileName)
	db, err := openExisting(path)
	if err != nil {
		return err
	}
	defer db.Close()
	bw := bufio.NewWriter(w)
	err = db.View(func(tx *bolt.Tx) error {
		meta := tx.Bucket(bucketMeta)
		if meta == nil || string(meta.Get(keyFormat)) != formatValue {
			return errors.New("not a visitors data file")
		}
		hits, err := u64(meta.Get(keyHits))
		if err != nil {
			return err
		}
		fmt.Fprintf(bw, "{\"format\":%q,\"hits\":%d,\"keys\":[", ExportFormat, hits)
		days := tx.Bucket(bucketDays).Cursor()
		first := true
		err = tx.Bucket(bucketTotals).ForEach(func(k, v []byte) error {
			total, err := u64(v)
			if err != nil {
				return fmt.Errorf("total of %q: %w", k, err)
			}
			kd := KeyDump{Key: string(k), Total: total, Days: map[string]uint64{}}
			prefix := keyPrefix(k)
			for dk, dv := days.Seek(prefix); dk != nil && len(dk) == len(prefix)+4 && string(dk[:len(prefix)]) == string(prefix); dk, dv = days.Next() {
				n, err := u64(dv)
				if err != nil {
					return fmt.Errorf("day count of %q: %w", k, err)
				}
				kd.Days[store.Day(binary.BigEndian.Uint32(dk[len(prefix):])).Time().Format(dateLayout)] = n
			}
			b, err := json.Marshal(kd)
			if err != nil {
				return err
			}
			if !first {
				bw.WriteByte(',')
			}
			first = false
			bw.WriteString("\n")
			_, err = bw.Write(b)
			return err
		})
		if err != nil {
			return err
		}
		_, err = bw.WriteString("\n]}\n")
		return err
	})
	if err != nil {
		return fmt.Errorf("export %s: %w", path, err)
	}
	return bw.Flush()
}

// Import reads a [Dump] from r into the store in dir, creating it if
// needed. With replace, the store is emptied first; otherwise the dump's
// counts are added to what the store holds (and its /hi counter becomes
// the larger of the two, so no number is handed out twice). It is all or
// nothing: one transaction. The store must not be open in another
// process.
func Import(dir string, r io.Reader, replace bool) error {
	var d Dump
	dec := json.NewDecoder(r)
	dec.DisallowUnknownFields()
	if err := dec.Decode(&d); err != nil {
		return fmt.Errorf("import: read the dump: %w", err)
	}
	if d.Format != ExportFormat {
		return fmt.Errorf("import: format %q, want %q", d.Format, ExportFormat)
	}
	type dayCount struct {
		day store.Day
		n   uint64
	}
	parsed := make([][]dayCount, len(d.Keys))
	for i, k := range d.Keys {
		if k.Key == "" && k.Total == 0 && len(k.Days) == 0 {
			continue
		}
		for date, n := range k.Days {
			t, err := time.Parse(dateLayout, date)
			if err != nil {
				return fmt.Errorf("import: key %q: day %q: want YYYY-MM-DD", k.Key, date)
			}
			parsed[i] = append(parsed[i], dayCount{store.DayOf(t), n})
		}
	}

	db, path, err := openDB(dir)
	if err != nil {
		return err
	}
	defer db.Close()
	err = db.Update(func(tx *bolt.Tx) error {
		if replace {
			for _, b := range [][]byte{bucketTotals, bucketDays} {
				if err := tx.DeleteBucket(b); err != nil {
					return err
				}
				if _, err := tx.CreateBucket(b); err != nil {
					return err
				}
			}
		}
		meta, totals, days := tx.Bucket(bucketMeta), tx.Bucket(bucketTotals), tx.Bucket(bucketDays)
		hits, err := u64(meta.Get(keyHits))
		if err != nil {
			return err
		}
		if replace || d.Hits > hits {
			hits = d.Hits
		}
		if err := meta.Put(keyHits, be64(hits)); err != nil {
			return err
		}
		for i, k := range d.Keys {
			key := []byte(k.Key)
			old, err := u64(totals.Get(key))
			if err != nil {
				return err
			}
			if err := totals.Put(key, be64(old+k.Total)); err != nil {
				return err
			}
			for _, dc := range parsed[i] {
				dk := dayKey(key, dc.day)
				old, err := u64(days.Get(dk))
				if err != nil {
					return err
				}
				if err := days.Put(dk, be64(old+dc.n)); err != nil {
					return err
				}
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("import into %s: %w", path, err)
	}
	return nil
}

// openExisting opens the bbolt file at path for reading, refusing a
// missing file or one another process holds.
func openExisting(path string) (*bolt.DB, error) {
	db, err := boltOpen(path, &bolt.Options{Timeout: 200 * time.Millisecond, ReadOnly: true})
	switch {
	case errors.Is(err, berrors.ErrTimeout):
		return nil, fmt.Errorf("open %s: another process has it open; stop visitors first", path)
	case err != nil:
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	return db, nil
}
