package redisstore

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/redis/rueidis"

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
			s.uniquesRound(s.round)
			s.drainUniques()
			return
		case ch := <-s.flushRq:
			ch <- s.uniquesRound(s.round)
		case <-tick.C:
			if s.o.Durability == store.Batch {
				s.uniquesRound(s.round)
			} else {
				s.uniquesRound(func() error { return nil }) // Sync: each visit's round has landed
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
		s.stats.errors[errPing].Add(1)
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
		start := time.Now()
		err := s.send(groups, today)
		s.observe(Counts, time.Since(start), err)
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
				s.settle(r, groups, today, herr)
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
	s.stats.lastRound.Store(time.Now().UnixNano())
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

// Outcomes of a group of a Sync round that Close gave up on.
const (
	answered   = iota // Redis answered the round
	applied           // Redis had applied it; the answer was lost
	notApplied        // Redis had not, and now never will
	unknown           // Redis does not say
)

// settle ends a Sync round that Close gave up on. A group Redis did not
// answer may have applied the round all the same (its answer may be what
// was lost). One SET ... GET of the group's sequence key to the round's
// number, a plain command (no script), tells which, and fences the round:
// a copy still on its way finds the number and adds nothing. The visits
// of a group that had applied it are answered with counts read from
// Redis; those of a group that had not, with an error: they did not
// count. If Redis does not answer this either, the visits get an error
// wrapping ErrOutcomeUnknown.
func (s *Store) settle(r *round, groups []group, today store.Day, herr error) {
	ctx, cancel := context.WithTimeout(context.Background(), s.o.Timeout)
	defer cancel()
	seq := strconv.FormatUint(s.seq, 10)
	outcome := make(map[uint16]int, len(groups))
	var cmds rueidis.Commands
	var open []*group
	for gi := range groups {
		g := &groups[gi]
		if !g.done {
			cmds = append(cmds, s.c.B().Set().Key(s.n.seq(g.es[0].group, s.id)).Value(seq).Get().ExSeconds(seqTTL).Build())
			open = append(open, g)
		}
	}
	var reads rueidis.Commands
	var readOf []*entry
	for j, res := range s.c.DoMulti(ctx, cmds...) {
		g := open[j]
		old, err := res.AsUint64()
		switch {
		case rueidis.IsRedisNil(err):
			outcome[g.es[0].group] = notApplied // this instance never wrote the group
		case err != nil:
			outcome[g.es[0].group] = unknown
		case old >= s.seq:
			outcome[g.es[0].group] = applied
			for _, e := range g.es {
				names := []string{e.total, lockKey(e.tag), dayKey(e.tag, today)}
				for _, d := range e.flight {
					if d.day != today {
						names = append(names, dayKey(e.tag, d.day))
					}
				}
				reads = append(reads, s.c.B().Mget().Key(names...).Build())
				readOf = append(readOf, e)
			}
		default:
			outcome[g.es[0].group] = notApplied
		}
	}
	for j, res := range s.c.DoMulti(ctx, reads...) {
		e := readOf[j]
		v := make([]uint64, 3, 3+len(e.flight))
		for _, d := range e.flight {
			if d.day != today {
				v = append(v, 0)
			}
		}
		if err := readInts(res, v); err != nil {
			outcome[e.group] = unknown
			continue
		}
		e.resTotal, e.resLocked = v[0], v[1] != 0
		e.resDays = append(e.resDays[:0], dayDelta{today, v[2]})
		i := 3
		for _, d := range e.flight {
			if d.day != today {
				e.resDays = append(e.resDays, dayDelta{d.day, v[i]})
				i++
			}
		}
	}
	var held int64
	for i := range r.visits {
		v := &r.visits[i]
		switch outcome[v.e.group] {
		case notApplied:
			v.err = herr
			held++
		case unknown:
			v.err = fmt.Errorf("%w: %w", ErrOutcomeUnknown, herr)
			held++
		}
	}
	s.held.Store(held)
	s.answer(r)
}

// answer gives each visit of a Sync round its counts: the last visit to
// a key in the round gets what Redis returned, the one before it one
// less, and so on. Visits to a key Redis found locked get its counts,
// locked: they counted nothing.
func (s *Store) answer(r *round) {
	n := 0
	for i := len(r.visits) - 1; i >= 0; i-- {
		v := &r.visits[i]
		e := v.e
		if v.err != nil {
			continue // settled: not answered
		}
		n++
		if e.resLocked {
			v.c = store.Counts{Total: e.resTotal, Today: onDay(e.resDays, v.day), Locked: true}
			continue
		}
		if e.resLost > 0 { // past a bound: the latest visits counted nothing
			e.resLost--
			v.c = store.Counts{Total: e.resTotal, Today: onDay(e.resDays, v.day), Saturated: true}
			n--
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
		v.e.seen, v.e.seenN, v.e.resLost = v.e.seen[:0], 0, 0
	}
	s.stats.syncVisits.Add(uint64(n))
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
	now := s.cal.Now()
	todayTTL := strconv.FormatInt(dayTTL(today, now), 10)
	for gi, g := range groups {
		if g.done {
			continue
		}
		keys := []string{s.n.seq(g.es[0].group, s.id)}
		args := []string{seq, strconv.Itoa(seqTTL), todayTTL}
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
					args = append(args, strconv.FormatUint(d.n, 10), strconv.FormatInt(dayTTL(d.day, now), 10))
				}
			}
			e.mu.Unlock()
		}
		s.stats.keysSent.Add(uint64(len(g.es)))
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
// the keys the round made again after a Delete. The script answers the
// counts and generations as decimal strings, never Lua numbers (doubles,
// exact only to 2^53), which AsIntSlice parsed exactly into vals.
func (s *Store) take(g *group, vals []int64, today store.Day, fresh uint64, readmit []string) ([]string, error) {
	// Check the shape first: an entry is changed only if all fit.
	need := 0
	for _, e := range g.es {
		need += 5
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
		gen, flags, lost := uint64(vals[0]), vals[1], uint64(vals[2])
		vals = vals[3:]
		if s.o.Durability == store.Sync {
			e.resLost = lost
		}
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
