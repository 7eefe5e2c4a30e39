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
	if n, err := s.c.Do(ctx, s.c.B().Scard().Key(s.n.keys).Build()).AsInt64(); err == nil && s.admitted.Load() == begun {
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
// less, and so on.
func (s *Store) answer(r *round) {
	for i := len(r.visits) - 1; i >= 0; i-- {
		v := &r.visits[i]
		e := v.e
		v.c.Total = e.resTotal - e.seenN
		v.c.Today = onDay(e.resDays, v.day) - onDay(e.seen, v.day)
		e.seen = addDay(e.seen, v.day, 1)
		e.seenN++
	}
	for _, v := range r.visits {
		v.e.seen, v.e.seenN = v.e.seen[:0], 0
	}
	s.stats.syncVisits.Add(uint64(len(r.visits)))
	close(r.done)
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
			keys = append(keys, e.total, dayKey(e.tag, today))
			args = append(args, strconv.FormatUint(onDay(e.flight, today), 10))
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
	for i, r := range res {
		g := &groups[which[i]]
		vals, err := r.AsIntSlice()
		if err == nil {
			err = s.take(g, vals, today, fresh)
		}
		if err != nil {
			if first == nil {
				first = err
			}
			continue
		}
		g.done = true
	}
	return first
}

// take applies one group's answer to its entries.
func (s *Store) take(g *group, vals []int64, today store.Day, fresh uint64) error {
	// Check the shape first: an entry is changed only if all fit.
	need := 0
	for _, e := range g.es {
		need += 2
		for _, d := range e.flight {
			if d.day != today {
				need++
			}
		}
	}
	if len(vals) != need {
		return fmt.Errorf("apply script: %d values, want %d", len(vals), need)
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
		e.flight, e.flightN = e.flight[:0], 0
		e.mu.Unlock()
	}
	return nil
}
