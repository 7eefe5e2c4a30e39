// The write-ahead log of [store.Sync] durability.
//
// A bbolt commit costs two fdatasyncs and several page writes (250-470 µs
// here, see docs/performance.md); answering each sync pass only after one
// bounded the mode at about 0.6× the speed of memory. A pass now appends
// one record to a preallocated log and makes it durable with one
// fdatasync of blocks that already exist (no size or extent change to
// write), and answers; the bbolt file is brought up to date every flush
// interval, as in batch mode, and the log starts over. Pipelined (see
// pipelineLog), up to maxFlying records are in flight: each is written
// after the one before it and synced by a syncer goroutine, beside the
// others, while the next pass gathers. A sync that begins after a
// record's write covers it and every record before it, but a record is
// answered only once its own sync and those of every record before it
// have returned without an error: a record is never answered before
// every record ahead of it is durable (a replay stops at the first
// record missing), and a failed sync answers none of the records after
// it (they go to the bbolt file, see Store.failFlying).
//
// A record holds absolute counts: the /hi counter and, for every key the
// pass counted, its total and its days in memory. Replaying a record
// takes the larger of each value and what the file holds, so a record
// applied twice, or one older than the file, changes nothing.
//
//	record = length(4) crc32c(4) id(8) seq(8) payload
//	payload = uvarint(hits) uvarint(keys) { uvarint(len) key uvarint(total) uvarint(days) { uvarint(day) uvarint(count) } }
//
// The checksum covers id, seq and payload. id is the bbolt file's own
// random id (meta "log-id"): a log left beside a file it does not belong
// to (the file was moved away or replaced by an import) is ignored. seq
// numbers records from 1, one more each; the file keeps the last seq it
// has applied (meta "log-seq"). Each run of the log starts at offset 0
// with the seq after the file's, so a replay reads records from 0 while
// each is valid and follows the previous one: a torn last record (never
// answered: its fdatasync had not returned) and leftovers of an earlier
// run end it.

package boltstore

import (
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"time"

	bolt "go.etcd.io/bbolt"

	"visitors/internal/store"
	"visitors/internal/store/tally"
)

// LogName is the write-ahead log inside the data directory.
const LogName = "visitors.wal"

// logSize is the log's preallocated size; a pass that would pass its end
// first brings the bbolt file up to date. A variable for tests.
var logSize int64 = 4 << 20

const logHeader = 24

// useAIO makes the log sync through Linux AIO where the kernel offers it
// (aioSync); false: a blocking fdatasync. VISITORS_LOG_AIO=0 turns it
// off, to compare the two.
var useAIO = os.Getenv("VISITORS_LOG_AIO") != "0"

var (
	keyLogID  = []byte("log-id")
	keyLogSeq = []byte("log-seq")
)

// maxFlying is how many records may be in flight at once: written, and
// their syncs running side by side (see [Store.logPass]). This disk made
// 1.9-2.1k fdatasyncs a second one at a time, 5-6k two at a time and
// 8.3-8.9k four at a time (docs/performance.md): concurrent syncs of one
// file share the device's cache flushes.
const maxFlying = 4

// wal is the open log. Only the flusher uses it, except that the syncers
// (see [Store.syncer]) make the records in flight durable and answer
// them, in order (see [wal.order]).
type wal struct {
	f       *os.File
	path    string
	id      uint64
	seq     uint64 // the last record written
	applied uint64 // the last record the bbolt file holds
	off     int64  // where the next record goes
	hits    uint64 // the /hi counter in the last record
	broken  error  // why the last write failed; nil: usable
	buf     []byte // the record being written
	body    []byte // its keys
	keys    int    // how many
	stamp   uint64 // the pass being written, to list each key once

	// Pipelining: up to len(slots) records at a time are in flight,
	// written and handed to the syncers, which sync them side by side;
	// meanwhile the next pass gathers its visits. A record's pass is
	// answered only once its own sync and the sync of every record
	// before it have returned without an error. The flusher lands the
	// records in the order written: their bookkeeping, or, from the
	// first whose sync failed, the fallback to the bbolt file.
	flying []*flight    // in flight, in the order written; the flusher's
	free   []*flight    // flights to reuse
	cur    *flight      // the one being built
	queue  chan *flight // to the syncers; closed when the flusher stops
	landed chan *flight // back from a syncer, once synced or failed
	slots  []syncSlot   // one per syncer; slots[0] is f's own
	mu     sync.Mutex   // guards order, and the flights' synced and answered
	order  []*flight    // written and not yet answered, in order

	aio *aioSync // slots[0].aio: syncs f without holding a P; nil: fdatasync

	// burn is the log opened once more, for fail's sync alone. fail runs
	// while records may be in flight (a write that failed); its sync
	// through a slot's file, slot 0's f, could take the write-back error
	// the kernel reports once per open file from that slot's sync of an
	// earlier record, which would then be answered
	// (TestLogWriteFailureStealsNoSyncError).
	burn *os.File
}

