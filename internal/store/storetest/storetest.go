// Package storetest proves the [store.Store] contract: [Run] is one
// conformance suite that every backend runs, in the spirit of
// golang.org/x/perf's storage tests, and [Clock] is a clock tests move by
// hand.
package storetest

import (
	"sync"
	"time"
)

// Clock is a clock a test moves by hand. It is safe for concurrent use.
type Clock struct {
	mu sync.Mutex // guards t
	t  time.Time
}

// NewClock returns a Clock that reads t until moved.
func NewClock(t time.Time) *Clock { return &Clock{t: t} }

// Now returns the clock's time; pass it as a store's Now.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

// Add moves the clock by d.
func (c *Clock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}
