// Owner operations: Set, Lock, Delete, the token records, and the
// online import (online.go).
//
// Each is a request to the flusher, which runs it between two passes:
// it first commits everything pending to the bbolt file (a full commit,
// as Flush makes: in sync mode the file then holds every log record and
// the log starts over), then runs the operation in a bbolt transaction
// of its own, durable (fdatasync) before the operation returns, in
// either mode; and only once that transaction has committed does it
// change memory. An operation that fails changes neither.
//
// Counts never go down in a pass, and the write-ahead log's replay takes
// the larger of a record and the file. An operation that lowers a key
// (Set, Delete, an import that replaces) must not be undone by either:
//
//   - Passes: the flusher runs the operation, so no pass is in flight
//     with a snapshot from before it. Memory gets a new entry for the key
//     (replace); the one it replaces is retired (gone), so that a batch
//     visit that still counts on it (it loaded the entry before the
//     operation) is never written: it is ordered before the operation
//     and overwritten or deleted with it. A sync visit to a retired
//     entry is counted on the key's current entry instead (take).
//   - The log: after the full commit the file holds every record, so
//     none from before the operation is replayed. Only while a key cannot
//     be written (the file holds its visits through the log alone) does
//     the file stay behind the log; then the operation writes a floor for
//     each key it lowers (bucket floors: keyPrefix(key) -> the last seq
//     written), and the replay skips a key in every record up to its
//     floor. Floors are dropped once the file holds every record.
//
// An import that adds (merges) must not lose a batch visit that raced
// with it: the new entry starts from the old one's total as it retires
// it, and the flusher forwards each visit counted on the old entry after
// that to the new one (forward).

package boltstore

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"maps"
	"math"
	"slices"
	"time"

	bolt "go.etcd.io/bbolt"

	"visitors/internal/store"
)

// ownerOp is an operation the flusher runs: run makes its writes in tx
// (floor, when not 0, is the log seq to floor every key it lowers at),
// and apply, once tx has committed, changes memory.
type ownerOp struct {
	run   func(tx *bolt.Tx, floor uint64) error
	apply func()
	done  chan struct{}
	err   error
}

// do hands op to the flusher and waits for it. It does not give up when
// a context ends: an error must mean the operation did not happen, and a
// transaction is bounded.
func (s *Store) do(op *ownerOp) error {
	op.done = make(chan struct{})
	s.opMu.Lock()
	if s.opsClosed {
		s.opMu.Unlock()
		return errors.New("store closed")
	}
	s.ops = append(s.ops, op)
	s.opsPending.Store(true)
	s.opMu.Unlock()
	select {
	case s.kick <- struct{}{}:
	default: // a kick is already pending
	}
	<-op.done
	if op.err != nil {
		return fmt.Errorf("write %s: %w", s.path, op.err)
	}
	return nil
}

// runOps runs the operations waiting, after a full commit of what is
// pending. Only the flusher calls it.
func (s *Store) runOps() {
	s.opMu.Lock()
	ops := s.ops
	s.ops = nil
	s.opsPending.Store(false)
	s.opMu.Unlock()
	if len(ops) == 0 {
		return
	}
	if err := s.awaitFile(); err != nil { // nothing is written before the file's check, nor after damage
		for _, op := range ops {
			op.err = fmt.Errorf("write %s: %w", s.path, err)
			close(op.done)
		}
		return
	}
	s.flush(false) // the file holds every log record now, unless a key fails
	for _, op := range ops {
		var floor uint64
		if s.log != nil && s.log.seq != s.log.applied {
			floor = s.log.seq
		}
		op.err = s.db.Update(func(tx *bolt.Tx) error { return op.run(tx, floor) })
		if op.err == nil && op.apply != nil {
			op.apply()
		}
		close(op.done)
	}
}

// closeOps refuses the operations still waiting, and every one after:
// the flusher has stopped.
func (s *Store) closeOps() {
	s.opMu.Lock()
	ops := s.ops
	s.ops, s.opsClosed = nil, true
	s.opMu.Unlock()
	for _, op := range ops {
		op.err = errors.New("store closed")
		close(op.done)
	}
}

