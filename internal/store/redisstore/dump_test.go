package redisstore

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"visitors/internal/store"
	"visitors/internal/store/dump"
	"visitors/internal/store/storetest"
)

// TestOfflineImportIsStrict: the offline import refuses each of
// storetest.StrictDumps (a field, a key or a date given twice, a /hi
// counter above its bound), adding and replacing, naming the line, and
// changes nothing. (Before issue 23 every one was taken: a key's field
// given twice imported into the last, a key twice added up.)
func TestOfflineImportIsStrict(t *testing.T) {
	storetest.NoDate(t)
	for _, where := range []string{"standalone", "cluster"} {
		t.Run(where, func(t *testing.T) {
			o := Options{Prefix: prefixOf(t.Name())}
			o = at(where, o)
			now := time.Now()
			o.Now = func() time.Time { return now }
			mustImportOpts(t, o, `{"format":"visitors-export-1","hits":3,"keys":[{"key":"a","total":2}]}`, true)
			before := mustExportOpts(t, o)
			for _, d := range storetest.StrictDumps(now.UTC().Format(time.DateOnly)) {
				for _, replace := range []bool{false, true} {
					err := Offline{Options: o, TmpDir: t.TempDir()}.Import(strings.NewReader(d.Dump), replace)
					if err == nil || !strings.Contains(err.Error(), d.Want) {
						t.Errorf("%s: Import(replace=%v) = %v, want an error saying %q", d.Name, replace, err, d.Want)
					}
					if after := mustExportOpts(t, o); after != before {
						t.Errorf("%s: a refused import changed the store:\n%s\n%s", d.Name, before, after)
						before = after
					}
				}
			}
		})
	}
}

// mustImportOpts runs the offline Import of dump into the store of o.
func mustImportOpts(t *testing.T, o Options, dump string, replace bool) {
	t.Helper()
	if err := (Offline{Options: o, TmpDir: t.TempDir()}).Import(strings.NewReader(dump), replace); err != nil {
		t.Fatalf("Import: %v", err)
	}
}

// mustExportOpts returns the offline Export of the store of o.
func mustExportOpts(t *testing.T, o Options) string {
	t.Helper()
	var w bytes.Buffer
	if err := (Offline{Options: o}).Export(&w); err != nil {
		t.Fatalf("Export: %v", err)
	}
	return w.String()
}

