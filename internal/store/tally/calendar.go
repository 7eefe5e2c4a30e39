package tally

import (
	"sync"
	"sync/atomic"
	"time"

	"visitors/internal/store"
)

// Calendar says which UTC day visits count towards. A timer advances it
// at each UTC midnight, so reading it is one atomic load. It is safe for
// concurrent use; the caller must call Stop.
type Calendar struct {
	day atomic.Uint32
	now func() time.Time

	mu      sync.Mutex // guards timer and stopped
	timer   *time.Timer
	stopped bool
}

// NewCalendar returns a Calendar on the clock now (nil: time.Now).
func NewCalendar(now func() time.Time) *Calendar {
	if now == nil {
		now = time.Now
	}
	c := &Calendar{now: now}
	c.Rollover()
	return c
}

// Today returns the UTC day visits now count towards.
func (c *Calendar) Today() store.Day { return store.Day(c.day.Load()) }

// Now reads the calendar's clock.
func (c *Calendar) Now() time.Time { return c.now() }

// Rollover reads the clock and, if a new UTC day has begun, makes it the
// day visits count towards; the day never goes back. The calendar calls
// it itself at each UTC midnight; tests with a manual clock call it after
// moving the clock.
func (c *Calendar) Rollover() {
	now := c.now()
	for {
		old := c.day.Load()
		d := uint32(store.DayOf(now))
		if d <= old || c.day.CompareAndSwap(old, d) {
			break
		}
	}
	next := store.Day(c.day.Load() + 1).Time()
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.stopped {
		return
	}
	if c.timer != nil {
		c.timer.Stop()
	}
	c.timer = time.AfterFunc(next.Sub(now), c.Rollover)
}

// Stop stops the midnight timer.
func (c *Calendar) Stop() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.stopped = true
	if c.timer != nil {
		c.timer.Stop()
	}
}