// newEntry makes key's entry for the map: the one replace is putting in
// place, if it is for key, else a new one. The map calls it under its
// lock, so the entry it returns is stored while it is current.
func (s *Store) newEntry(key string) *entry {
	e := s.incoming.Load()
	if e == nil || e.key != key {
		e = &entry{key: key}
	}
	if f := s.testHooks().entryMade; f != nil {
		f(e)
	}
	return e
}

// replace makes e2 the entry of its key, retiring every entry it
// replaces. With forward, visits counted on a retired entry after it was
// retired go to e2: base's count from baseTotal on, an interloper's (an
// entry a visit made meanwhile) all. e2 takes the old entry's place in
// the map (Swap): deleted first, the key was absent for a moment, and a
// new key's visit could take its place at the limit, refusing the key's
// own visits (TestANegativeAddGivesNoOtherKeyItsPlace). Only the
// flusher calls it.
func (s *Store) replace(e2 *entry, forward bool, base *entry, baseTotal uint64) {
	s.incoming.Store(e2)
	defer s.incoming.Store(nil)
	key := []byte(e2.key)
	gap := func() {
		if f := s.testHooks().replaceGap; f != nil {
			f()
		}
	}
	for {
		cur := s.keys.Load(key)
		if cur == e2 {
			return
		}
		if cur == nil {
			gap()
			s.keys.Put(key) // makes e2, through newEntry
			continue
		}
		var succ *entry
		from := uint64(0)
		if forward {
			succ = e2
			if cur == base {
				from = baseTotal
			}
		}
		s.retire(cur, succ, from)
		gap()
		s.keys.Swap(e2.key, cur, e2)
	}
}

// retire marks e as no longer its key's: a pass never writes it again,
// and visits counted on it from total from on go to succ, if not nil.
func (s *Store) retire(e, succ *entry, from uint64) {
	e.ret = &retired{succ: succ, fwd: from}
	delete(s.failing, e)
}

// forward counts on e's successor (or, if it was retired too, on the
// first of its successors that was not) the visits counted on e, a
// retired entry, since they were last forwarded: batch visits that
// loaded e before it was retired. Without a successor they are dropped.
// It returns the entry it counted them on, nil if none, for the caller
// to have it written. Only the flusher calls it.
func (s *Store) forward(e *entry) *entry {
	n, r := e.Total(), e.ret
	if n <= r.fwd {
		return nil
	}
	to := r.succ
	for to != nil && to.gone() { // retired in turn: on to the entry that is not
		to = to.ret.succ
	}
	if to != nil {
		today := s.cal.Today()
		for range n - r.fwd {
			to.Add(today)
		}
	}
	r.fwd = n
	return to
}

// keyFault is the planted failure of key's writes, for tests.
func (s *Store) keyFault(key string) error {
	if f := s.testHooks().putFault; f != nil {
		return f(key)
	}
	return nil
}

// Set implements [store.Store]. The key's total record is rewritten, its
// day records deleted, and, in memory, a new entry replaces its old one.
func (s *Store) Set(_ context.Context, key []byte, total uint64) (store.Counts, error) {
	if total > store.MaxTotal {
		return store.Counts{}, fmt.Errorf("set %q: total %d is above the most a counter holds, %d", key, total, uint64(store.MaxTotal))
	}
	if _, err := s.keys.LoadOrNew(key); err != nil {
		return store.Counts{}, err
	}
	k := string(key)
	var c store.Counts
	err := s.do(&ownerOp{
		run: func(tx *bolt.Tx, floor uint64) error {
			if err := s.keyFault(k); err != nil {
				return fmt.Errorf("key %q: %w", k, err)
			}
			kp := keyPrefix([]byte(k))
			if err := deleteDays(tx.Bucket(bucketDays), kp); err != nil {
				return err
			}
			if err := tx.Bucket(bucketTotals).Put(kp, record(tagTotals, kp, total)); err != nil {
				return err
			}
			return putFloor(tx, kp, floor)
		},
		apply: func() {
			today := s.cal.Today()
			e2 := &entry{key: k, written: total}
			e2.Restore(total, today, 0)
			if old := s.keys.Load([]byte(k)); old != nil {
				e2.SetLocked(old.Locked())
			}
			s.replace(e2, false, nil, 0)
			c = e2.Counts(today)
		},
	})
	if err != nil {
		return store.Counts{}, fmt.Errorf("set %q: %w", key, err)
	}
	return c, nil
}

