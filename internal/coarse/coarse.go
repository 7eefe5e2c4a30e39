// Package coarse is a clock that costs an atomic load to read: a
// goroutine stores the time every tick, and readers load it. The
// goroutine sleeps while nobody reads the clock, so that an idle
// process is not woken a thousand times a second.
//
// time.Now costs two vDSO clock reads; timing every request with it would
// cost more than the rest of the /hi handler's budget allows (see
// docs/performance.md). A coarse clock is what servers that time every
// request use instead (nginx caches the time per event-loop turn,
// HAProxy keeps now_ms): its readings are exact to within a tick, enough
// to count a request as slow or to fill latency buckets of a millisecond
// and up.
package coarse

import (
	"sync/atomic"
	"time"
)

// The states of a started Clock's goroutine, as readers see them.
const (
	unread int32 = iota // ticking; not read since its last tick
	read                // ticking, and read since its last tick
	asleep              // not ticking: a reader wakes it
)

// Clock is a monotonic clock that advances once per tick while it is
// read. A tick that finds it was not read since the last one puts its
// goroutine to sleep; the next reader then reads the precise time
// itself, stores it, and wakes the goroutine, without waiting for it.
// Its methods may be called concurrently.
type Clock struct {
	_     [64]byte     // keep now and state alone on their cache line: every request reads them
	now   atomic.Int64 // nanoseconds since epoch: the latest tick or reader's, never less
	state atomic.Int32 // unread, read or asleep
	_     [52]byte
	tick  time.Duration
	epoch time.Time
	wake  chan struct{} // a reader that finds the clock asleep sends once; buffered
	stop  chan struct{}
	done  chan struct{}
	naps  atomic.Uint64 // how many times the goroutine went to sleep
}

// Start starts a Clock that advances every tick while it is read. The
// caller must call Stop when finished with it.
func Start(tick time.Duration) *Clock {
	c := &Clock{tick: tick, epoch: time.Now(), wake: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{})}
	go c.run()
	return c
}

func (c *Clock) run() {
	defer close(c.done)
	t := time.NewTicker(c.tick)
	defer t.Stop()
	for {
		select {
		case <-t.C:
		case <-c.stop:
			return
		}
		c.advance()
		if c.state.CompareAndSwap(read, unread) {
			continue
		}
		// Nobody read the clock for a whole tick: sleep until somebody
		// does, unless a reader came in between.
		if !c.state.CompareAndSwap(unread, asleep) {
			continue
		}
		c.naps.Add(1)
		t.Stop()
		select {
		case <-c.wake:
		case <-c.stop:
			return
		}
		t.Reset(c.tick)
	}
}

// advance stores the time since epoch unless a later reading is stored
// already, and returns what is stored.
func (c *Clock) advance() int64 {
	t := int64(time.Since(c.epoch))
	for {
		old := c.now.Load()
		if t <= old {
			return old
		}
		if c.now.CompareAndSwap(old, t) {
			return t
		}
	}
}

// Manual returns a Clock that stands still until [Clock.Advance] moves
// it, for tests. Stop is a no-op on it.
func Manual() *Clock {
	c := &Clock{epoch: time.Now(), done: make(chan struct{})}
	c.state.Store(read) // for good: no goroutine to wake
	close(c.done)
	return c
}

// Advance moves a [Manual] clock forward by d.
func (c *Clock) Advance(d time.Duration) { c.now.Add(int64(d)) }

// Now returns the time as of the last tick, in nanoseconds since the
// clock started; if the clock was asleep, the time now, read precisely.
// Only differences of two readings mean anything. Readings never go
// back, and Now never blocks.
func (c *Clock) Now() int64 {
	if c.state.Load() != read { // once a tick, or asleep
		c.markRead()
	}
	return c.now.Load()
}

// Last returns the latest reading, as Now does, but without keeping
// the clock awake: while it sleeps, Last returns the reading from
// before. It is for a second reading soon after a Now, to tell whether
// the clock moved since (a request under a tick); it inlines to one
// load, where Now may wake the clock.
func (c *Clock) Last() int64 { return c.now.Load() }

// markRead marks the clock read since its last tick; if it was asleep,
// it stores the time first (so that Now loads this reading or a later
// one), then wakes the clock's goroutine.
func (c *Clock) markRead() {
	for {
		switch c.state.Load() {
		case read:
			return
		case unread:
			if c.state.CompareAndSwap(unread, read) {
				return
			}
		default: // asleep
			c.advance()
			if c.state.CompareAndSwap(asleep, read) {
				select {
				case c.wake <- struct{}{}:
				default: // cannot happen: one waker per sleep; never block
				}
			}
			return
		}
	}
}

// Tick returns the clock's resolution.
func (c *Clock) Tick() time.Duration { return c.tick }

// Naps returns how many times the clock's goroutine went to sleep
// because nobody read the clock for a tick.
func (c *Clock) Naps() uint64 { return c.naps.Load() }

// Stop stops the clock's goroutine; Now then returns the last reading.
func (c *Clock) Stop() {
	if c.stop != nil {
		close(c.stop)
	}
	<-c.done
	c.state.Store(read) // frozen: no reader reads the time or wakes a goroutine
}