// TestOfflineImportRespectsMaxKeys: the offline import into a store of
// MaxKeys 10 refuses whole a dump that would take it past 10 keys,
// adding or replacing, with ErrTooManyKeys naming the limit.
func TestOfflineImportRespectsMaxKeys(t *testing.T) {
	now := time.Now()
	o := Options{URL: standalone.URL(), Prefix: prefixOf(t.Name()), MaxKeys: 10, Now: func() time.Time { return now }}
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
	mustImportOpts(t, o, dump("k0", "k1", "k2", "k3"), true)
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
		before := mustExportOpts(t, o)
		err := Offline{Options: o, TmpDir: t.TempDir()}.Import(strings.NewReader(tt.dump), tt.replace)
		switch {
		case tt.ok && err != nil:
			t.Errorf("%s: Import = %v, want nil", tt.name, err)
		case !tt.ok && (!errors.Is(err, store.ErrTooManyKeys) || !strings.Contains(err.Error(), "limit of 10")):
			t.Errorf("%s: Import = %v, want ErrTooManyKeys naming the limit of 10", tt.name, err)
		case !tt.ok:
			if after := mustExportOpts(t, o); after != before {
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

// TestImportReplaceSparesLongerPrefix: -redis-prefix exists
// "so several services can share one Redis", but `import -replace`
// deletes every name matching prefix+"*", so replacing the store under
// "P" also wipes a service running under "Pstaging:" (its counts, its
// set of keys, its flush sequence keys). Only the /hi counter of P is
// spared; the other service's {hi} goes too, so its /hi numbers restart
// at 1 and repeat.
// Suggested fix: the names of one store are exactly prefix+"{"...; scan
// with MATCH escape(prefix)+"{*" (and escape '\\' too), and keep the
// other store's names untouched.
// Found by review (was TestReviewRedisImportReplaceSparesLongerPrefix).
func TestImportReplaceSparesLongerPrefix(t *testing.T) {
	base := prefixOf(t.TempDir())
	other := base + "staging:"
	st, err := Open(Options{URL: standalone.URL(), Prefix: other, Durability: store.Sync})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := storetest.Incr(t.Context(), st, []byte("theirs")); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Hit(t.Context()); err != nil {
		t.Fatal(err)
	}
	st.Close()

	var dump bytes.Buffer
	if err := (Offline{Options: Options{URL: standalone.URL(), Prefix: base}}).Export(&dump); err != nil {
		t.Fatal(err)
	}
	if err := (Offline{Options: Options{URL: standalone.URL(), Prefix: base}, TmpDir: t.TempDir()}).Import(&dump, true); err != nil {
		t.Fatal(err)
	}

	st, err = Open(Options{URL: standalone.URL(), Prefix: other, Durability: store.Sync})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	c, err := st.Get(t.Context(), []byte("theirs"))
	if err != nil {
		t.Fatal(err)
	}
	if c.Total != 1 || st.Keys() != 1 {
		t.Errorf("after import -replace under %q, the store under %q holds total %d and %d keys, want 1 and 1: another service's counts were deleted", base, other, c.Total, st.Keys())
	}
	if n, err := st.Hit(t.Context()); err != nil || n != 2 {
		t.Errorf("its next /hi = %d, %v, want 2: its /hi counter was deleted, so numbers repeat", n, err)
	}
}

// Export and import tests found by mutation testing (issue 16): each
// states the promise a surviving mutant broke unseen.

// mustParseDump decodes an export, failing the test if it is not one.
func mustParseDump(t *testing.T, b []byte) dump.Dump {
	t.Helper()
	var d dump.Dump
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatalf("export is not JSON: %v\n%s", err, b)
	}
	return d
}

// TestOfflineBackupDefaultPrefixAndDays: the offline Export and Import
// with no prefix work on the store under DefaultPrefix, the one Open
// uses then; an import writes the days Redis keeps (the last DayTTL,
// today and the 399 days before it) and leaves out older ones, whose
// visits stay in the total; an export gives those days back under their
// dates, with the lock and the /hi counter.
func TestOfflineBackupDefaultPrefixAndDays(t *testing.T) {
	now := time.Now().UTC()
	today := store.DayOf(now)
	date := func(d store.Day) string { return d.Time().Format(time.DateOnly) }
	window := store.Day(DayTTL / 86400)
	in := dump.Dump{Format: dump.Format, Hits: 77, Keys: []dump.Key{
		{Key: "a", Total: 20, Locked: true, Days: map[string]uint64{
			date(today): 3, date(today - 1): 2, date(today - window + 1): 1, date(today - window): 4,
		}},
		{Key: "b", Total: 1, Days: map[string]uint64{date(today): 1}},
	}}
	b, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	// replace: the test may run again on the same server.
	off := Offline{Options: Options{URL: standalone.URL(), Now: func() time.Time { return now }}, TmpDir: t.TempDir()}
	if err := off.Import(bytes.NewReader(b), true); err != nil {
		t.Fatal(err)
	}

	st, err := Open(Options{URL: standalone.URL(), Prefix: DefaultPrefix, Durability: store.Sync})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	m := musts{t}
	if got := m.c(st.Get(t.Context(), []byte("a"))); got != (store.Counts{Total: 20, Today: 3, Locked: true}) {
		t.Errorf("Get(a) under %q after an import with no prefix = %+v, want total 20, today 3, locked", DefaultPrefix, got)
	}
	if n := m.n(st.Hit(t.Context())); n != 78 {
		t.Errorf("Hit after importing hits 77 = %d, want 78", n)
	}

	var out bytes.Buffer
	if err := off.Export(&out); err != nil {
		t.Fatal(err)
	}
	got := mustParseDump(t, out.Bytes())
	want := dump.Dump{Format: dump.Format, Hits: 78, Keys: []dump.Key{
		{Key: "a", Total: 20, Locked: true, Days: map[string]uint64{
			date(today): 3, date(today - 1): 2, date(today - window + 1): 1,
		}},
		{Key: "b", Total: 1, Days: map[string]uint64{date(today): 1}},
	}}
	gj, _ := json.Marshal(got)
	wj, _ := json.Marshal(want)
	if !bytes.Equal(gj, wj) {
		t.Errorf("Export with no prefix =\n%s\nwant\n%s", gj, wj)
	}
}

// TestExportEveryPage: an export lists keys 200 at a time; every key is
// in it once, in byte order, when they fill pages exactly (400) or not
// (401), online and offline.
func TestExportEveryPage(t *testing.T) {
	storetest.NoDate(t)
	for _, n := range []int{400, 401} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			prefix := prefixOf(t.TempDir())
			var doc strings.Builder
			fmt.Fprintf(&doc, `{"format":%q,"hits":0,"keys":[`, dump.Format)
			var want []string
			for i := range n {
				k := fmt.Sprintf("k%04d", i)
				want = append(want, k)
				if i > 0 {
					doc.WriteString(",")
				}
				fmt.Fprintf(&doc, `{"key":%q,"total":%d}`, k, i+1)
			}
			doc.WriteString("]}")
			if err := (Offline{Options: Options{URL: standalone.URL(), Prefix: prefix}, TmpDir: t.TempDir()}).Import(strings.NewReader(doc.String()), false); err != nil {
				t.Fatal(err)
			}
			check := func(how string, b []byte) {
				t.Helper()
				d := mustParseDump(t, b)
				var got []string
				for i, kd := range d.Keys {
					got = append(got, kd.Key)
					if kd.Key == fmt.Sprintf("k%04d", i) && kd.Total != uint64(i+1) {
						t.Errorf("%s: key %q total %d, want %d", how, kd.Key, kd.Total, i+1)
					}
				}
				if !slices.Equal(got, want) {
					t.Errorf("%s of %d keys gave %d keys (first %v, last %v), want each once in byte order", how, n, len(got), got[:min(2, len(got))], got[max(0, len(got)-2):])
				}
			}
			var off bytes.Buffer
			if err := (Offline{Options: Options{URL: standalone.URL(), Prefix: prefix}}).Export(&off); err != nil {
				t.Fatal(err)
			}
			check("offline Export", off.Bytes())
			st := instance(t, "standalone", prefix, store.Batch)
			var on bytes.Buffer
			if err := st.Export(t.Context(), &on); err != nil {
				t.Fatal(err)
			}
			check("online Export", on.Bytes())
		})
	}
}