// Add implements [store.Store]. The flusher reads the key's counts from
// memory, which after its full commit hold at least what the file does,
// and writes the new total and today's count. A positive n raises the
// key's entry in place (visits racing with it add to it, and a pass
// writes them). A negative n lowers it as Set does: its earlier days are
// deleted, the log floored, and a new entry replaces the old one, which
// forwards to it every visit it counted after the counts were read.
func (s *Store) Add(_ context.Context, key []byte, n int64) (store.Counts, error) {
	if err := store.CheckAdd(store.Counts{}, n); err != nil {
		return store.Counts{}, fmt.Errorf("add %d to %q: %w", n, key, err)
	}
	if _, err := s.keys.LoadOrNew(key); err != nil {
		return store.Counts{}, err
	}
	k := string(key)
	var (
		c                  store.Counts
		old                *entry
		base, total, count uint64
		today              store.Day
	)
	err := s.do(&ownerOp{
		run: func(tx *bolt.Tx, floor uint64) error {
			if err := s.keyFault(k); err != nil {
				return fmt.Errorf("key %q: %w", k, err)
			}
			today = s.cal.Today()
			var cur store.Counts
			if old = s.keys.Load([]byte(k)); old != nil {
				cur = old.Counts(today)
			}
			if err := store.CheckAdd(cur, n); err != nil {
				return err
			}
			base = cur.Total
			total, count = store.ClampAdd(cur.Total, n), store.ClampAdd(cur.Today, n)
			kp := keyPrefix([]byte(k))
			days := tx.Bucket(bucketDays)
			if n < 0 {
				if err := deleteDays(days, kp); err != nil {
					return err
				}
				if err := putFloor(tx, kp, floor); err != nil {
					return err
				}
			}
			if dk := dayKey([]byte(k), today); count > 0 {
				if err := days.Put(dk, record(tagDays, dk, count)); err != nil {
					return err
				}
			} else if err := days.Delete(dk); err != nil {
				return err
			}
			return tx.Bucket(bucketTotals).Put(kp, record(tagTotals, kp, total))
		},
		apply: func() {
			if n >= 0 {
				e := s.keys.Put([]byte(k)) // made again if a visit made it meanwhile
				c = e.Shift(n, today)
				if e == old {
					e.written = total
				}
				s.markDirty(e)
				return
			}
			e2 := &entry{key: k, written: total}
			e2.Restore(total, today, count)
			if old != nil {
				e2.SetLocked(old.Locked())
			}
			s.replace(e2, true, old, base)
			c = e2.Counts(today)
		},
	})
	if err != nil {
		return store.Counts{}, fmt.Errorf("add %d to %q: %w", n, key, err)
	}
	return c, nil
}

