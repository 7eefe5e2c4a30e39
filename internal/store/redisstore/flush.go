package redisstore

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"time"

	"visitors/internal/store"
)

// group is the entries of one round in one group of slots.
type group struct {
	es   []*entry
	done bool // Redis answered
}

// flusher sends rounds: in Batch every flush interval, in Sync whenever
// visits wait. It is the only goroutine that sends deltas.
func (s *Store) flusher() {
	defer close(s.done)
	tick := time.NewTicker(s.o.FlushInterval)
	defer tick.Stop()
	for {
		select {
		case <-s.stop:
			s.round()
			return
		case ch := <-s.flushRq:
			ch <- s.round()
		case <-tick.C:
			if s.o.Durability == store.Batch {
				s.round()
			}
			s.countKeys()
		case <-s.kick:
			s.round()
		}
	}
}

// countKeys reads the size of the set of every key, which other
// instances grow too. It is also the flusher's check that Redis answers
// when no round has anything to send: [Store.Health] names Redis while
// it does not.
func (s *Store) countKeys() {
	if s.stuck.Load() {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), s.o.Timeout)
	defer cancel()
	if err := s.c.Do(ctx, s.c.B().Ping().Build()).Error(); err != nil {
		perr := fmt.Errorf("redis does not answer: %w", err)
		if s.pingErr.Swap(&perr) == nil {
			s.o.Log.Error().Err(perr).Msg("redis unreachable")
		}
		return
	}
	if s.pingErr.Swap(nil) != nil {
		s.o.Log.Info().Msg("redis answers again")
	}
	// An admission answered meanwhile may have seen more keys than this
	// read: the count is taken only if none overlapped it.
	begun := s.admits.Load()
	if begun != s.admitted.Load() {
		return
	}
	if n, err := s.c.Do(ctx, s.c.B().Zcard().Key(s.n.index).Build()).AsInt64(); err == nil && s.admitted.Load() == begun {
		s.keyCount.Store(n)
	}
}

// round takes what is pending, sends it as one round and retries it,
// unchanged, until Redis answers every group (or, once the store is
// closing, until Options.CloseTimeout passes).
func (s *Store) round() error {
	var r *round
	work := s.work[:0]
	if s.o.Durability == store.Sync {
		s.syncMu.Lock()
		r, s.cur = s.cur, &round{done: make(chan struct{})}
		s.syncMu.Unlock()
		for _, v := range r.visits {
			e := v.e
			e.mu.Lock()
			e.flight = addDay(e.flight, v.day, 1)
			e.flightN++
			if e.flightN == 1 {
				work = append(work, e)
			}
			e.mu.Unlock()
		}
	} else {
		s.dirtyMu.Lock()
		dirty := s.dirty
		s.dirty = s.work[:0]
		s.dirtyMu.Unlock()
		for _, e := range dirty {
			e.mu.Lock()
			e.queued = false
			if e.flightN == 0 { // always: a round ends with flight empty
				e.flight, e.pend = e.pend, e.flight[:0]
				e.flightN, e.pendN = e.pendN, 0
				e.flightGen = e.gen
			}
			e.mu.Unlock()
		}
		work = dirty
	}
	defer func() {
		clear(work)
		s.work = work[:0]
	}()
	if len(work) == 0 {
		if r != nil {
			close(r.done)
		}
		return nil
	}
	today := s.cal.Today()
	s.seq++
	slices.SortFunc(work, func(a, b *entry) int { return int(a.group) - int(b.group) })
	var groups []group
	for i := 0; i < len(work); {
		j := i + 1
		for j < len(work) && work[j].group == work[i].group {
			j++
		}
		groups = append(groups, group{es: work[i:j]})
		i = j
	}

	backoff := 50 * time.Millisecond
	var closeBy time.Time
	for {
		err := s.send(groups, today)
		if err == nil {
			break
		}
		s.stats.roundErrors.Add(1)
		var held int64
		for _, g := range groups {
			if !g.done {
				for _, e := range g.es {
					e.mu.Lock()
					held += int64(e.flightN)
					e.mu.Unlock()
				}
			}
		}
		s.held.Store(held)
		herr := fmt.Errorf("redis: round %d of this instance is unanswered, retrying (%d visits held in memory): %w", s.seq, held, err)
		if s.health.Swap(&herr) == nil {
			s.o.Log.Error().Err(herr).Msg("redis unreachable")
		}
		s.stuck.Store(true)
		if s.o.Durability == store.Sync {
			s.refuseWaiting()
		}
		if closeBy.IsZero() {
			select {
			case <-s.stop:
				closeBy = time.Now().Add(s.o.CloseTimeout)
			default:
			}
		}
		if !closeBy.IsZero() && time.Now().After(closeBy) {
			if r != nil {
				r.err = herr
				close(r.done)
			}
			return herr
		}
		t := time.NewTimer(backoff)
		select {
		case <-t.C:
		case <-s.stop:
			t.Stop()
			if closeBy.IsZero() {
				closeBy = time.Now().Add(s.o.CloseTimeout)
			}
		}
		backoff = min(2*backoff, 2*time.Second)
	}
	if s.health.Swap(nil) != nil {
		s.o.Log.Info().Uint64("round", s.seq).Msg("redis answers again; every held visit is sent")
	}
	s.held.Store(0)
	s.stuck.Store(false)
	s.stats.rounds.Add(1)
	s.rounds.Add(1)
	if r != nil {
		s.answer(r)
	}
	return nil
}

