// Package store defines the counting interface that every backend of
// visitors implements: the in-memory store now, the embedded and Redis
// stores later. The HTTP layer depends only on [Store].
package store

import (
	"context"
	"errors"
)

// ErrTooManyKeys is returned by [Store.Incr] when the store already holds
// its limit of distinct keys and key is new. Existing keys still count.
var ErrTooManyKeys = errors.New("too many distinct keys")

// Store counts visits: one global counter and one counter per key.
//
// Implementations must be safe for concurrent use, must never hand out
// the same global number twice, and must not retain the key slices passed
// to them after a call returns (callers reuse those buffers).
type Store interface {
	// Hit records one visit to the global counter and returns its number:
	// 1 for the first visit, one more for each visit after it.
	Hit(ctx context.Context) (uint64, error)

	// Incr records one visit to key and returns key's new total.
	// It returns ErrTooManyKeys if key is new and the store is full.
	Incr(ctx context.Context, key []byte) (uint64, error)

	// Count returns key's total without recording a visit;
	// it is 0 for a key never seen.
	Count(ctx context.Context, key []byte) (uint64, error)

	// Keys reports how many distinct keys the store holds.
	Keys() int

	// Close releases the store's resources. No method may be called after it.
	Close() error
}
