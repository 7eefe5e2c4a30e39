package boltstore

import (
	"errors"
	"strings"
	"testing"

	"visitors/internal/store"
)

// TestOfflineImportTakesMaxKeysExactly: an offline import may take the
// store to exactly -max-keys distinct keys, counting the keys it holds
// (a merge) or only the dump's (a replace), and one key more is refused
// whole with [store.ErrTooManyKeys], the store as it was. (Mutation
// testing, issue 28: with the bound's check in [Offline.Import] negated,
// or its `held > MaxKeys` made `>=`, every test still passed.)
func TestOfflineImportTakesMaxKeysExactly(t *testing.T) {
	dumpOf := func(keys ...string) string {
		var b strings.Builder
		b.WriteString(`{"format":"visitors-export-1","hits":1,"keys":[`)
		for i, k := range keys {
			if i > 0 {
				b.WriteString(",")
			}
			b.WriteString(`{"key":"` + k + `","total":1}`)
		}
		b.WriteString("]}")
		return b.String()
	}
	dir := t.TempDir()
	off := Offline{Dir: dir, MaxKeys: 3}
	noErr(t, off.Import(strings.NewReader(dumpOf("a", "b")), false), "Import(%s) with at most %d keys", "a, b", 3)
	// a and b held, b again and c new: 3 keys, the bound.
	noErr(t, off.Import(strings.NewReader(dumpOf("b", "c")), false), "Import(%s) with at most %d keys", "b, c", 3)
	err := off.Import(strings.NewReader(dumpOf("d")), false)
	if !errors.Is(err, store.ErrTooManyKeys) {
		t.Errorf("Import(d) into a, b, c with at most 3 keys = %v, want %v", err, store.ErrTooManyKeys)
	}
	// A replace counts the dump's keys alone.
	noErr(t, off.Import(strings.NewReader(dumpOf("x", "y", "z")), true), "Import(%s, replace) with at most %d keys", "x, y, z", 3)
	err = off.Import(strings.NewReader(dumpOf("p", "q", "r", "s")), true)
	if !errors.Is(err, store.ErrTooManyKeys) {
		t.Errorf("Import -replace of 4 keys with at most 3 = %v, want %v", err, store.ErrTooManyKeys)
	}
	s := mustOpen(t, Options{Dir: dir})
	defer mustClose(t, s)
	wantKeys(t, s, 3, "after the refused imports")
	for _, k := range []string{"x", "y", "z"} {
		if c := mustGet(t, s, []byte(k)); c.Total != 1 {
			t.Errorf("%s = %+v, want a total of 1: a refused import changes nothing", k, c)
		}
	}
}
