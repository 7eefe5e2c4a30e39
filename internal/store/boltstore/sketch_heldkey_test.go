package boltstore

import "testing"

// TestHeldKey: HeldKey answers the key's own string for a key the store
// holds, and false for one it does not.
func TestHeldKey(t *testing.T) {
	s := mustOpen(t, Options{Dir: t.TempDir()})
	defer mustClose(t, s)
	mustIncr(t, s, []byte("held"))
	if k, ok := s.HeldKey([]byte("held")); !ok || k != "held" {
		t.Errorf("HeldKey(held) = %q, %v; want held, true", k, ok)
	}
	if k, ok := s.HeldKey([]byte("other")); ok || k != "" {
		t.Errorf("HeldKey(other) = %q, %v; want \"\", false", k, ok)
	}
}
