package redisstore

import (
	"time"
)

// RoundPart names what one send of a round carries, for Options.OnRound.
type RoundPart int

const (
	// Counts is a round of counts: one apply script per group of slots.
	Counts RoundPart = iota
	// Uniques is a round of unique visitors: one uniques script per group.
	Uniques
)

// String returns "counts" or "uniques".
func (p RoundPart) String() string {
	if p == Uniques {
		return "uniques"
	}
	return "counts"
}

// errKind is a kind of failed call to Redis, for [Report.Errors].
type errKind int

const (
	errRound   errKind = iota // a round of counts (it is sent again)
	errUniques                // a round of unique visitors (sent again)
	errSeed                   // reading or making the day's seed
	errRead                   // a read of counts or unique visitors a request waited for
	errAdmit                  // admitting a new key
	errReserve                // reserving a block of /hi numbers
	errPing                   // the check between rounds
	numErrKinds
)

// ErrorKinds names the kinds of [Report.Errors], in its order.
var ErrorKinds = [numErrKinds]string{"round", "uniques", "seed", "read", "admit", "reserve", "ping"}

// Report is what an operator of instances on one Redis watches to see
// trouble coming, read at once by [Store.Report].
type Report struct {
	Stats
	UniqueCommands uint64 // uniques scripts sent, retries included
	KeysSent       uint64 // counters carried by rounds of counts, retries included
	Reserves       uint64 // blocks of /hi numbers reserved (Sync: /hi visits)
	// Errors counts failed calls to Redis by kind, in the order of
	// ErrorKinds.
	Errors [numErrKinds]uint64
	// Up reports whether Redis answered the last round and the last
	// check between rounds.
	Up bool
	// Stuck reports whether a round is unanswered and being sent again.
	Stuck          bool
	PendingVisits  uint64        // Batch: visits counted in memory and not yet sent
	PendingKeys    int           // keys waiting for the next round
	PendingUniques int           // unique visitors added and not yet answered by Redis
	UniquesDropped uint64        // unique visitors not counted: MaxPendingUniques were held
	SinceRound     time.Duration // since Redis last answered a round; 0 before the first
	HiLeft         uint64        // Batch: /hi numbers left in the blocks in hand
}

// Report returns the store's figures for operators. It takes the locks
// of the keys waiting for a round, one at a time: call it at scrape
// time, not per request.
func (s *Store) Report() Report {
	r := Report{
		Stats:          s.Stats(),
		UniqueCommands: s.stats.uniqueCommands.Load(),
		KeysSent:       s.stats.keysSent.Load(),
		Reserves:       s.stats.reserves.Load(),
		Up:             s.Health() == nil,
		Stuck:          s.stuck.Load(),
	}
	for i := range r.Errors {
		r.Errors[i] = s.stats.errors[i].Load()
	}
	r.Errors[errRound] = s.stats.roundErrors.Load()
	if t := s.stats.lastRound.Load(); t != 0 {
		r.SinceRound = time.Since(time.Unix(0, t))
	}
	s.dirtyMu.Lock()
	dirty := append([]*entry(nil), s.dirty...)
	s.dirtyMu.Unlock()
	r.PendingKeys = len(dirty)
	for _, e := range dirty {
		e.mu.Lock()
		r.PendingVisits += e.pendN
		e.mu.Unlock()
	}
	r.PendingUniques = int(s.uq.held.Load())
	r.UniquesDropped = s.uq.dropped.Load()
	if b := s.block.Load(); b != nil {
		if n := b.next.Load(); n < b.end {
			r.HiLeft = b.end - n
		}
	}
	s.hiMu.Lock()
	if s.spareEnd != 0 {
		r.HiLeft += s.o.HiBlock
	}
	s.hiMu.Unlock()
	return r
}
