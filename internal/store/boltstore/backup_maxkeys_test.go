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
// testing, issue 28: with the bound's check negated, backup.go:228:9, or
// `>=`, 228:39, every test still passed.)
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
	noErr(t, ImportLimited(dir, strings.NewReader(dumpOf("a", "b")), false, 3), "ImportLimited(%s, max %d)", "a, b", 3)
	// a and b held, b again and c new: 3 keys, the bound.
	noErr(t, ImportLimited(dir, strings.NewReader(dumpOf("b", "c")), false, 3), "ImportLimited(%s, max %d)", "b, c", 3)
	err := ImportLimited(dir, strings.NewReader(dumpOf("d")), false, 3)
	if !errors.Is(err, store.ErrTooManyKeys) {
		t.Errorf("ImportLimited(d) into a, b, c with at most 3 keys = %v, want %v", err, store.ErrTooManyKeys)
	}
	// A replace counts the dump's keys alone.
	noErr(t, ImportLimited(dir, strings.NewReader(dumpOf("x", "y", "z")), true, 3), "ImportLimited(%s, replace, max %d)", "x, y, z", 3)
	err = ImportLimited(dir, strings.NewReader(dumpOf("p", "q", "r", "s")), true, 3)
	if !errors.Is(err, store.ErrTooManyKeys) {
		t.Errorf("ImportLimited -replace of 4 keys with at most 3 = %v, want %v", err, store.ErrTooManyKeys)
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