// Lock implements [store.Store]. A lock is a record in the locks bucket;
// a key Lock makes (before any visit) gets a total record of 0, so that
// it is there after a restart.
func (s *Store) Lock(_ context.Context, key []byte, locked bool) (store.Counts, error) {
	if _, err := s.keys.LoadOrNew(key); err != nil {
		return store.Counts{}, err
	}
	k := string(key)
	var c store.Counts
	err := s.do(&ownerOp{
		run: func(tx *bolt.Tx, _ uint64) error {
			if err := s.keyFault(k); err != nil {
				return fmt.Errorf("key %q: %w", k, err)
			}
			kp := keyPrefix([]byte(k))
			if totals := tx.Bucket(bucketTotals); totals.Get(kp) == nil { // the key is there from now on
				if err := totals.Put(kp, record(tagTotals, kp, 0)); err != nil {
					return err
				}
			}
			if !locked {
				return tx.Bucket(bucketLocks).Delete(kp)
			}
			return tx.Bucket(bucketLocks).Put(kp, record(tagLocks, kp, 1))
		},
		apply: func() {
			e := s.keys.Put([]byte(k)) // made again if deleted meanwhile
			e.SetLocked(locked)
			c = e.Counts(s.cal.Today())
		},
	})
	if err != nil {
		return store.Counts{}, fmt.Errorf("lock %q: %w", key, err)
	}
	return c, nil
}

// Delete implements [store.Store]: the key's total, days, lock and
// unique-visitor sketches leave the file, and its entry memory.
func (s *Store) Delete(_ context.Context, key []byte) (bool, error) {
	if len(key) > store.MaxKeyBytes {
		return false, nil // never stored
	}
	k := string(key)
	found := false
	err := s.do(&ownerOp{
		run: func(tx *bolt.Tx, floor uint64) error {
			kp := keyPrefix([]byte(k))
			if err := deleteKey(tx, []byte(k)); err != nil {
				return err
			}
			return putFloor(tx, kp, floor)
		},
		apply: func() {
			if e := s.keys.Load([]byte(k)); e != nil {
				s.retire(e, nil, 0)
				s.keys.Delete(k, e)
				found = true
			}
		},
	})
	if err != nil {
		return false, fmt.Errorf("delete %q: %w", key, err)
	}
	return found, nil
}

// List implements [store.Store]. Every key is in memory, so it lists
// from there: one walk of the map, keeping the smallest limit keys.
func (s *Store) List(_ context.Context, prefix, after []byte, limit int) ([]store.Entry, error) {
	if limit < 1 || limit > store.MaxList {
		return nil, fmt.Errorf("list: limit %d outside 1..%d", limit, store.MaxList)
	}
	today := s.cal.Today()
	keys, entries := s.keys.List(prefix, after, limit)
	out := make([]store.Entry, len(keys))
	for i, k := range keys {
		out[i] = store.Entry{Key: []byte(k), Counts: entries[i].Counts(today)}
	}
	return out, nil
}

// deleteKey removes key's records: total, days, lock and sketches.
func deleteKey(tx *bolt.Tx, key []byte) error {
	kp := keyPrefix(key)
	if err := tx.Bucket(bucketTotals).Delete(kp); err != nil {
		return err
	}
	if err := deleteDays(tx.Bucket(bucketDays), kp); err != nil {
		return err
	}
	if err := tx.Bucket(bucketLocks).Delete(kp); err != nil {
		return err
	}
	return deleteSketches(tx, key)
}

// deleteDays removes every day record of the key whose prefix is kp.
func deleteDays(days *bolt.Bucket, kp []byte) error {
	var ks [][]byte
	c := days.Cursor()
	for k, _ := c.Seek(kp); isDayOf(k, kp); k, _ = c.Next() {
		ks = append(ks, bytes.Clone(k))
	}
	for _, k := range ks {
		if err := days.Delete(k); err != nil {
			return err
		}
	}
	return nil
}

// deleteSketches removes key's unique-visitor sketches: one seek per day
// that has any.
func deleteSketches(tx *bolt.Tx, key []byte) error {
	b := tx.Bucket(bucketUniques)
	if b == nil {
		return nil
	}
	var ks [][]byte
	c := b.Cursor()
	for k, _ := c.First(); len(k) >= 4; {
		d := binary.BigEndian.Uint32(k)
		sk := sketchKey(store.Day(d), key)
		if found, _ := c.Seek(sk); bytes.Equal(found, sk) {
			ks = append(ks, sk)
		}
		if d == math.MaxUint32 {
			break
		}
		k, _ = c.Seek(binary.BigEndian.AppendUint32(nil, d+1))
	}
	for _, k := range ks {
		if err := b.Delete(k); err != nil {
			return err
		}
	}
	return nil
}

