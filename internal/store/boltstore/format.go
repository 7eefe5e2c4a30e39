// The on-disk encoding: the buckets and their tags, the keys (keyPrefix,
// dayKey), the records with their checksums and the totals, plain or
// dated. Every reader and writer of the file goes through it.

package boltstore

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"strings"

	"visitors/internal/store"
)

// The file's layout, format 3:
//
//	meta    "format" -> "visitors-counts-3"
//	        "hits"   -> record(hits)
//	totals  keyPrefix(key)        -> totalRecord(total, day, count), or record(total)
//	days    keyPrefix(key) day(4) -> record(count)
//	locks   keyPrefix(key)        -> record(1)      a frozen key (owners.go)
//	tokens  keyPrefix(id)         -> token record   owner API tokens (owners.go)
//	floors  keyPrefix(key)        -> record(seq)    log records up to seq are older than the key (owners.go)
//
// keyPrefix(key) is the key's length as a uvarint and then the key, so
// that every key, the empty one included, has a non-empty bbolt key, one
// key's days sort together and in order, and no key is a prefix of
// another's days. A record is the value as 8 big-endian bytes and a
// CRC-32C of the bucket's tag, the bbolt key and those 8 bytes: bbolt
// checks its pages' structure but not the values in them, so a flipped
// byte in a key or a count is found when the file is read. The locks,
// tokens and floors buckets came later in format 2: a file without them
// is valid, and Open adds them.
//
// Format 3 is format 2 whose totals may also be dated (totalRecord): the
// total, the day of the key's latest count and that day's count, so
// that the load finds today's counts without reading the days bucket,
// whose records of one day lie on every page of a file with history
// (issue 26). Only the flusher writes a dated total, in the transaction
// that writes the key's day records, so the two agree; every other
// writer (owner operations, imports, a replay of the log) writes a
// plain record(total), which says: today's count is in the days bucket.
// A format 2 file is a format 3 file without dated totals: it opens as
// it is, its keys are rewritten dated by the first pass after the
// background check (see [Store.migrate]), and that pass writes the
// format 3 mark, so that an older binary refuses the file by its format
// rather than as damaged.
const (
	formatValue   = "visitors-counts-3"
	formatValueV2 = "visitors-counts-2" // no dated totals; opens as it is
	formatValueV1 = "visitors-counts-1" // keys raw, values bare; migrated at open
	recordSize    = 12
	totalSize     = 24 // a dated total: total 8, day 4, count 8, CRC-32C 4
)

var (
	bucketMeta   = []byte("meta")
	bucketTotals = []byte("totals")
	bucketDays   = []byte("days")
	bucketLocks  = []byte("locks")
	bucketTokens = []byte("tokens")
	bucketFloors = []byte("floors")
	keyFormat    = []byte("format")
	keyHits      = []byte("hits")
)

