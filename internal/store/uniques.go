package store

import "context"

// Uniques is an optional interface of a [Store] that keeps the unique
// visitors itself, shared by every instance that uses it: the Redis
// store. internal/unique counts through it instead of its own sketches,
// so a visitor is counted once per key and UTC day whichever instance
// it reaches, and a restart of any instance counts no one again.
//
// A visitor reaches the store only as a 64-bit keyed hash (see
// internal/unique); the store keeps the day's random seed that every
// instance derives that key from.
//
// Implementations must be safe for concurrent use and must not retain
// the slices passed to them.
type Uniques interface {
	// DaySeed returns the random seed of UTC day d, the same for every
	// instance: the first to ask makes it. The store keeps it no longer
	// than a little past the end of d.
	DaySeed(ctx context.Context, d Day) ([32]byte, error)

	// AddUnique records visitor v as a visitor of key on day d. It does
	// not wait for the network: the store sends it within a flush
	// interval, and at Close. While the store's backend does not answer
	// it holds a bounded number of visitors, and drops (and counts) the
	// new ones past that bound.
	AddUnique(key []byte, d Day, v uint64)

	// UniqueToday returns the estimated number of unique visitors of key
	// on day d, the visitors this instance has not sent yet included.
	UniqueToday(ctx context.Context, key []byte, d Day) (uint64, error)

	// UniqueDays returns key's estimated unique visitors on the n days
	// that end with last, oldest first; 1 <= n <= MaxDays.
	UniqueDays(ctx context.Context, key []byte, last Day, n int) ([]uint64, error)
}
