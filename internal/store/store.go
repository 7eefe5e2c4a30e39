// Package store defines the counting interface that every backend of
// visitors implements: the in-memory store, the embedded durable store
// and, later, Redis. The HTTP layer depends only on [Store].
package store

import (
	"context"
	"errors"
	"time"
)

// ErrTooManyKeys is returned by [Store.Incr] when the store already holds
// its limit of distinct keys and key is new. Existing keys still count.
var ErrTooManyKeys = errors.New("too many distinct keys")

// Counts are one key's counters.
type Counts struct {
	Total uint64 // visits ever
	Today uint64 // visits this UTC day
}

// Daily is a key's visits per UTC day, oldest first. Days without visits
// are zero.
type Daily struct {
	Last   time.Time // the UTC midnight that starts the day of the last count
	Counts []uint64
}

// Store counts visits: one global counter and, per key, a total and a
// count for each UTC day.
//
// Implementations must be safe for concurrent use, must never hand out
// the same global number twice, and must not retain the key slices passed
// to them after a call returns (callers reuse those buffers).
type Store interface {
	// Hit records one visit to the global counter and returns its number:
	// 1 for the first visit, one more for each visit after it.
	Hit(ctx context.Context) (uint64, error)

	// Incr records one visit to key and returns key's new counts.
	// It returns ErrTooManyKeys if key is new and the store is full.
	Incr(ctx context.Context, key []byte) (Counts, error)

	// Get returns key's counts without recording a visit; they are zero
	// for a key never seen.
	Get(ctx context.Context, key []byte) (Counts, error)

	// Days returns key's counts for the last n UTC days, today included.
	Days(ctx context.Context, key []byte, n int) (Daily, error)

	// Keys reports how many distinct keys the store holds.
	Keys() int

	// Close flushes what the store holds and releases its resources.
	// No method may be called after it.
	Close() error
}

// Day numbers UTC days: 0 is 1970-01-01.
type Day uint32

// DayOf returns the UTC day t falls on.
func DayOf(t time.Time) Day { return Day(t.Unix() / 86400) }

// Time returns the UTC midnight that starts d.
func (d Day) Time() time.Time { return time.Unix(int64(d)*86400, 0).UTC() }