// putFloor records, when floor is not 0, that the log's records up to
// floor are older than what the file holds for the key kp.
func putFloor(tx *bolt.Tx, kp []byte, floor uint64) error {
	if floor == 0 {
		return nil
	}
	return tx.Bucket(bucketFloors).Put(kp, record(tagFloors, kp, floor))
}

// clearFloors drops every floor: the file holds every log record.
func clearFloors(tx *bolt.Tx) error {
	b := tx.Bucket(bucketFloors)
	if b == nil {
		return nil
	}
	var ks [][]byte
	b.ForEach(func(k, _ []byte) error { ks = append(ks, bytes.Clone(k)); return nil })
	for _, k := range ks {
		if err := b.Delete(k); err != nil {
			return err
		}
	}
	return nil
}

// Tokens: one record each in the tokens bucket, under keyPrefix(id):
//
//	version(1)=1 uvarint(len) name uvarint(len) prefix hash(32) varint(unix seconds) uvarint(nanoseconds) crc32c(4)
//
// or, for a token with flags (Exact: 1), version 2 with a byte of flags
// after the prefix. A token without flags is written as version 1, so
// that a file read by an older visitors keeps every token it knew. The
// checksum covers the tag 'k', the bbolt key and what precedes it.

// tokenExact is the flag of an exact token in a version 2 record.
const tokenExact = 1

// maxTokenField bounds a token's name and prefix.
const maxTokenField = 1024

func tokenSum(k, data []byte) uint32 {
	c := crc32.Update(0, castagnoli, []byte{tagTokens})
	c = crc32.Update(c, castagnoli, k)
	return crc32.Update(c, castagnoli, data)
}

// encodeToken returns t's stored form under bbolt key k.
func encodeToken(k []byte, t store.Token) []byte {
	version := byte(1)
	if t.Exact {
		version = 2
	}
	v := []byte{version}
	v = binary.AppendUvarint(v, uint64(len(t.Name)))
	v = append(v, t.Name...)
	v = binary.AppendUvarint(v, uint64(len(t.Prefix)))
	v = append(v, t.Prefix...)
	if version == 2 {
		v = append(v, tokenExact)
	}
	v = append(v, t.Hash[:]...)
	v = binary.AppendVarint(v, t.Created.Unix())
	v = binary.AppendUvarint(v, uint64(t.Created.Nanosecond()))
	return binary.BigEndian.AppendUint32(v, tokenSum(k, v))
}

// decodeToken reads the token stored as v under bbolt key k.
func decodeToken(k, v []byte) (store.Token, error) {
	id, err := splitTotalKey(k)
	if err != nil {
		return store.Token{}, err
	}
	if len(v) < 5 {
		return store.Token{}, fmt.Errorf("record of %d bytes", len(v))
	}
	data := v[:len(v)-4]
	if binary.BigEndian.Uint32(v[len(v)-4:]) != tokenSum(k, data) {
		return store.Token{}, errChecksum
	}
	version := data[0]
	if version != 1 && version != 2 {
		return store.Token{}, fmt.Errorf("token record version %d", version)
	}
	p := data[1:]
	bad := errors.New("malformed token record")
	str := func() (string, error) {
		n, w := binary.Uvarint(p)
		if w <= 0 || n > uint64(len(p)-w) {
			return "", bad
		}
		s := string(p[w : w+int(n)])
		p = p[w+int(n):]
		return s, nil
	}
	t := store.Token{ID: string(id)}
	if t.Name, err = str(); err != nil {
		return store.Token{}, err
	}
	if t.Prefix, err = str(); err != nil {
		return store.Token{}, err
	}
	if version == 2 {
		if len(p) < 1 || p[0]&^tokenExact != 0 {
			return store.Token{}, bad
		}
		t.Exact = p[0]&tokenExact != 0
		p = p[1:]
	}
	if len(p) < 32 {
		return store.Token{}, bad
	}
	copy(t.Hash[:], p)
	p = p[32:]
	sec, w := binary.Varint(p)
	if w <= 0 {
		return store.Token{}, bad
	}
	p = p[w:]
	nsec, w := binary.Uvarint(p)
	if w <= 0 || w != len(p) || nsec >= 1e9 {
		return store.Token{}, bad
	}
	t.Created = time.Unix(sec, int64(nsec)).UTC()
	return t, nil
}

