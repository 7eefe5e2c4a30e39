// The unique-visitor sketches: one a key and a day, in a bucket of
// their own, put by the service and loaded when it starts.

package boltstore

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"slices"
	"time"

	bolt "go.etcd.io/bbolt"

	"visitors/internal/store"
)

// The unique-visitor sketches live in their own bucket, created by the
// first write, so that files without it stay valid:
//
//	uniques  day(4) keyPrefix(key) -> data, CRC-32C(tag 'u', bbolt key, data)
//
// Day first: the sketches of one day, all that a start loads, are
// together. Checksummed like every record, so a flipped byte is found.
var bucketUniques = []byte("uniques")

const tagUniques = 'u'

var _ store.Sketches = (*Store)(nil)

// sketchKey is the bbolt key of key's sketch of day d.
func sketchKey(d store.Day, key []byte) []byte {
	return append(binary.BigEndian.AppendUint32(make([]byte, 0, 4+len(key)+binary.MaxVarintLen64), uint32(d)), keyPrefix(key)...)
}

func sketchSum(k, data []byte) uint32 {
	c := crc32.Update(0, castagnoli, []byte{tagUniques})
	c = crc32.Update(c, castagnoli, k)
	return crc32.Update(c, castagnoli, data)
}

// readSketch checks the stored value v under k and returns its data.
func readSketch(k, v []byte) ([]byte, error) {
	if len(v) < 4 {
		return nil, fmt.Errorf("sketch of %d bytes", len(v))
	}
	data := v[:len(v)-4]
	if binary.BigEndian.Uint32(v[len(v)-4:]) != sketchSum(k, data) {
		return nil, errChecksum
	}
	return data, nil
}

// PutSketches implements [store.Sketches]: one bbolt transaction, synced
// to disk before it returns. The sketches are put in the file's order:
// bbolt splits a node only at the commit, so puts in another order (the
// unique counter's map order) made a flush of n new sketches O(n²),
// minutes for the first flush of 100,000 keys (BenchmarkMemoryPerKey).
func (s *Store) PutSketches(d store.Day, sketches []store.Sketch) error {
	if len(sketches) == 0 {
		return nil
	}
	type put struct{ k, v []byte }
	puts := make([]put, len(sketches))
	for i, sk := range sketches {
		if len(sk.Key) > store.MaxKeyBytes {
			return fmt.Errorf("write unique-visitor sketches to %s: %w", s.path, store.ErrKeyTooLong)
		}
		k := sketchKey(d, sk.Key)
		puts[i] = put{k, binary.BigEndian.AppendUint32(append(make([]byte, 0, len(sk.Data)+4), sk.Data...), sketchSum(k, sk.Data))}
	}
	slices.SortFunc(puts, func(a, b put) int { return bytes.Compare(a.k, b.k) })
	if err := s.writable(); err != nil { // nothing is written before the file's check, nor after damage
		return fmt.Errorf("write unique-visitor sketches to %s: %w", s.path, err)
	}
	err := s.db.Update(func(tx *bolt.Tx) error {
		b, err := tx.CreateBucketIfNotExists(bucketUniques)
		if err != nil {
			return err
		}
		for _, p := range puts {
			if err := b.Put(p.k, p.v); err != nil {
				key, _ := splitTotalKey(p.k[4:])
				return fmt.Errorf("key %q: %w", key, err)
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("write unique-visitor sketches to %s: %w", s.path, err)
	}
	return nil
}

// LoadSketches implements [store.Sketches].
func (s *Store) LoadSketches(d store.Day, fn func(key, data []byte) error) error {
	// At start, before the file's check: a damaged page is an error.
	err := safely(func() error {
		return s.db.View(func(tx *bolt.Tx) error {
			b := tx.Bucket(bucketUniques)
			if b == nil {
				return nil
			}
			prefix := binary.BigEndian.AppendUint32(nil, uint32(d))
			c := b.Cursor()
			for k, v := c.Seek(prefix); len(k) > 4 && string(k[:4]) == string(prefix); k, v = c.Next() {
				key, err := splitTotalKey(k[4:])
				if err != nil {
					return fmt.Errorf("sketch key %x: %w", k, err)
				}
				data, err := readSketch(k, v)
				if err != nil {
					return fmt.Errorf("the sketch of key %q on %s: %w", key, d.Time().Format(time.DateOnly), err)
				}
				if err := fn(key, data); err != nil {
					return err
				}
			}
			return nil
		})
	})
	if err != nil {
		return fmt.Errorf("read unique-visitor sketches from %s: %w", s.path, err)
	}
	return nil
}

// SketchDays implements [store.Sketches].
func (s *Store) SketchDays(key []byte, last store.Day, n int) ([][]byte, error) {
	out := make([][]byte, n)
	err := s.db.View(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketUniques)
		if b == nil {
			return nil
		}
		first := last - store.Day(n-1)
		for i := range out {
			k := sketchKey(first+store.Day(i), key)
			v := b.Get(k)
			if v == nil {
				continue
			}
			data, err := readSketch(k, v)
			if err != nil {
				return fmt.Errorf("the sketch of key %q on %s: %w", key, (first + store.Day(i)).Time().Format(time.DateOnly), err)
			}
			out[i] = append([]byte(nil), data...)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read unique-visitor sketches from %s: %w", s.path, err)
	}
	return out, nil
}

var _ store.HeldKeys = (*Store)(nil)

// HeldKey implements [store.HeldKeys].
func (s *Store) HeldKey(key []byte) (string, bool) {
	if e := s.keys.Load(key); e != nil {
		return e.key, true
	}
	return "", false
}