// syncSlot is what one syncer syncs the log through: an open file
// description of its own, so that a write-back error of the log is
// reported to every sync that runs beside it (the kernel reports such an
// error once per open file: two syncs through one file, side by side,
// could see it only once), and an AIO context of its own (one sync in
// flight each).
type syncSlot struct {
	f   *os.File
	aio *aioSync // nil: fdatasync
}

// sync makes the log's records written so far durable.
func (sl syncSlot) sync() error {
	if sl.aio != nil {
		return sl.aio.sync(sl.f)
	}
	return datasync(sl.f)
}

// flight is one record on its way to the disk.
type flight struct {
	p        *pass
	visits   *visit // read only if the sync failed: the waiters still wait then
	off      int64  // where the record starts
	entries  []*entry
	totals   []uint64 // each entry's total in the record
	start    time.Time
	took     time.Duration // write and sync, set by the syncer
	err      error         // set by the syncer
	synced   bool          // its sync returned (under wal.mu)
	answered bool          // its pass was answered (under wal.mu)
	back     bool          // the flusher has it back from the syncer
}

// logRecord is one record read back.
type logRecord struct {
	seq  uint64
	hits uint64
	keys []logKey
}

type logKey struct {
	key   []byte
	total uint64
	days  []tally.DayCount
}

// logState returns the file's log id, creating one if it has none, and
// the last seq it applied.
func logState(tx *bolt.Tx) (id, applied uint64, err error) {
	meta := tx.Bucket(bucketMeta)
	if v := meta.Get(keyLogID); v != nil {
		if id, err = readRecord(tagMeta, keyLogID, v); err != nil {
			return 0, 0, fmt.Errorf("the log id: %w", err)
		}
	} else if !tx.Writable() {
		return 0, 0, nil
	} else {
		var b [8]byte
		rand.Read(b[:])
		id = binary.LittleEndian.Uint64(b[:]) | 1 // never 0: 0 is "none"
		if err := meta.Put(keyLogID, record(tagMeta, keyLogID, id)); err != nil {
			return 0, 0, err
		}
	}
	if applied, err = readRecord(tagMeta, keyLogSeq, meta.Get(keyLogSeq)); err != nil {
		return 0, 0, fmt.Errorf("the log position: %w", err)
	}
	return id, applied, nil
}

// readLog returns the records of the log at path that belong to the
// file with log id id and come after seq applied, in order. A missing
// log has none. It is an error if the log continues from a later seq
// than applied+1: records between were lost, so the bbolt file is older
// than its log (restored from a copy?).
func readLog(path string, id, applied uint64) ([]logRecord, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) || id == 0 {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	var recs []logRecord
	var last uint64
	for off := 0; ; {
		r, n, ok := parseRecord(data[off:], id)
		if !ok || (off > 0 && r.seq != last+1) {
			break
		}
		if off == 0 && r.seq > applied+1 {
			return nil, fmt.Errorf("%s continues from visit record %d but %s holds records up to %d only: the data file is older than its log (restored from a copy?); move %s away to start from the data file as it is", path, r.seq, FileName, applied, LogName)
		}
		if r.seq > applied {
			recs = append(recs, r)
		}
		last = r.seq
		off += n
	}
	return recs, nil
}