// PutToken implements [store.Store].
func (s *Store) PutToken(_ context.Context, t store.Token) error {
	if err := checkToken(t); err != nil {
		return err
	}
	t.Created = t.Created.UTC()
	err := s.do(&ownerOp{
		run: func(tx *bolt.Tx, _ uint64) error {
			k := keyPrefix([]byte(t.ID))
			return tx.Bucket(bucketTokens).Put(k, encodeToken(k, t))
		},
		apply: func() {
			s.tokMu.Lock()
			defer s.tokMu.Unlock()
			s.tokens[t.ID] = t
		},
	})
	if err != nil {
		return fmt.Errorf("put token %q: %w", t.ID, err)
	}
	return nil
}

// AddToken implements [store.Store]: the flusher runs operations one at
// a time, so the check and the write are one.
func (s *Store) AddToken(_ context.Context, t store.Token) (bool, error) {
	if err := checkToken(t); err != nil {
		return false, err
	}
	t.Created = t.Created.UTC()
	added := false
	err := s.do(&ownerOp{
		run: func(tx *bolt.Tx, _ uint64) error {
			b, k := tx.Bucket(bucketTokens), keyPrefix([]byte(t.ID))
			if b.Get(k) != nil {
				return nil
			}
			added = true
			return b.Put(k, encodeToken(k, t))
		},
		apply: func() {
			if !added {
				return
			}
			s.tokMu.Lock()
			defer s.tokMu.Unlock()
			s.tokens[t.ID] = t
		},
	})
	if err != nil {
		return false, fmt.Errorf("add token %q: %w", t.ID, err)
	}
	return added, nil
}

// Create implements [store.Store]: the flusher runs it between two
// passes, and memory holds every key, its visits written or not (a sync
// visit makes its entry before it joins a pass), so the check and the
// writes of the key's total and the token are one transaction. A visit
// that makes the entry after the check counts after the creation: apply
// finds its entry.
func (s *Store) Create(_ context.Context, key []byte, t store.Token) (bool, error) {
	if len(key) > store.MaxKeyBytes {
		return false, store.ErrKeyTooLong
	}
	if err := checkToken(t); err != nil {
		return false, err
	}
	t.Created = t.Created.UTC()
	k := string(key)
	made := false
	err := s.do(&ownerOp{
		run: func(tx *bolt.Tx, _ uint64) error {
			if s.keys.Load([]byte(k)) != nil {
				return nil
			}
			if s.o.MaxKeys > 0 && s.keys.Len() >= s.o.MaxKeys {
				return store.ErrTooManyKeys
			}
			if err := s.keyFault(k); err != nil {
				return fmt.Errorf("key %q: %w", k, err)
			}
			kp := keyPrefix([]byte(k))
			if err := tx.Bucket(bucketTotals).Put(kp, record(tagTotals, kp, 0)); err != nil {
				return err
			}
			tk := keyPrefix([]byte(t.ID))
			if err := tx.Bucket(bucketTokens).Put(tk, encodeToken(tk, t)); err != nil {
				return err
			}
			made = true
			return nil
		},
		apply: func() {
			if !made {
				return
			}
			s.keys.Put([]byte(k))
			s.tokMu.Lock()
			defer s.tokMu.Unlock()
			s.tokens[t.ID] = t
		},
	})
	if errors.Is(err, store.ErrTooManyKeys) {
		return false, store.ErrTooManyKeys
	}
	if err != nil {
		return false, fmt.Errorf("create %q: %w", key, err)
	}
	return made, nil
}

