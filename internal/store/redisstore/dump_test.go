package redisstore

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"visitors/internal/store"
	"visitors/internal/store/storetest"
)

// TestOfflineImportIsStrict: the offline import refuses each of
// storetest.StrictDumps (a field, a key or a date given twice, a /hi
// counter above its bound), adding and replacing, naming the line, and
// changes nothing. (Before issue 23 every one was taken: a key's field
// given twice imported into the last, a key twice added up.)
func TestOfflineImportIsStrict(t *testing.T) {
	for _, where := range []string{"standalone", "cluster"} {
		t.Run(where, func(t *testing.T) {
			o := Options{Prefix: prefixOf(t.Name())}
			o = at(where, o)
			now := time.Now()
			mustImportOpts(t, o, `{"format":"visitors-export-1","hits":3,"keys":[{"key":"a","total":2}]}`, true, now)
			before := mustExportOpts(t, o, now)
			for _, d := range storetest.StrictDumps(now.UTC().Format(time.DateOnly)) {
				for _, replace := range []bool{false, true} {
					err := Import(o, strings.NewReader(d.Dump), replace, t.TempDir(), now)
					if err == nil || !strings.Contains(err.Error(), d.Want) {
						t.Errorf("%s: Import(replace=%v) = %v, want an error saying %q", d.Name, replace, err, d.Want)
					}
					if after := mustExportOpts(t, o, now); after != before {
						t.Errorf("%s: a refused import changed the store:\n%s\n%s", d.Name, before, after)
						before = after
					}
				}
			}
		})
	}
}

// mustImportOpts runs the offline Import of dump into the store of o.
func mustImportOpts(t *testing.T, o Options, dump string, replace bool, now time.Time) {
	t.Helper()
	if err := Import(o, strings.NewReader(dump), replace, t.TempDir(), now); err != nil {
		t.Fatalf("Import: %v", err)
	}
}

// mustExportOpts returns the offline Export of the store of o.
func mustExportOpts(t *testing.T, o Options, now time.Time) string {
	t.Helper()
	var w bytes.Buffer
	if err := Export(o, &w, now); err != nil {
		t.Fatalf("Export: %v", err)
	}
	return w.String()
}

// TestOfflineImportRespectsMaxKeys: the offline import into a store of
// MaxKeys 10 refuses whole a dump that would take it past 10 keys,
// adding or replacing, with ErrTooManyKeys naming the limit.
func TestOfflineImportRespectsMaxKeys(t *testing.T) {
	o := Options{URL: standalone.URL(), Prefix: prefixOf(t.Name()), MaxKeys: 10}
	now := time.Now()
	dump := func(keys ...string) string {
		var b strings.Builder
		b.WriteString(`{"format":"visitors-export-1","hits":0,"keys":[`)
		for i, k := range keys {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteString(`{"key":"` + k + `","total":1}`)
		}
		b.WriteString("]}")
		return b.String()
	}
	mustImportOpts(t, o, dump("k0", "k1", "k2", "k3"), true, now)
	tests := []struct {
		name    string
		dump    string
		replace bool
		ok      bool
	}{
		{"adding 7 new keys to 4", dump("k0", "n0", "n1", "n2", "n3", "n4", "n5", "n6"), false, false},
		{"adding 6 new keys to 4", dump("k0", "n0", "n1", "n2", "n3", "n4", "n5"), false, true},
		{"adding 1 new key to 10", dump("x"), false, false},
		{"replacing with 11 keys", dump("r0", "r1", "r2", "r3", "r4", "r5", "r6", "r7", "r8", "r9", "r10"), true, false},
		{"replacing with 10 keys", dump("r0", "r1", "r2", "r3", "r4", "r5", "r6", "r7", "r8", "r9"), true, true},
	}
	for _, tt := range tests {
		before := mustExportOpts(t, o, now)
		err := Import(o, strings.NewReader(tt.dump), tt.replace, t.TempDir(), now)
		switch {
		case tt.ok && err != nil:
			t.Errorf("%s: Import = %v, want nil", tt.name, err)
		case !tt.ok && (!errors.Is(err, store.ErrTooManyKeys) || !strings.Contains(err.Error(), "limit of 10")):
			t.Errorf("%s: Import = %v, want ErrTooManyKeys naming the limit of 10", tt.name, err)
		case !tt.ok:
			if after := mustExportOpts(t, o, now); after != before {
				t.Errorf("%s: a refused import changed the store:\n%s\n%s", tt.name, before, after)
			}
		}
	}
}