// parseRecord reads the record at the start of b, if it is a whole,
// valid record of the file with log id id.
func parseRecord(b []byte, id uint64) (r logRecord, n int, ok bool) {
	if len(b) < logHeader {
		return r, 0, false
	}
	size := int(binary.LittleEndian.Uint32(b))
	if size == 0 || size > len(b)-logHeader {
		return r, 0, false
	}
	if binary.LittleEndian.Uint32(b[4:]) != crc32.Checksum(b[8:logHeader+size], castagnoli) {
		return r, 0, false
	}
	if binary.LittleEndian.Uint64(b[8:]) != id {
		return r, 0, false
	}
	r.seq = binary.LittleEndian.Uint64(b[16:])
	p := b[logHeader : logHeader+size]
	next := func() uint64 {
		v, w := binary.Uvarint(p)
		if w <= 0 {
			ok = false
			return 0
		}
		p = p[w:]
		return v
	}
	ok = true
	r.hits = next()
	nk := next()
	for i := uint64(0); ok && i < nk; i++ {
		klen := next()
		if !ok || klen > store.MaxKeyBytes || klen > uint64(len(p)) {
			return r, 0, false
		}
		k := logKey{key: p[:klen]}
		p = p[klen:]
		k.total = next()
		nd := next()
		for j := uint64(0); ok && j < nd; j++ { // each day takes bytes: bounded by the payload
			d := next()
			k.days = append(k.days, tally.DayCount{Day: store.Day(d), Count: next()})
		}
		r.keys = append(r.keys, k)
	}
	if !ok || len(p) != 0 {
		return r, 0, false
	}
	return r, logHeader + size, true
}

// applyLog writes recs into the file in tx, each value the larger of the
// record's and the file's, and records the last seq as applied.
func applyLog(tx *bolt.Tx, recs []logRecord) error {
	if len(recs) == 0 {
		return nil
	}
	meta, totals, days := tx.Bucket(bucketMeta), tx.Bucket(bucketTotals), tx.Bucket(bucketDays)
	floors := tx.Bucket(bucketFloors) // nil in a file from before floors
	// floor returns the seq up to which records are older than what the
	// file holds for the key kp (an owner lowered or deleted it).
	floor := func(kp []byte) (uint64, error) {
		if floors == nil {
			return 0, nil
		}
		n, err := readRecord(tagFloors, kp, floors.Get(kp))
		if err != nil {
			return 0, fmt.Errorf("the log floor of %q: %w", kp, err)
		}
		return n, nil
	}
	// raise writes n under k if it is more than the record there, and
	// reports whether it did.
	raise := func(b *bolt.Bucket, tag byte, k []byte, n uint64) (bool, error) {
		old, err := readValue(tag, k, b.Get(k))
		if err != nil {
			return false, fmt.Errorf("%q: %w", k, err)
		}
		if n <= old {
			return false, nil
		}
		return true, b.Put(k, record(tag, k, n))
	}
	for _, r := range recs {
		if _, err := raise(meta, tagMeta, keyHits, r.hits); err != nil {
			return err
		}
		for _, k := range r.keys {
			kp := keyPrefix(k.key)
			switch f, err := floor(kp); {
			case err != nil:
				return err
			case r.seq <= f:
				continue
			}
			raised, err := raise(totals, tagTotals, kp, k.total)
			if err != nil {
				return err
			}
			for _, dc := range k.days {
				if dc.Count == 0 {
					continue
				}
				up, err := raise(days, tagDays, dayKey(k.key, dc.Day), dc.Count)
				if err != nil {
					return err
				}
				raised = raised || up
			}
			if raised {
				// A dated total's count may be older than the days now:
				// plain, it sends the load to the days (format.go).
				t, _ := parseTotal(kp, totals.Get(kp)) // read just above
				if err := totals.Put(kp, record(tagTotals, kp, t.n)); err != nil {
					return err
				}
			}
		}
	}
	last := recs[len(recs)-1].seq
	if err := clearFloors(tx); err != nil { // every record is applied: no floor matters
		return err
	}
	return meta.Put(keyLogSeq, record(tagMeta, keyLogSeq, last))
}

// replayLog brings db up to date with the log at path: it applies the
// records db has not, and returns db's log id and the last seq. It
// writes only if there is something to apply, or the file has no log id
// yet, and then calls before first (nil: nothing), which may refuse.
func replayLog(db *bolt.DB, path string, before func() error) (id, seq uint64, replayed int, err error) {
	read := func(tx *bolt.Tx) error {
		var applied uint64
		if id, applied, err = logState(tx); err != nil {
			return err
		}
		recs, err := readLog(path, id, applied)
		if err != nil {
			return err
		}
		seq, replayed = applied, len(recs)
		if len(recs) > 0 {
			seq = recs[len(recs)-1].seq
		}
		if tx.Writable() {
			return applyLog(tx, recs)
		}
		return nil
	}
	if err = db.View(read); err != nil || (id != 0 && replayed == 0) {
		return id, seq, replayed, err
	}
	if before != nil {
		if err := before(); err != nil {
			return 0, 0, 0, err
		}
	}
	err = db.Update(read)
	return id, seq, replayed, err
}