// Tags of the buckets in a record's checksum: a record copied into
// another bucket does not verify.
const (
	tagMeta   = 'm'
	tagTotals = 't'
	tagDays   = 'd'
	tagLocks  = 'l'
	tagTokens = 'k'
	tagFloors = 'f'
	tagDated  = 'T' // a dated total (totalRecord)
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// tagSums holds the CRC-32C of each tag byte, where a record's checksum
// begins: the one-byte slice it was computed from escaped, an allocation
// for every record read or written (four a key at open: two to check
// the file, two to load it).
var tagSums = func() (sums [256]uint32) {
	for t := range sums {
		sums[t] = crc32.Update(0, castagnoli, []byte{byte(t)})
	}
	return sums
}()

// errChecksum marks a record whose checksum does not match.
var errChecksum = errors.New("checksum mismatch")

// record returns the stored form of n under bbolt key k in the bucket
// tagged tag.
func record(tag byte, k []byte, n uint64) []byte {
	v := binary.BigEndian.AppendUint64(make([]byte, 0, recordSize), n)
	return binary.BigEndian.AppendUint32(v, recordSum(tag, k, v))
}

func recordSum(tag byte, k, v8 []byte) uint32 {
	c := tagSums[tag]
	c = crc32.Update(c, castagnoli, k)
	return crc32.Update(c, castagnoli, v8)
}

// readRecord returns the value of the record v under k, checking its
// size and checksum. A missing record (nil) is zero.
func readRecord(tag byte, k, v []byte) (uint64, error) {
	if v == nil {
		return 0, nil
	}
	if len(v) != recordSize {
		return 0, fmt.Errorf("record of %d bytes, want %d", len(v), recordSize)
	}
	if binary.BigEndian.Uint32(v[8:]) != recordSum(tag, k, v[:8]) {
		return 0, errChecksum
	}
	return binary.BigEndian.Uint64(v), nil
}

// totalRecord returns the dated total of the key whose totals bucket key
// is k: its total, and its count on day d, the latest day it holds.
func totalRecord(k []byte, total uint64, d store.Day, count uint64) []byte {
	v := make([]byte, 0, totalSize)
	v = binary.BigEndian.AppendUint64(v, total)
	v = binary.BigEndian.AppendUint32(v, uint32(d))
	v = binary.BigEndian.AppendUint64(v, count)
	return binary.BigEndian.AppendUint32(v, recordSum(tagDated, k, v))
}

// total is a key's total as the totals bucket holds it.
type total struct {
	n     uint64
	dated bool      // a dated total: day and count hold its latest day
	day   store.Day // the latest day the key has counts of, if dated
	count uint64    // its count on day, if dated
}

// parseTotal reads the total record v under k, dated or plain, checking
// its size and checksum. A missing record (nil) is a plain zero.
func parseTotal(k, v []byte) (total, error) {
	if len(v) != totalSize {
		n, err := readRecord(tagTotals, k, v)
		if err != nil && len(v) != recordSize {
			err = fmt.Errorf("record of %d bytes, want %d or %d", len(v), recordSize, totalSize)
		}
		return total{n: n}, err
	}
	if binary.BigEndian.Uint32(v[20:]) != recordSum(tagDated, k, v[:20]) {
		return total{}, errChecksum
	}
	return total{
		n:     binary.BigEndian.Uint64(v),
		dated: true,
		day:   store.Day(binary.BigEndian.Uint32(v[8:])),
		count: binary.BigEndian.Uint64(v[12:]),
	}, nil
}

// keyTotal returns the key whose total the totals bucket record v under
// k holds, and that total, checking both; its errors name the key. The
// load and the export read every total through it.
func keyTotal(k, v []byte) ([]byte, total, error) {
	key, err := splitTotalKey(k)
	if err != nil {
		return nil, total{}, fmt.Errorf("a total's key %q: %w", k, err)
	}
	t, err := parseTotal(k, v)
	if err != nil {
		return nil, total{}, fmt.Errorf("the total of key %q: %w", key, err)
	}
	return key, t, nil
}

// readValue returns the number that the record v under k holds in the
// bucket tagged tag, checking it: for a total, dated or plain, the total
// (a dated total's day and count are left out). A missing record (nil)
// is zero. An import (addRecord) and the log's replay (raise) read what
// they add to or raise through it.
func readValue(tag byte, k, v []byte) (uint64, error) {
	if tag == tagTotals {
		t, err := parseTotal(k, v)
		return t.n, err
	}
	return readRecord(tag, k, v)
}

// on returns the key's count on day today if the record says it: ok is
// false for a plain total, whose count is in the days bucket, and for a
// dated total of a day after today (the clock went back), which says
// nothing of today's count, which the days bucket may hold. Taking it as
// "0 today" let the next visit write day D = 1 over the D = 3 on disk
// (the hostile review of issue 26: TestClockBackAcrossARestartLosesNoDay).
func (t total) on(today store.Day) (n uint64, ok bool) {
	switch {
	case !t.dated || t.day > today:
		return 0, false
	case t.day < today:
		return 0, true
	}
	return t.count, true
}

// keyPrefix is what key's total is stored under and what every one of its
// days starts with: the key's length as a uvarint, then the key.
func keyPrefix(key []byte) []byte {
	return append(binary.AppendUvarint(make([]byte, 0, len(key)+binary.MaxVarintLen64+4), uint64(len(key))), key...)
}

// dayKey is the key of key's count on day d.
func dayKey(key []byte, d store.Day) []byte {
	return binary.BigEndian.AppendUint32(keyPrefix(key), uint32(d))
}

// splitTotalKey returns the key a totals bucket key encodes.
func splitTotalKey(k []byte) ([]byte, error) {
	n, w := binary.Uvarint(k)
	if w <= 0 || uint64(len(k)-w) != n || n > store.MaxKeyBytes {
		return nil, errors.New("malformed key")
	}
	return k[w:], nil
}

// isDayOf reports whether dk, a days bucket key, is a day of the key
// whose prefix (see keyPrefix) is kp. A nil dk, a cursor's end, is not.
func isDayOf(dk, kp []byte) bool {
	return len(dk) == len(kp)+4 && bytes.HasPrefix(dk, kp)
}

// splitDayKey returns the key and day a days bucket key encodes.
func splitDayKey(k []byte) ([]byte, store.Day, error) {
	n, w := binary.Uvarint(k)
	if w <= 0 || uint64(len(k)-w) != n+4 || n > store.MaxKeyBytes {
		return nil, 0, errors.New("malformed key")
	}
	return k[w : len(k)-4], store.Day(binary.BigEndian.Uint32(k[len(k)-4:])), nil
}

// compareFile orders keys as the file does: keyPrefix puts the length
// first (as a uvarint, which for lengths up to MaxKeyBytes sorts as the
// number does), then the bytes.
func compareFile(a, b string) int {
	if c := cmp.Compare(len(a), len(b)); c != 0 {
		return c
	}
	return strings.Compare(a, b)
}
