package boltstore

import (
	"testing"

	"visitors/internal/store"
)

// TestANegativeAddGivesNoOtherKeyItsPlace: a negative Add (Set, an
// import that merges) puts a new entry in the place of the key's old
// one. The place must not be free meanwhile: a new key's visit took it,
// at the limit, so that a visit to the key itself was refused with
// ErrTooManyKeys, and the key came back past the limit (three keys held
// of at most two).
func TestANegativeAddGivesNoOtherKeyItsPlace(t *testing.T) {
	o := Options{Dir: t.TempDir(), Durability: store.Batch, MaxKeys: 2}
	s := mustOpen(t, o)
	for _, k := range []string{"k", "a"} {
		if _, err := s.Set(ctx, []byte(k), 10); err != nil {
			t.Fatal(err)
		}
	}
	// At each call: a replace that left the key absent calls it again
	// before it puts the new entry in.
	var newKey, oldKey error
	newKey = store.ErrTooManyKeys
	gap := func() {
		if _, _, err := s.Visit(ctx, []byte("b"), true); err == nil {
			newKey = nil
		}
		if _, _, err := s.Visit(ctx, []byte("k"), true); err != nil {
			oldKey = err
		}
	}
	setHooks(s, func(h *hooks) { h.replaceGap = gap })
	if _, err := s.Add(ctx, []byte("k"), -1); err != nil {
		t.Fatal(err)
	}
	setHooks(s, func(h *hooks) { h.replaceGap = nil })
	if oldKey != nil {
		t.Errorf("a visit to k during its negative Add: %v, want it counted", oldKey)
	}
	if newKey == nil {
		t.Errorf("a visit made a third key during k's negative Add, of at most two")
	}
	if n := s.Keys(); n > o.MaxKeys {
		t.Errorf("Keys() = %d after a negative Add, above MaxKeys %d", n, o.MaxKeys)
	}
	// 10, less 1, and the visit during the Add, which a pass forwards.
	s = reopen(t, s, o)
	defer mustClose(t, s)
	if c := mustGet(t, s, []byte("k")); c.Total != 10 {
		t.Errorf("k after a restart: %d, want 10", c.Total)
	}
}