// mustImport runs the offline Import of dump under prefix.
func mustImport(t *testing.T, prefix, dump string, replace bool) {
	t.Helper()
	if err := (Offline{Options: Options{URL: standalone.URL(), Prefix: prefix}, TmpDir: t.TempDir()}).Import(strings.NewReader(dump), replace); err != nil {
		t.Fatal(err)
	}
}

// dumpOf is a dump of n keys "k0000"... with totals 1, 2, ... and hits.
func dumpOf(n int, hits uint64) string {
	var b strings.Builder
	fmt.Fprintf(&b, `{"format":%q,"hits":%d,"keys":[`, dump.Format, hits)
	for i := range n {
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, `{"key":"k%04d","total":%d}`, i, i+1)
	}
	b.WriteString("]}")
	return b.String()
}

// TestOfflineImportReplaceAndMerge: the offline import adds to what is
// there, or, replacing, deletes every key of the store first, however
// many SCAN pages they span on a Redis shared with other data.
func TestOfflineImportReplaceAndMerge(t *testing.T) {
	prefix := prefixOf(t.TempDir())
	mustImport(t, prefix, dumpOf(3000, 5), false)
	mustImport(t, prefix, `{"format":"visitors-export-1","hits":1,"keys":[{"key":"k0001","total":10},{"key":"new","total":1}]}`, false)
	st := instance(t, "standalone", prefix, store.Sync)
	m := musts{t}
	if got := m.c(st.Get(t.Context(), []byte("k0001"))); got.Total != 12 {
		t.Errorf("after adding a dump, k0001 total %d, want 2+10", got.Total)
	}
	if got := len(m.l(st.List(t.Context(), []byte("k"), nil, store.MaxList))); got != store.MaxList {
		t.Errorf("after adding a dump, List of k... = %d keys, want %d", got, store.MaxList)
	}

	mustImport(t, prefix, `{"format":"visitors-export-1","hits":2,"keys":[{"key":"only","total":7}]}`, true)
	if es := m.l(st.List(t.Context(), nil, nil, store.MaxList)); len(es) != 1 || string(es[0].Key) != "only" || es[0].Total != 7 {
		t.Errorf("List after replacing 3001 keys with one = %d entries (%v...), want only \"only\", total 7", len(es), es[:min(3, len(es))])
	}
	for _, k := range []string{"k0000", "k1500", "k2999", "new"} {
		if got := m.c(st.Get(t.Context(), []byte(k))); got.Total != 0 {
			t.Errorf("after import -replace, %s total %d, want 0 (deleted)", k, got.Total)
		}
	}
	if n := m.n(st.Hit(t.Context())); n != 6 {
		t.Errorf("Hit after replacing (hits 5, then a dump of 2) = %d, want 6: the larger counter stays", n)
	}
}

