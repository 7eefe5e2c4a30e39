package store

// Sketches is an optional interface of a [Store]: one that implements it
// keeps, beside its counts, one opaque sketch per key and UTC day (the
// unique-visitor sketches of internal/unique) as durably as its counts.
// A store without it still serves unique visitors, from memory only, so
// a restart forgets the day's visitors. The boltstore implements it.
//
// Implementations must be safe for concurrent use and must not retain
// the slices passed to them.
type Sketches interface {
	// PutSketches stores each sketch as its key's sketch of day d,
	// replacing what was there, all or none.
	PutSketches(d Day, sketches []Sketch) error

	// LoadSketches calls fn with the key and data of every sketch of day
	// d. The slices are valid only during the call.
	LoadSketches(d Day, fn func(key, data []byte) error) error

	// SketchDays returns key's sketches of the n days that end with last,
	// oldest first; a day without one is nil. 1 <= n <= MaxDays.
	SketchDays(key []byte, last Day, n int) ([][]byte, error)
}

// Sketch is one key's sketch of one day.
type Sketch struct {
	Key, Data []byte
}

// HeldKeys is an optional interface of a [Sketches] store that holds its
// keys in memory: who keeps something of its own per key beside the
// store (the unique counter, a sketch per key) takes the store's string
// rather than a copy of the key.
type HeldKeys interface {
	// HeldKey returns the store's string of key, and whether it holds
	// key.
	HeldKey(key []byte) (string, bool)
}
