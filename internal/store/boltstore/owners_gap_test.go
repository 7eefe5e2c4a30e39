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
	defer mustClose(t, s)
	for _, k := range []string{"k", "a"} {
		if _, err := s.Set(ctx, []byte(k), 10); err != nil {
			t.Fatal(err)
		}
	}
	var newKey, oldKey error
	gap := func() {
		s.replaceGap.Store(nil)
		_, _, newKey = s.Visit(ctx, []byte("b"), true)
		_, _, oldKey = s.Visit(ctx, []byte("k"), true)
	}
	s.replaceGap.Store(&gap)
	if _, err := s.Add(ctx, []byte("k"), -1); err != nil {
		t.Fatal(err)
	}
	s.replaceGap.Store(nil)
	if oldKey != nil {
		t.Errorf("a visit to k during its negative Add: %v, want it counted", oldKey)
	}
	if newKey == nil {
		t.Errorf("a visit made a third key during k's negative Add, of at most two")
	}
	if n := s.Keys(); n > o.MaxKeys {
		t.Errorf("Keys() = %d after a negative Add, above MaxKeys %d", n, o.MaxKeys)
	}
}