// Token implements [store.Store]: from memory.
func (s *Store) Token(_ context.Context, id string) (store.Token, bool, error) {
	s.tokMu.RLock()
	defer s.tokMu.RUnlock()
	t, ok := s.tokens[id]
	return t, ok, nil
}

// checkToken refuses a token the file cannot hold.
func checkToken(t store.Token) error {
	switch {
	case len(t.ID) > store.MaxKeyBytes:
		return fmt.Errorf("put token: id of %d bytes, at most %d", len(t.ID), store.MaxKeyBytes)
	case len(t.Name) > maxTokenField || len(t.Prefix) > maxTokenField:
		return fmt.Errorf("put token %q: a name or prefix of more than %d bytes", t.ID, maxTokenField)
	}
	return nil
}

// DeleteToken implements [store.Store].
func (s *Store) DeleteToken(_ context.Context, id string) (bool, error) {
	if len(id) > store.MaxKeyBytes {
		return false, nil // never stored
	}
	found := false
	err := s.do(&ownerOp{
		run: func(tx *bolt.Tx, _ uint64) error {
			b, k := tx.Bucket(bucketTokens), keyPrefix([]byte(id))
			found = b.Get(k) != nil
			return b.Delete(k)
		},
		apply: func() {
			s.tokMu.Lock()
			defer s.tokMu.Unlock()
			delete(s.tokens, id)
		},
	})
	if err != nil {
		return false, fmt.Errorf("delete token %q: %w", id, err)
	}
	return found, nil
}

// DeleteTokenIf implements [store.Store]: the flusher runs operations
// one at a time, and memory holds what the file does between them, so
// the check and the delete are one.
func (s *Store) DeleteTokenIf(_ context.Context, id string, hash [32]byte) (bool, error) {
	if len(id) > store.MaxKeyBytes {
		return false, nil // never stored
	}
	found := false
	err := s.do(&ownerOp{
		run: func(tx *bolt.Tx, _ uint64) error {
			s.tokMu.RLock()
			t, ok := s.tokens[id]
			s.tokMu.RUnlock()
			if !ok || t.Hash != hash {
				return nil
			}
			found = true
			return tx.Bucket(bucketTokens).Delete(keyPrefix([]byte(id)))
		},
		apply: func() {
			if !found {
				return
			}
			s.tokMu.Lock()
			defer s.tokMu.Unlock()
			delete(s.tokens, id)
		},
	})
	if err != nil {
		return false, fmt.Errorf("delete token %q: %w", id, err)
	}
	return found, nil
}

// Tokens implements [store.Store]: from memory, which holds every token.
func (s *Store) Tokens(context.Context) ([]store.Token, error) {
	s.tokMu.RLock()
	defer s.tokMu.RUnlock()
	ids := slices.Sorted(maps.Keys(s.tokens))
	out := make([]store.Token, len(ids))
	for i, id := range ids {
		out[i] = s.tokens[id]
	}
	return out, nil
}

// loadOwned reads the locks and tokens into memory at open.
func (s *Store) loadOwned(tx *bolt.Tx) error {
	err := tx.Bucket(bucketLocks).ForEach(func(k, v []byte) error {
		key, err := splitTotalKey(k)
		if err != nil {
			return fmt.Errorf("a lock's key %q: %w", k, err)
		}
		if err := checkLock(k, v); err != nil {
			return fmt.Errorf("the lock of key %q: %w", key, err)
		}
		s.keys.Put(key).SetLocked(true)
		return nil
	})
	if err != nil {
		return err
	}
	return tx.Bucket(bucketTokens).ForEach(func(k, v []byte) error {
		t, err := decodeToken(k, v)
		if err != nil {
			id, _ := splitTotalKey(k)
			return fmt.Errorf("the token %q: %w", shown(k, id), err)
		}
		s.tokens[t.ID] = t
		return nil
	})
}
