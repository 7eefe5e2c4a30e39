// Package coarse is a clock that costs an atomic load to read: a
// goroutine stores the time every tick, and readers load it.
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

// Clock is a monotonic clock that advances once per tick. Its methods may
// be called concurrently.
type Clock struct {
	_     [64]byte     // keep now alone on its cache line: every request reads it
	now   atomic.Int64 // nanoseconds since epoch, as of the last tick
	_     [56]byte
	tick  time.Duration
	epoch time.Time
	stop  chan struct{}
	done  chan struct{}
}

// Start starts a Clock that advances every tick. The caller must call
// Stop when finished with it.
func Start(tick time.Duration) *Clock {
	c := &Clock{tick: tick, epoch: time.Now(), stop: make(chan struct{}), done: make(chan struct{})}
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
			c.now.Store(int64(time.Since(c.epoch)))
		case <-c.stop:
			return
		}
	}
}

// Manual returns a Clock that stands still until [Clock.Advance] moves
// it, for tests. Stop is a no-op on it.
func Manual() *Clock {
	c := &Clock{epoch: time.Now(), done: make(chan struct{})}
	close(c.done)
	return c
}

// Advance moves a [Manual] clock forward by d.
func (c *Clock) Advance(d time.Duration) { c.now.Add(int64(d)) }

// Now returns the time as of the last tick, in nanoseconds since the
// clock started. Only differences of two readings mean anything.
func (c *Clock) Now() int64 { return c.now.Load() }

// Tick returns the clock's resolution.
func (c *Clock) Tick() time.Duration { return c.tick }

// Stop stops the clock's goroutine; Now then returns the last reading.
func (c *Clock) Stop() {
	if c.stop != nil {
		close(c.stop)
	}
	<-c.done
}
