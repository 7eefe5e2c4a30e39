package boltstore

// setHooks changes s's test hooks, which s may be using: change edits a
// copy of the hooks set so far, which then replaces them.
func setHooks(s *Store, change func(h *hooks)) {
	for {
		old := s.hooks.Load()
		h := new(hooks)
		if old != nil {
			*h = *old
		}
		change(h)
		if s.hooks.CompareAndSwap(old, h) {
			return
		}
	}
}