// TestApplyStopsAtTheBounds sends apply.lua rounds of 3 visits to a
// total one below store.MaxTotal and to a day one below store.MaxDay:
// each count stops at its bound, the day and the total alike, and the
// answer says 2 visits were lost; a total already past the bound takes
// nothing and keeps its value. (Before issue 23 the counts went past
// the bounds, and no later export imported.)
func TestApplyStopsAtTheBounds(t *testing.T) {
	for _, where := range []string{"standalone", "cluster"} {
		t.Run(where, func(t *testing.T) {
			st := backend(where, store.Batch).Open(t, storetest.Config{Dir: t.TempDir()}).(*Store)
			defer st.Close()
			today := store.Day(20000)
			tests := []struct {
				name       string
				total, day uint64 // before the round
				want       string // total, today, yesterday, generation, flags, lost
			}{
				{"total", store.MaxTotal - 1, 0, fmt.Sprintf("[%d 1 0 0 2 2]", uint64(store.MaxTotal))},
				{"day", 1 << 40, store.MaxDay - 1, fmt.Sprintf("[%d %d 0 0 2 2]", uint64(1<<40+1), uint64(store.MaxDay))},
				// Written past the bound before there was one: left as it is.
				{"past", store.MaxTotal + 5, 0, fmt.Sprintf("[%d 0 0 0 2 3]", uint64(store.MaxTotal+5))},
			}
			for _, tt := range tests {
				tag := st.n.tag([]byte("bound-" + tt.name))
				g := st.groupOf(tag)
				for name, v := range map[string]uint64{total(tag): tt.total, dayKey(tag, today): tt.day} {
					if err := st.c.Do(t.Context(), st.c.B().Set().Key(name).Value(fmt.Sprint(v)).Build()).Error(); err != nil {
						t.Fatal(err)
					}
				}
				sc := script{src: applySrc, sha: applySHA,
					keys: []string{st.n.seq(g, "test-"+tt.name), total(tag), dayKey(tag, today), genKey(tag), lockKey(tag), dayKey(tag, today-1)},
					args: []string{"1", "60", "9999999999", "*", "3", "1", "0", "9999999999"}}
				vals, err := st.doScripts(t.Context(), []script{sc})[0].AsIntSlice()
				if err != nil {
					t.Fatal(err)
				}
				if got := fmt.Sprint(vals); got != tt.want {
					t.Errorf("%s: a round of 3 visits one below the bound = %s, want %s", tt.name, got, tt.want)
				}
			}
		})
	}
}

// TestHealthSaysWhyHiFails: a /hi counter that Redis refuses to raise (at
// 2^63-1, as a dump of 2^64-1 imported before issue 23 left it) fails
// Hit, and Health says so until a Hit succeeds again: /healthz answers
// 503 whenever /hi does. (Before, every instance answered /hi with 503
// once its block was spent while /healthz said ok.)
func TestHealthSaysWhyHiFails(t *testing.T) {
	for _, where := range []string{"standalone", "cluster"} {
		for _, d := range []store.Durability{store.Batch, store.Sync} {
			t.Run(where+"/"+d.String(), func(t *testing.T) {
				st := backend(where, d).Open(t, storetest.Config{Dir: t.TempDir()}).(*Store)
				defer st.Close()
				set := func(v string) {
					t.Helper()
					if err := st.c.Do(t.Context(), st.c.B().Set().Key(st.n.hi).Value(v).Build()).Error(); err != nil {
						t.Fatal(err)
					}
				}
				// A counter Redis refuses to add to (a counter at its
				// bound, store.MaxHits, is ErrHiExhausted instead, which
				// the web layer reports: Dump/HiStopsAtItsBound).
				set("not a number")
				var err error
				for range st.o.HiBlock + 1 { // the block this instance holds, then Redis
					if _, err = st.Hit(t.Context()); err != nil {
						break
					}
				}
				if err == nil || errors.Is(err, store.ErrHiExhausted) {
					t.Fatalf("Hit with the /hi counter not a number = %v, want Redis's refusal", err)
				}
				if herr := st.Health(); herr == nil || !strings.Contains(herr.Error(), "/hi") {
					t.Errorf("Health() while /hi fails = %v, want an error about /hi", herr)
				}
				set("5")
				if _, err := st.Hit(t.Context()); err != nil {
					t.Fatalf("Hit after the counter was mended: %v", err)
				}
				if herr := st.Health(); herr != nil {
					t.Errorf("Health() once /hi succeeds again = %v, want nil", herr)
				}
			})
		}
	}
}