// refuseWaiting fails the Sync visits that wait for the next round: none
// of them was sent, so none counted.
func (s *Store) refuseWaiting() {
	s.syncMu.Lock()
	r := s.cur
	s.cur = &round{done: make(chan struct{})}
	s.syncMu.Unlock()
	r.err = s.downErr()
	close(r.done)
}

// answer gives each visit of a Sync round its counts: the last visit to
// a key in the round gets what Redis returned, the one before it one
// less, and so on. Visits to a key Redis found locked get its counts,
// locked: they counted nothing.
func (s *Store) answer(r *round) {
	for i := len(r.visits) - 1; i >= 0; i-- {
		v := &r.visits[i]
		e := v.e
		if e.resLocked {
			v.c = store.Counts{Total: e.resTotal, Today: onDay(e.resDays, v.day), Locked: true}
			continue
		}
		// A Set between a lost answer and its resend may have lowered
		// the counts below the round's visits: no number wraps.
		v.c.Total = sub(e.resTotal, e.seenN)
		v.c.Today = sub(onDay(e.resDays, v.day), onDay(e.seen, v.day))
		e.seen = addDay(e.seen, v.day, 1)
		e.seenN++
	}
	for _, v := range r.visits {
		v.e.seen, v.e.seenN = v.e.seen[:0], 0
	}
	s.stats.syncVisits.Add(uint64(len(r.visits)))
	close(r.done)
}

// sub returns a-b, or 0 if b > a.
func sub(a, b uint64) uint64 {
	if b > a {
		return 0
	}
	return a - b
}

// send sends the groups Redis has not answered yet, each as one apply
// script, in one pipelined batch, and takes in the answers. It returns
// the first error; the groups it names stay unanswered.
func (s *Store) send(groups []group, today store.Day) error {
	s.roundMu.Lock()
	defer s.roundMu.Unlock()
	var scripts []script
	var which []int
	seq := strconv.FormatUint(s.seq, 10)
	todayExp := strconv.FormatInt(dayExpiry(today), 10)
	for gi, g := range groups {
		if g.done {
			continue
		}
		keys := []string{s.n.seq(g.es[0].group, s.id)}
		args := []string{seq, strconv.Itoa(seqTTL), todayExp}
		for _, e := range g.es {
			e.mu.Lock()
			keys = append(keys, e.total, dayKey(e.tag, today), genKey(e.tag), lockKey(e.tag))
			gen := "*" // Sync: a visit not yet answered counts after any Set
			if s.o.Durability == store.Batch {
				gen = strconv.FormatUint(e.flightGen, 10)
			}
			args = append(args, gen, strconv.FormatUint(onDay(e.flight, today), 10))
			n := 0
			for _, d := range e.flight {
				if d.day != today {
					n++
				}
			}
			args = append(args, strconv.Itoa(n))
			for _, d := range e.flight {
				if d.day != today {
					keys = append(keys, dayKey(e.tag, d.day))
					args = append(args, strconv.FormatUint(d.n, 10), strconv.FormatInt(dayExpiry(d.day), 10))
				}
			}
			e.mu.Unlock()
		}
		scripts = append(scripts, script{src: applySrc, sha: applySHA, keys: keys, args: args})
		which = append(which, gi)
	}
	s.stats.commands.Add(uint64(len(scripts)))
	ctx, cancel := context.WithTimeout(context.Background(), s.o.Timeout)
	defer cancel()
	res := s.doScripts(ctx, scripts)
	var first error
	fresh := s.rounds.Load() + 1
	var readmit []string
	for i, r := range res {
		g := &groups[which[i]]
		vals, err := r.AsIntSlice()
		if err == nil {
			readmit, err = s.take(g, vals, today, fresh, readmit)
		}
		if err != nil {
			if first == nil {
				first = err
			}
			continue
		}
		g.done = true
	}
	s.readmit(ctx, readmit)
	return first
}