// openLog opens, creating and preallocating it if needed, the log in dir
// for a store whose file has log id id and has applied up to seq.
func openLog(dir string, id, seq uint64) (*wal, error) {
	path := filepath.Join(dir, LogName)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, FileMode)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	fi, err := f.Stat()
	if err == nil && fi.Size() < logSize {
		// Zeros, written and synced once: a record's fdatasync then
		// writes only its own blocks, never the file's size or extents.
		if err = preallocate(f, fi.Size(), logSize); err != nil {
			f.Truncate(fi.Size()) // give back the room it took: the disk is full
		}
		if err == nil {
			err = syncDir(dir)
		}
	}
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("prepare %s: %w", path, err)
	}
	l := &wal{f: f, path: path, id: id, seq: seq, applied: seq,
		queue: make(chan *flight, maxFlying), landed: make(chan *flight, maxFlying)}
	for i := range maxFlying {
		sl := syncSlot{f: f}
		if i > 0 {
			if sl.f, err = os.OpenFile(path, os.O_RDWR, FileMode); err != nil {
				l.close()
				return nil, fmt.Errorf("open %s: %w", path, err)
			}
		}
		if useAIO {
			sl.aio, _ = newAIOSync(sl.f) // none: fdatasync
		}
		l.slots = append(l.slots, sl)
	}
	if l.burn, err = os.OpenFile(path, os.O_RDWR, FileMode); err != nil {
		l.close()
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	l.aio = l.slots[0].aio
	return l, nil
}

func preallocate(f *os.File, from, to int64) error {
	zero := make([]byte, 1<<20)
	for off := from; off < to; {
		n := min(int64(len(zero)), to-off)
		if _, err := f.WriteAt(zero[:n], off); err != nil {
			return err
		}
		off += n
	}
	return f.Sync()
}

// begin starts the record of a pass, in a flight that is not flying.
func (l *wal) begin() {
	l.stamp++
	l.body, l.keys = l.body[:0], 0
	if l.cur == nil {
		if n := len(l.free); n > 0 {
			l.cur, l.free = l.free[n-1], l.free[:n-1]
		} else {
			l.cur = new(flight)
		}
	}
	l.cur.entries, l.cur.totals = l.cur.entries[:0], l.cur.totals[:0]
}

// add appends e's counts to the record, once per pass.
func (l *wal) add(e *entry, days []tally.DayCount) []tally.DayCount {
	if e.logStamp == l.stamp {
		return days
	}
	e.logStamp = l.stamp
	l.keys++
	start := len(days)
	total, latest, days := e.Snapshot(days)
	l.cur.entries = append(l.cur.entries, e)
	l.cur.totals = append(l.cur.totals, total)
	days = append(days, latest)
	l.body = binary.AppendUvarint(l.body, uint64(len(e.key)))
	l.body = append(l.body, e.key...)
	l.body = binary.AppendUvarint(l.body, total)
	l.body = binary.AppendUvarint(l.body, uint64(len(days)-start))
	for _, dc := range days[start:] {
		l.body = binary.AppendUvarint(l.body, uint64(dc.Day))
		l.body = binary.AppendUvarint(l.body, dc.Count)
	}
	return days[:start]
}

// finish completes the record with the /hi counter and returns it.
func (l *wal) finish(hits uint64) []byte {
	l.buf = append(l.buf[:0], make([]byte, logHeader)...)
	l.buf = binary.AppendUvarint(l.buf, hits)
	l.buf = binary.AppendUvarint(l.buf, uint64(l.keys))
	l.buf = append(l.buf, l.body...)
	binary.LittleEndian.PutUint32(l.buf, uint32(len(l.buf)-logHeader))
	binary.LittleEndian.PutUint64(l.buf[8:], l.id)
	binary.LittleEndian.PutUint64(l.buf[16:], l.seq+1)
	binary.LittleEndian.PutUint32(l.buf[4:], crc32.Checksum(l.buf[8:], castagnoli))
	return l.buf
}

