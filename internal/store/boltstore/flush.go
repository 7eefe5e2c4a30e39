// The flusher: the one goroutine that writes the bbolt file and the
// write-ahead log. Open starts it, Close stops it after a last pass.
//
// Its loop (flusher) runs a pass when kicked (a Sync visit, a Flush, a
// /hi number past the durable reservation), on the flush timer, when an
// owner operation waits (runOps, owners.go), and a last one at Close. A
// pass that writes the bbolt file goes in this order:
//
//  1. take seals the pass that has not begun (visits from here on join
//     the next) and counts its Sync visits in memory, putting their
//     entries in the journal;
//  2. commit waits for the log's records in flight (settle), takes the
//     journal whole, forwards the visits of entries an owner operation
//     retired, snapshots every changed entry (write) and sorts the
//     snapshots in the file's order;
//  3. it sizes the /hi reservation (Batch; the exact counter at Close),
//     waits for the background check of the file (awaitFile), and writes
//     everything in one bbolt transaction (commitTx, put), durable when
//     it returns;
//  4. on success the entries are marked written and a key that failed
//     alone is kept for the next pass; on failure every snapshot goes
//     back to the journal, the pass's Sync visits are taken back
//     (takeBack) and the store is marked unhealthy;
//  5. it answers the pass's visits and closes the pass.
//
// In Sync mode with the log, a kick runs logPass instead: steps 1 and 5
// around one log record (wal.go) made durable by a syncer goroutine
// (syncRecord), which answers records in order; land hands them back to
// the flusher. The timer then brings the bbolt file up to date through
// commit, and the log starts over.

package boltstore

import (
	"errors"
	"fmt"
	"runtime"
	"slices"
	"time"

	bolt "go.etcd.io/bbolt"

	"visitors/internal/store"
	"visitors/internal/store/tally"
)

// flusher is the loop of the store's one writer; it closes s.done when
// it stops.
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
	if fault := s.testHooks().logFault; fault != nil {
		err = fault()
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

// write is one entry's snapshot taken by the flusher.
type write struct {
	e      *entry
	total  uint64
	latest tally.DayCount
	past   []tally.DayCount // earlier days not yet on disk
	err    string           // why its write failed, or ""
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
	if f := s.testHooks().putFault; f != nil {
		if err := f(w.e.key); err != nil {
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