// readmit puts keys back in the sorted set of every key: keys this
// instance had admitted, that a Delete elsewhere removed, and that a
// round of this one made again (a Sync visit after the Delete, or a
// batch visit after its tombstone expired). The key's counts are in
// Redis already, so the limit is not checked: it may be passed by the
// keys that race so with a Delete. It runs while the round holds
// roundMu, so no Delete of this instance comes between.
func (s *Store) readmit(ctx context.Context, keys []string) {
	if len(keys) == 0 {
		return
	}
	cmd := s.c.B().Zadd().Key(s.n.index).Nx().ScoreMember()
	for _, k := range keys {
		cmd = cmd.ScoreMember(0, k)
	}
	n, err := s.c.Do(ctx, cmd.Build()).AsInt64()
	if err != nil {
		s.o.Log.Warn().Err(err).Int("keys", len(keys)).Msg("redis: could not list keys made again after a delete; List and -max-keys miss them until they are deleted or imported")
		return
	}
	s.keyCount.Add(n)
}

// Flags of a counter in apply.lua's answer.
const (
	flagLocked  = 1 // the counter is locked
	flagExists  = 2 // the counter exists
	flagCreated = 4 // this round made it
	flagStale   = 8 // the deltas' generation was not the counter's
)

// take applies one group's answer to its entries, and adds to readmit
// the keys the round made again after a Delete.
func (s *Store) take(g *group, vals []int64, today store.Day, fresh uint64, readmit []string) ([]string, error) {
	// Check the shape first: an entry is changed only if all fit.
	need := 0
	for _, e := range g.es {
		need += 4
		for _, d := range e.flight {
			if d.day != today {
				need++
			}
		}
	}
	if len(vals) != need {
		return readmit, fmt.Errorf("apply script: %d values, want %d", len(vals), need)
	}
	for _, e := range g.es {
		e.mu.Lock()
		total, td := uint64(vals[0]), uint64(vals[1])
		vals = vals[2:]
		if s.o.Durability == store.Sync {
			e.resTotal = total
			e.resDays = append(e.resDays[:0], dayDelta{today, td})
			for _, d := range e.flight {
				if d.day != today {
					e.resDays = append(e.resDays, dayDelta{d.day, uint64(vals[0])})
					vals = vals[1:]
				}
			}
		} else {
			for _, d := range e.flight {
				if d.day != today {
					vals = vals[1:]
				}
			}
			e.base, e.baseDay, e.baseToday, e.fresh = total, today, td, fresh
		}
		gen, flags := uint64(vals[0]), vals[1]
		vals = vals[2:]
		if flags&flagCreated != 0 && (!e.justAdmitted || e.dead.Load()) {
			readmit = append(readmit, e.key)
		}
		e.justAdmitted = false
		e.resLocked = flags&flagLocked != 0
		if s.o.Durability == store.Batch && !e.dead.Load() {
			if flags&flagStale != 0 && e.gen != gen {
				// A Set or Delete elsewhere: what this instance counted
				// under the old generation is dropped, here as in Redis.
				e.gen = gen
				e.pend, e.pendN = e.pend[:0], 0
				if flags&flagExists == 0 {
					// Deleted: the next visit admits the key again.
					e.dead.Store(true)
					s.entries.CompareAndDelete(e.key, e)
				}
			}
			if e.locked = flags&flagLocked != 0; e.locked {
				e.pend, e.pendN = e.pend[:0], 0 // Redis will drop them
			}
		}
		e.flight, e.flightN = e.flight[:0], 0
		e.mu.Unlock()
	}
	return readmit, nil
}