// TestOnlineBackupInBatchSendsPendingVisits: in Batch, an online export
// first sends the visits this instance counted, so the dump has them;
// and after an online import this instance shows the dump's counts at
// once, without waiting for its next round.
func TestOnlineBackupInBatchSendsPendingVisits(t *testing.T) {
	prefix := prefixOf(t.TempDir())
	st := instance(t, "standalone", prefix, store.Batch) // rounds only when told
	m := musts{t}
	m.c(storetest.Incr(t.Context(), st, []byte("a")))
	m.c(storetest.Incr(t.Context(), st, []byte("a")))
	var b bytes.Buffer
	if err := st.Export(t.Context(), &b); err != nil {
		t.Fatal(err)
	}
	if d := mustParseDump(t, b.Bytes()); len(d.Keys) != 1 || d.Keys[0].Key != "a" || d.Keys[0].Total != 2 {
		t.Errorf("online export after two pending visits to a = %s, want a with total 2", b.String())
	}
	dump := `{"format":"visitors-export-1","hits":0,"keys":[{"key":"a","total":5}]}`
	if err := st.Import(t.Context(), strings.NewReader(dump), false); err != nil {
		t.Fatal(err)
	}
	if got := m.c(st.Get(t.Context(), []byte("a"))); got.Total != 7 {
		t.Errorf("Get(a) right after adding a dump with total 5 to 2 = %+v, want total 7", got)
	}
}

// TestImportSpoolFailureIsNotABadDump: a dump that cannot be spooled (the
// disk is full) is refused as the store's failure, not as a bad dump
// (store.ErrInvalidDump, which the API answers 400), and changes
// nothing; offline and online.
func TestImportSpoolFailureIsNotABadDump(t *testing.T) {
	storetest.NoDate(t)
	if !storetest.OwnProcess(t) {
		return
	}
	prefix := prefixOf(t.TempDir())
	st := instance(t, "standalone", prefix, store.Sync)
	m := musts{t}
	m.c(storetest.Incr(t.Context(), st, []byte("kept")))
	dump := dumpOf(5000, 9) // about 150 KB
	var offline, online error
	storetest.WithFileSizeLimit(t, 64<<10, func() {
		offline = Offline{Options: Options{URL: standalone.URL(), Prefix: prefix}, TmpDir: t.TempDir()}.Import(strings.NewReader(dump), true)
		online = st.Import(t.Context(), strings.NewReader(dump), true)
	})
	for _, tt := range []struct {
		name string
		err  error
	}{{"offline", offline}, {"online", online}} {
		if tt.err == nil || errors.Is(tt.err, store.ErrInvalidDump) || !strings.Contains(tt.err.Error(), "spool") {
			t.Errorf("%s Import with a full disk = %v, want a spool error that is not ErrInvalidDump", tt.name, tt.err)
		}
	}
	if es := m.l(st.List(t.Context(), nil, nil, store.MaxList)); len(es) != 1 || string(es[0].Key) != "kept" || es[0].Total != 1 {
		t.Errorf("List after refused imports = %v, want only kept, total 1", es)
	}
}
