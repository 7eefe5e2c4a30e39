package tally

import (
	"errors"
	"slices"
	"testing"

	"visitors/internal/store"
)

// TestMapLoserOfARaceGivesItsPlaceBack: when another visit makes a new
// key between LoadOrNew's check and its store, the entry already stored
// is returned and the place LoadOrNew reserved is given back, so Len
// counts the key once and the limit does not bite early. The race is
// made deterministic: mk, which runs outside the map's lock, makes the
// key itself first.
func TestMapLoserOfARaceGivesItsPlaceBack(t *testing.T) {
	var m *Map[keyed]
	var winner *keyed
	calls := 0
	m = NewMap(2, func(k string) *keyed {
		if calls++; calls == 1 {
			winner = m.Put([]byte(k)) // the other visit, which makes the key first
		}
		return &keyed{key: k}
	}, keyedKey)
	got, err := m.LoadOrNew([]byte("k"))
	if err != nil {
		t.Fatal(err)
	}
	if got != winner {
		t.Errorf("LoadOrNew lost the race but returned its own entry, not the one stored")
	}
	if m.Len() != 1 {
		t.Fatalf("Len() = %d after one key was made by two racing calls, want 1", m.Len())
	}
	if _, err := m.LoadOrNew([]byte("other")); err != nil {
		t.Errorf("the second key of a map of 2: %v, want room for it", err)
	}
}

// TestMapDeleteFreesItsPlace: Delete removes the key from the map, its
// order and its count, so a full map takes a new key again; an entry
// that is no longer the key's is left alone.
func TestMapDeleteFreesItsPlace(t *testing.T) {
	m := NewMap(2, newKeyed, keyedKey)
	a, _ := m.LoadOrNew([]byte("a"))
	if _, err := m.LoadOrNew([]byte("b")); err != nil {
		t.Fatal(err)
	}
	if _, err := m.LoadOrNew([]byte("c")); !errors.Is(err, store.ErrTooManyKeys) {
		t.Fatalf("a third key in a map of 2: %v, want ErrTooManyKeys", err)
	}
	if m.Delete("a", new(keyed)) {
		t.Error("Delete of a with another entry than a's deleted it")
	}
	if m.Len() != 2 {
		t.Errorf("Len() = %d after a refused Delete, want 2", m.Len())
	}
	if !m.Delete("a", a) {
		t.Fatal("Delete(a, a's entry) = false")
	}
	if m.Len() != 1 || m.Load([]byte("a")) != nil {
		t.Errorf("after Delete(a): Len %d, Load(a) %v; want 1, nil", m.Len(), m.Load([]byte("a")))
	}
	if keys, _ := m.List(nil, nil, 10); !slices.Equal(keys, []string{"b"}) {
		t.Errorf("List after Delete(a) = %q, want [b]", keys)
	}
	if m.Delete("a", a) {
		t.Error("a second Delete(a) reported a deletion")
	}
	if m.Len() != 1 {
		t.Errorf("Len() = %d after a second Delete, want 1", m.Len())
	}
	if _, err := m.LoadOrNew([]byte("c")); err != nil {
		t.Errorf("a new key after a delete freed a place: %v", err)
	}
}

// TestMapList: List pages through the keys in byte order: within the
// prefix, strictly after the cursor (the empty key included when there
// is no cursor, excluded when the cursor is the empty key), at most
// limit of them, and none for a limit of 0 or less; each key comes with
// its own entry.
func TestMapList(t *testing.T) {
	m := NewMap(0, newKeyed, keyedKey)
	all := []string{"", "a", "b", "b/1", "b/2", "b/3", "c"}
	for _, k := range []string{"c", "b/2", "", "a", "b/3", "b", "b/1"} { // not in order
		m.Put([]byte(k))
	}
	tests := []struct {
		name          string
		prefix, after []byte
		limit         int
		want          []string
	}{
		{"everything", nil, nil, 100, all},
		{"the first two", nil, nil, 2, all[:2]},
		{"the first one", nil, nil, 1, all[:1]},
		{"limit 0", nil, nil, 0, nil},
		{"limit -1", nil, nil, -1, nil},
		{"after the empty key", nil, []byte{}, 100, all[1:]},
		{"after b", nil, []byte("b"), 100, []string{"b/1", "b/2", "b/3", "c"}},
		{"after b, two", nil, []byte("b"), 2, []string{"b/1", "b/2"}},
		{"after a key not held", nil, []byte("b/15"), 100, []string{"b/2", "b/3", "c"}},
		{"prefix b/", []byte("b/"), nil, 100, []string{"b/1", "b/2", "b/3"}},
		{"prefix b/, after b/1", []byte("b/"), []byte("b/1"), 100, []string{"b/2", "b/3"}},
		{"prefix b/, after a key before it", []byte("b/"), []byte("a"), 100, []string{"b/1", "b/2", "b/3"}},
		{"prefix b/, after the prefix itself", []byte("b/"), []byte("b/"), 100, []string{"b/1", "b/2", "b/3"}},
		{"prefix b/, after its last key", []byte("b/"), []byte("b/3"), 100, nil},
		{"prefix b/, after a key past it", []byte("b/"), []byte("c"), 100, nil},
		{"a prefix nothing has", []byte("z"), nil, 100, nil},
	}
	for _, tt := range tests {
		keys, entries := m.List(tt.prefix, tt.after, tt.limit)
		if !slices.Equal(keys, tt.want) {
			t.Errorf("%s: List(%q, %q, %d) = %q, want %q", tt.name, tt.prefix, tt.after, tt.limit, keys, tt.want)
			continue
		}
		for i, k := range keys {
			if entries[i] != m.Load([]byte(k)) {
				t.Errorf("%s: the entry listed with %q is not its own", tt.name, k)
			}
		}
	}
}
