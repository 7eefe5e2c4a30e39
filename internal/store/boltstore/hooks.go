// Test hooks: the places where a test of this package plants a fault,
// or stops the store at a chosen moment to race a visit with it. Nothing
// outside the tests sets them.

package boltstore

// hooks are a store's test hooks, each nil unless a test sets it. A
// [Store] holds them behind one atomic pointer, nil when none is set,
// so that a place that checks for its hook costs one load. A hooks
// value is never changed once stored: a test changes the hooks of a
// running store by storing a new value (setHooks, in hooks_test.go).
type hooks struct {
	// putFault fails the write of the keys it returns an error for (put,
	// and an owner operation's writes: keyFault). Tests use it: no real
	// key fails any more.
	putFault func(key string) error
	// importRun is called by an online import's transaction once it has
	// taken today. Tests use it to bring a midnight there.
	importRun func()
	// entryMade is called by newEntry with the entry it hands the map,
	// and replaceGap by replace before it puts the new entry in the map:
	// in the place of the old one, retired, or of none. Tests use them to
	// bring a visit there.
	entryMade  func(*entry)
	replaceGap func()
	// logFault is called after a log record is written and before its
	// fdatasync, and fails the sync with the error it returns.
	logFault func() error
}

// noHooks is what testHooks returns when no hook is set.
var noHooks hooks

// testHooks returns the store's test hooks: never nil, and never
// changed once returned.
func (s *Store) testHooks() *hooks {
	if h := s.hooks.Load(); h != nil {
		return h
	}
	return &noHooks
}