// fits reports whether a record of n bytes fits after the last one.
func (l *wal) fits(n int) bool { return l.off+int64(n) <= logSize }

// append writes rec after the last record, without making it durable:
// the syncer does that. A record whose write or sync fails burns its seq
// (see fail).
func (l *wal) append(rec []byte) error {
	l.seq++
	l.cur.off = l.off
	if _, err := l.f.WriteAt(rec, l.off); err != nil {
		return l.fail(l.off, err)
	}
	l.off += int64(len(rec))
	return nil
}

// fail marks the log broken by err, the failed write or sync of the
// record at off. The next commit of the bbolt file records the record's
// seq as applied, so that it is never replayed should it have reached
// the disk anyway; meanwhile its header is overwritten, so that no
// replay finds it, nor any record after it.
func (l *wal) fail(off int64, err error) error {
	if _, zerr := l.f.WriteAt(make([]byte, logHeader), off); zerr == nil {
		datasync(l.burn) // not l.f: see burn
	}
	l.broken = fmt.Errorf("write %s: %w", l.path, err)
	return l.broken
}

// reset starts the log over once the bbolt file holds every record.
func (l *wal) reset() {
	l.applied, l.off, l.broken = l.seq, 0, nil
}

// close closes the log's file and every slot's file and AIO context,
// and returns the first error.
func (l *wal) close() error {
	var first error
	keep := func(err error) {
		if first == nil {
			first = err
		}
	}
	for i, sl := range l.slots {
		if sl.aio != nil {
			keep(sl.aio.close())
		}
		if i > 0 {
			keep(sl.f.Close())
		}
	}
	if l.burn != nil {
		keep(l.burn.Close())
	}
	keep(l.f.Close())
	return first
}

// logPending reads the log in dir for a check: how many records and
// visits' keys the file in db has not applied. It writes nothing.
func logPending(db *bolt.DB, dir string) (records int, err error) {
	err = db.View(func(tx *bolt.Tx) error {
		id, applied, err := logState(tx)
		if err != nil {
			return err
		}
		recs, err := readLog(filepath.Join(dir, LogName), id, applied)
		records = len(recs)
		return err
	})
	return records, err
}

// settleLog applies to the file at path the records a crash left in the
// log in dir, if there are any, so that export and import see every
// acknowledged visit. The file has been verified.
func settleLog(dir, path string) error {
	ro, err := boltOpen(path, &bolt.Options{Timeout: 200 * time.Millisecond, ReadOnly: true})
	if err != nil {
		return err
	}
	n, err := logPending(ro, dir)
	ro.Close()
	if err != nil {
		return fmt.Errorf("open %s: %w", path, err)
	}
	if n == 0 {
		return nil
	}
	db, _, _, err := openDB(dir, false)
	if err != nil {
		return err
	}
	_, _, _, err = replayLog(db, filepath.Join(dir, LogName), nil)
	if cerr := db.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("apply %s to %s: %w", LogName, path, err)
	}
	return nil
}

// settledCopy returns a copy of the store in db, in a temporary
// directory, with the records a crash left in the log in dir applied, and
// a function that removes it. Export reads it, so that it writes nothing
// in dir (which may be read-only: a snapshot, a backup volume).
func settledCopy(db *bolt.DB, dir string) (*bolt.DB, func(), error) {
	tmp, err := os.MkdirTemp("", "visitors-export-")
	if err != nil {
		return nil, nil, fmt.Errorf("a copy to apply %s to: %w", LogName, err)
	}
	path := filepath.Join(tmp, FileName)
	if err := db.View(func(tx *bolt.Tx) error { return tx.CopyFile(path, 0o600) }); err != nil {
		os.RemoveAll(tmp)
		return nil, nil, fmt.Errorf("copy %s to apply %s to: %w", db.Path(), LogName, err)
	}
	cp, err := bolt.Open(path, 0o600, &bolt.Options{NoSync: true})
	if err == nil {
		_, _, _, err = replayLog(cp, filepath.Join(dir, LogName), nil)
		if err != nil {
			cp.Close()
		}
	}
	if err != nil {
		os.RemoveAll(tmp)
		return nil, nil, fmt.Errorf("apply %s: %w", filepath.Join(dir, LogName), err)
	}
	return cp, func() { cp.Close(); os.RemoveAll(tmp) }, nil
}
