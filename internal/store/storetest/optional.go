package storetest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"visitors/internal/store"
	"visitors/internal/store/dump"
)

// This file is the conformance of the optional interfaces of a store:
// [store.Backup] beyond what dump.go proves, [store.Sketches] and
// [store.Uniques]. [Run] runs each part on every backend; a backend
// that does not implement an interface skips its part. [Exchange] moves
// dumps between backends.

// bigDump is a dump of n keys, each with a total of i+1 and as many
// visits on day, larger than one read or write buffer of an export.
func bigDump(n int, day string) string {
	var b strings.Builder
	enc := dump.NewEncoder(&b, uint64(n))
	for i := range n {
		enc.Encode(&dump.Key{Key: fmt.Sprintf("key/%05d", i), Total: uint64(i + 1), Days: map[string]uint64{day: uint64(i + 1)}})
	}
	enc.Close()
	return b.String()
}

// openAs opens a store for c and returns it as the optional interface T
// too, or skips t, saying why, if the store does not implement T.
func openAs[T any](t *testing.T, s suite, c Config, why string) (store.Store, T) {
	t.Helper()
	st := s.open(t, c)
	x, ok := st.(T)
	if !ok {
		mustClose(t, st)
		t.Skip(why)
	}
	return st, x
}

// cancelWriter cancels its context at its first write, and keeps what
// it was given. (It has no ReadFrom: io.Copy must call Write.)
type cancelWriter struct {
	cancel context.CancelFunc
	buf    bytes.Buffer
}

func (w *cancelWriter) Write(p []byte) (int, error) {
	w.cancel()
	return w.buf.Write(p)
}

// exportStopsWhenCanceled: an export whose context ends stops with the
// context's error before the end of the dump, and one whose context has
// ended writes nothing.
func (s suite) exportStopsWhenCanceled(t *testing.T) {
	clock := dumpClock()
	st, b := s.backup(t, Config{Dir: t.TempDir(), Now: clock.Now})
	defer mustClose(t, st)
	const n = 3000
	if err := b.Import(ctx, strings.NewReader(bigDump(n, clock.Now().Format(dump.DateLayout))), false); err != nil {
		t.Fatalf("Import of %d keys: %v", n, err)
	}
	if whole := mustExport(t, b); !strings.HasSuffix(whole, "]}\n") || strings.Count(whole, `"key":`) != n {
		t.Fatalf("the export of %d keys is not whole: %d keys, ends %q", n, strings.Count(whole, `"key":`), whole[max(0, len(whole)-20):])
	}
	c, cancel := context.WithCancel(ctx)
	w := &cancelWriter{cancel: cancel}
	err := b.Export(c, w)
	if !errors.Is(err, context.Canceled) {
		t.Errorf("Export canceled at its first write = %v, want context.Canceled", err)
	}
	if got := w.buf.String(); strings.HasSuffix(got, "]}\n") || strings.Count(got, `"key":`) == n {
		t.Errorf("Export canceled at its first write went on to the end: %d bytes, %d keys", len(got), strings.Count(got, `"key":`))
	}
	var none bytes.Buffer
	if err := b.Export(c, &none); !errors.Is(err, context.Canceled) || none.Len() != 0 {
		t.Errorf("Export with its context ended = %v, wrote %d bytes; want context.Canceled and nothing", err, none.Len())
	}
}

// cancelReader cancels its context once it has handed out after bytes.
type cancelReader struct {
	r      io.Reader
	after  int
	read   int
	cancel context.CancelFunc
}

func (r *cancelReader) Read(p []byte) (int, error) {
	n, err := r.r.Read(p[:min(len(p), 1024)])
	if r.read += n; r.read >= r.after {
		r.cancel()
	}
	return n, err
}

// importStopsWhenCanceled: an import whose context ends while it reads
// the dump fails with the context's error, not as an invalid dump, and
// changes nothing, adding or replacing.
func (s suite) importStopsWhenCanceled(t *testing.T) {
	clock := dumpClock()
	st, b := s.backup(t, Config{Dir: t.TempDir(), Now: clock.Now})
	defer mustClose(t, st)
	mustIncr(t, st, []byte("held"))
	doc := bigDump(3000, clock.Now().Format(dump.DateLayout))
	for _, replace := range []bool{false, true} {
		before := mustExport(t, b)
		c, cancel := context.WithCancel(ctx)
		err := b.Import(c, &cancelReader{r: strings.NewReader(doc), after: 4096, cancel: cancel}, replace)
		if !errors.Is(err, context.Canceled) || errors.Is(err, store.ErrInvalidDump) {
			t.Errorf("Import(replace=%v) canceled after 4 KiB = %v, want context.Canceled and not ErrInvalidDump", replace, err)
		}
		if after := mustExport(t, b); after != before {
			t.Errorf("a canceled import (replace=%v) changed the store:\n%s\n%s", replace, before, after)
		}
	}
}

// poisonedDumps are dumps that break the format's syntax or bounds, and
// what the error must say, its line first: every backend refuses them
// alike, the decoder being one.
func poisonedDumps(day string) []StrictDump {
	head := `{"format":"visitors-export-1","hits":1,"keys":[` + "\n"
	return []StrictDump{
		{"another format", `{"format":"visitors-export-2",` + "\n" + `"hits":0,"keys":[]}`, `line 1: format "visitors-export-2", want "visitors-export-1"`},
		{"no format", `{"hits":0,` + "\n" + `"keys":[]}`, `line 2: no format field: not a visitors export`},
		{"an unknown field", `{"format":"visitors-export-1",` + "\n" + `"color":1,"hits":0,"keys":[]}`, `line 2: unknown field color`},
		{"a key's unknown field", head + `{"key":"a","total":1},` + "\n" + `{"key":"b","colour":1}` + "\n]}", `line 3: unknown field "colour"`},
		{"a date that is no date", head + `{"key":"a","total":1},` + "\n" + `{"key":"b","total":1,"days":{"2025-02-29":1}}` + "\n]}", `line 3: key "b": day "2025-02-29": want YYYY-MM-DD`},
		{"a date before 1970", head + `{"key":"a","total":1,"days":{"1969-12-31":1}}` + "\n]}", `line 2: key "a": day 1969-12-31: outside 1970-01-01..9999-12-31`},
		{"days above the total", head + `{"key":"a","total":1,"days":{"` + day + `":2}}` + "\n]}", `line 2: key "a": the days add up to 2, more than the total 1`},
		{"a total past the bound", head + fmt.Sprintf(`{"key":"a","total":%d}`, uint64(store.MaxTotal)+1) + "\n]}", fmt.Sprintf(`line 2: key "a": total %d is above the most a counter holds`, uint64(store.MaxTotal)+1)},
		{"a day past the bound", head + fmt.Sprintf(`{"key":"a","total":%d,"days":{%q:%d}}`, uint64(store.MaxDay)+1, day, uint64(store.MaxDay)+1) + "\n]}", fmt.Sprintf(`line 2: key "a": day %s: count %d is above the most a day holds`, day, uint64(store.MaxDay)+1)},
		{"a negative count", head + `{"key":"a",` + "\n" + `"total":-1}` + "\n]}", `line 3: total: -1 is not a count`},
		{"a key too long", head + "\n" + `{"key":"` + strings.Repeat("k", store.MaxKeyBytes+1) + `","total":1}` + "\n]}", `line 3: key "kkkk`},
		{"not UTF-8", head + `{"key":"a","total":1},` + "\n" + "{\"key\":\"\xff\",\"total\":1}" + "\n]}", `line 3: the dump is not valid UTF-8`},
		{"a syntax error", head + `{"key":"a","total":1}` + "\n" + `{"key":"b","total":1}` + "\n]}", `line 3: `},
		{"the document cut short", head + `{"key":"a","total":1},` + "\n", `the document ends too early`},
		{"more after the end", head + `{"key":"a","total":1}` + "\n]}\n" + `{}`, `line 4: more after the end of the document`},
	}
}

// runSketches runs the part of the suite that proves what
// [store.Sketches] promises, on stores that implement it; the others
// skip it.
func (s suite) runSketches(t *testing.T) {
	t.Run("PutLoadDays", s.sketchesPutLoad)
	t.Run("DeleteDropsThemSetKeepsThem", s.sketchesDelete)
	t.Run("ReplacingImportKeepsTheDumpsKeys", s.sketchesImport)
}

// sketches opens a store for c and returns it as [store.Sketches], or
// skips t if the store is not one.
func (s suite) sketches(t *testing.T, c Config) (store.Store, store.Sketches) {
	t.Helper()
	return openAs[store.Sketches](t, s, c, "the store keeps no sketches")
}

// mustSketchDays returns key's sketches of the n days up to last, as
// strings: "<nil>" for a day without one.
func mustSketchDays(t *testing.T, sk store.Sketches, key []byte, last store.Day, n int) []string {
	t.Helper()
	days, err := sk.SketchDays(key, last, n)
	if err != nil {
		t.Fatalf("SketchDays(%q, %d, %d): %v", key, last, n, err)
	}
	if len(days) != n {
		t.Fatalf("SketchDays(%q, %d, %d) gave %d days", key, last, n, len(days))
	}
	out := make([]string, n)
	for i, d := range days {
		out[i] = "<nil>"
		if d != nil {
			out[i] = string(d)
		}
	}
	return out
}

// sketchesPutLoad puts every hostile key's sketch of a day, and one of
// an earlier day, and replaces one: LoadSketches gives the day's, each
// once, SketchDays gives a key's days oldest first with none where none
// was put, the store keeps none of the slices it was passed, and a
// durable store gives all of it back after a reopen.
func (s suite) sketchesPutLoad(t *testing.T) {
	clock := dumpClock()
	c := Config{Dir: t.TempDir(), Now: clock.Now}
	st, sk := s.sketches(t, c)
	d := store.DayOf(clock.Now())
	keys := HostileKeys()
	if got := mustSketchDays(t, sk, keys[0], d, 3); !slices.Equal(got, []string{"<nil>", "<nil>", "<nil>"}) {
		t.Errorf("SketchDays of a new store = %q, want none", got)
	}
	var put []store.Sketch
	want := map[string]string{}
	for i, k := range keys {
		data := fmt.Sprintf("sketch %d", i)
		put = append(put, store.Sketch{Key: bytes.Clone(k), Data: []byte(data)})
		want[string(k)] = data
	}
	if err := sk.PutSketches(d, put); err != nil {
		t.Fatalf("PutSketches: %v", err)
	}
	if err := sk.PutSketches(d-2, []store.Sketch{{Key: keys[1], Data: []byte("two days ago")}}); err != nil {
		t.Fatalf("PutSketches: %v", err)
	}
	again := store.Sketch{Key: bytes.Clone(keys[1]), Data: []byte("again")}
	if err := sk.PutSketches(d, []store.Sketch{again}); err != nil {
		t.Fatalf("PutSketches: %v", err)
	}
	want[string(keys[1])] = "again"
	for _, p := range append(put, again) { // the store must not keep them
		clear(p.Key)
		clear(p.Data)
	}
	check := func(when string) {
		t.Helper()
		got := map[string]string{}
		err := sk.LoadSketches(d, func(k, data []byte) error {
			if _, twice := got[string(k)]; twice {
				t.Errorf("%s: LoadSketches gave key %q twice", when, k)
			}
			got[string(k)] = string(data)
			return nil
		})
		if err != nil {
			t.Fatalf("%s: LoadSketches: %v", when, err)
		}
		if !maps.Equal(got, want) {
			t.Errorf("%s: LoadSketches = %q, want %q", when, got, want)
		}
		if got := mustSketchDays(t, sk, keys[1], d, 3); !slices.Equal(got, []string{"two days ago", "<nil>", "again"}) {
			t.Errorf("%s: SketchDays(%q) = %q, want two days ago, none, again", when, keys[1], got)
		}
		if got := mustSketchDays(t, sk, []byte("never"), d, 2); !slices.Equal(got, []string{"<nil>", "<nil>"}) {
			t.Errorf("%s: SketchDays of a key without sketches = %q, want none", when, got)
		}
	}
	check("after PutSketches")
	if s.b.Durable {
		st = s.reopen(t, st, c)
		sk = st.(store.Sketches)
		check("after a reopen")
	}
	mustClose(t, st)
}

// sketchesDelete: Delete drops a key's sketches of every day, and no
// other key's; Set keeps them (it starts the counts over, not the
// visitors).
func (s suite) sketchesDelete(t *testing.T) {
	clock := dumpClock()
	st, sk := s.sketches(t, Config{Dir: t.TempDir(), Now: clock.Now})
	defer mustClose(t, st)
	d := store.DayOf(clock.Now())
	keys := [][]byte{[]byte("a"), []byte("a\x00"), {}}
	for _, day := range []store.Day{d - 1, d} {
		var put []store.Sketch
		for _, k := range keys {
			put = append(put, store.Sketch{Key: k, Data: []byte("s" + string(k))})
		}
		if err := sk.PutSketches(day, put); err != nil {
			t.Fatalf("PutSketches: %v", err)
		}
	}
	for _, k := range keys {
		mustIncr(t, st, k)
	}
	mustSet(t, st, keys[1], 5)
	if !mustDelete(t, st, keys[0]) {
		t.Fatalf("Delete(%q) = false, want true", keys[0])
	}
	for i, k := range keys {
		w := "s" + string(k)
		want := []string{w, w}
		if i == 0 {
			want = []string{"<nil>", "<nil>"}
		}
		if got := mustSketchDays(t, sk, k, d, 2); !slices.Equal(got, want) {
			t.Errorf("after Set(%q) and Delete(%q): SketchDays(%q) = %q, want %q", keys[1], keys[0], k, got, want)
		}
	}
}

// sketchesImport: an adding import keeps every sketch; a replacing one
// keeps the sketches of the keys the dump has and drops the others'
// (a dump carries no sketches).
func (s suite) sketchesImport(t *testing.T) {
	clock := dumpClock()
	st, sk := s.sketches(t, Config{Dir: t.TempDir(), Now: clock.Now})
	defer mustClose(t, st)
	b, ok := st.(store.Backup)
	if !ok {
		t.Skip("the store does not export or import while it serves")
	}
	d := store.DayOf(clock.Now())
	for _, day := range []store.Day{d - 1, d} {
		if err := sk.PutSketches(day, []store.Sketch{{Key: []byte("a"), Data: []byte("sa")}, {Key: []byte("b"), Data: []byte("sb")}}); err != nil {
			t.Fatalf("PutSketches: %v", err)
		}
	}
	mustIncr(t, st, []byte("a"))
	mustIncr(t, st, []byte("b"))
	for _, replace := range []bool{false, true} {
		if err := b.Import(ctx, strings.NewReader(keysDump("a")), replace); err != nil {
			t.Fatalf("Import(replace=%v): %v", replace, err)
		}
		for _, k := range []string{"a", "b"} {
			want := []string{"s" + k, "s" + k}
			if replace && k == "b" {
				want = []string{"<nil>", "<nil>"}
			}
			if got := mustSketchDays(t, sk, []byte(k), d, 2); !slices.Equal(got, want) {
				t.Errorf("after an import of a alone (replace=%v): SketchDays(%q) = %q, want %q", replace, k, got, want)
			}
		}
	}
}

// runUniques runs the part of the suite that proves what
// [store.Uniques] promises, on stores that implement it; the others
// skip it. A second store opened with the same Config stands for
// another instance of the service.
func (s suite) runUniques(t *testing.T) {
	t.Run("DaySeedIsShared", s.uniquesDaySeed)
	t.Run("CountsEachVisitorOnce", s.uniquesOnce)
	t.Run("Days", s.uniquesDays)
	t.Run("DeleteDropsThemSetKeepsThem", s.uniquesDelete)
	t.Run("ReplacingImportKeepsTheDumpsKeys", s.uniquesImport)
}

// uniques opens a store for c, closed when t ends, and returns it as
// [store.Uniques], or skips t if the store is not one.
func (s suite) uniques(t *testing.T, c Config) (store.Store, store.Uniques) {
	t.Helper()
	st, u := openAs[store.Uniques](t, s, c, "the store does not keep unique visitors")
	t.Cleanup(func() { mustClose(t, st) })
	return st, u
}

// uniquesDay opens a store that keeps unique visitors on the dump
// tests' clock, closed when t ends, and returns it, its Config (to open
// another instance with) and the clock's day.
func (s suite) uniquesDay(t *testing.T) (store.Store, store.Uniques, Config, store.Day) {
	t.Helper()
	clock := dumpClock()
	c := Config{Dir: t.TempDir(), Now: clock.Now}
	st, u := s.uniques(t, c)
	return st, u, c, store.DayOf(clock.Now())
}

// visitors are the visitors the unique tests add: fixed values, so that
// the estimates of a few are exact on every run (random ones would fall
// in one register of the estimator now and then).
func visitors(n int) []uint64 {
	v := make([]uint64, n)
	for i := range v {
		v[i] = uint64(i+1) * 0x9e3779b97f4a7c15
	}
	return v
}

func mustUniqueToday(t *testing.T, u store.Uniques, key []byte, d store.Day) uint64 {
	t.Helper()
	n, err := u.UniqueToday(ctx, key, d)
	if err != nil {
		t.Fatalf("UniqueToday(%q, %d): %v", key, d, err)
	}
	return n
}

func mustUniqueDays(t *testing.T, u store.Uniques, key []byte, last store.Day, n int) []uint64 {
	t.Helper()
	got, err := u.UniqueDays(ctx, key, last, n)
	if err != nil {
		t.Fatalf("UniqueDays(%q, %d, %d): %v", key, last, n, err)
	}
	return got
}

// uniquesDaySeed: the first instance to ask makes the day's seed, not
// zero; the same instance and every other get the same; another day's
// is another.
func (s suite) uniquesDaySeed(t *testing.T) {
	_, ua, c, d := s.uniquesDay(t)
	_, ub := s.uniques(t, c)
	seed := func(u store.Uniques, d store.Day) [32]byte {
		t.Helper()
		sd, err := u.DaySeed(ctx, d)
		if err != nil {
			t.Fatalf("DaySeed(%d): %v", d, err)
		}
		return sd
	}
	first := seed(ua, d)
	if first == ([32]byte{}) {
		t.Error("the day's seed is zero")
	}
	if again, other := seed(ua, d), seed(ub, d); again != first || other != first {
		t.Errorf("the day's seed: %x, then %x, and %x on another instance; want one", first, again, other)
	}
	if next := seed(ub, d+1); next == first {
		t.Error("the next day's seed is the day's")
	}
}

// uniquesOnce adds visitors, each twice, some on two instances: each
// counts once, on the instance that has not sent them yet and, once
// sent, on every instance (after its next round, for one that has read
// the count already).
func (s suite) uniquesOnce(t *testing.T) {
	a, ua, c, d := s.uniquesDay(t)
	b, ub := s.uniques(t, c)
	key := []byte("octocat/hello")
	mustIncr(t, a, key) // a visitor comes with a visit: the key exists
	vs := visitors(6)
	for _, v := range vs[:4] {
		ua.AddUnique(key, d, v)
		ua.AddUnique(key, d, v)
	}
	if got := mustUniqueToday(t, ua, key, d); got != 4 {
		t.Errorf("4 visitors, each twice, not yet sent: %d unique, want 4", got)
	}
	flush(t, a)
	for _, v := range vs[2:] { // 2 seen on a, 2 new
		ub.AddUnique(key, d, v)
	}
	flush(t, b)
	// a answers a count it has read from memory, and reads it again with
	// its next round: then b's visitors reach it.
	mustUniqueToday(t, ua, key, d)
	flush(t, a)
	for name, u := range map[string]store.Uniques{"a": ua, "b": ub} {
		if got := mustUniqueToday(t, u, key, d); got != 6 {
			t.Errorf("on %s: 6 visitors over two instances, 2 on both: %d unique, want 6", name, got)
		}
	}
	if got := mustUniqueToday(t, ua, []byte("nobody"), d); got != 0 {
		t.Errorf("a key no one visited: %d unique, want 0", got)
	}
}

// uniquesDays: each day counts its own visitors, a visitor of two days
// on both, and UniqueDays gives them oldest first.
func (s suite) uniquesDays(t *testing.T) {
	st, u, _, d := s.uniquesDay(t)
	key := []byte("daily")
	mustIncr(t, st, key)
	vs := visitors(5)
	for _, v := range vs[:3] {
		u.AddUnique(key, d-1, v)
	}
	for _, v := range vs {
		u.AddUnique(key, d, v)
	}
	flush(t, st)
	if got, want := mustUniqueDays(t, u, key, d, 3), []uint64{0, 3, 5}; !slices.Equal(got, want) {
		t.Errorf("UniqueDays(3) = %v, want %v", got, want)
	}
	if got, want := mustUniqueDays(t, u, key, d-1, 1), []uint64{3}; !slices.Equal(got, want) {
		t.Errorf("UniqueDays(1) of the day before = %v, want %v", got, want)
	}
}

// uniquesDelete: Delete drops a key's unique visitors of every day, and
// no other key's; Set keeps them.
func (s suite) uniquesDelete(t *testing.T) {
	st, u, c, d := s.uniquesDay(t)
	gone, kept := []byte("gone"), []byte("kept")
	mustIncr(t, st, gone)
	mustIncr(t, st, kept)
	for _, day := range []store.Day{d - 1, d} {
		for _, v := range visitors(3) {
			u.AddUnique(gone, day, v)
			u.AddUnique(kept, day, v)
		}
	}
	flush(t, st)
	mustSet(t, st, kept, 9)
	if !mustDelete(t, st, gone) {
		t.Fatalf("Delete(%q) = false, want true", gone)
	}
	flush(t, st)
	_, uo := s.uniques(t, c) // reads the backend, not this instance's memory
	for _, in := range []store.Uniques{u, uo} {
		if got := mustUniqueDays(t, in, gone, d, 2); !slices.Equal(got, []uint64{0, 0}) {
			t.Errorf("after Delete: UniqueDays(%q) = %v, want [0 0]", gone, got)
		}
		if got := mustUniqueDays(t, in, kept, d, 2); !slices.Equal(got, []uint64{3, 3}) {
			t.Errorf("after Set: UniqueDays(%q) = %v, want [3 3] (Set keeps them)", kept, got)
		}
	}
}

// uniquesImport: a dump carries no unique visitors; an adding import
// keeps every key's, a replacing one those of the keys the dump has, and
// the day's seed stays.
func (s suite) uniquesImport(t *testing.T) {
	st, u, c, d := s.uniquesDay(t)
	b, ok := st.(store.Backup)
	if !ok {
		t.Skip("the store does not export or import while it serves")
	}
	seed, err := u.DaySeed(ctx, d)
	if err != nil {
		t.Fatalf("DaySeed: %v", err)
	}
	for _, k := range []string{"a", "b"} {
		mustIncr(t, st, []byte(k))
		for _, v := range visitors(4) {
			u.AddUnique([]byte(k), d, v)
		}
	}
	flush(t, st)
	if out := mustExport(t, b); strings.Contains(out, "uniq") || strings.Count(out, `"key":`) != 2 {
		t.Errorf("export = %s, want the two keys and no unique visitors", out)
	}
	for _, replace := range []bool{false, true} {
		if err := b.Import(ctx, strings.NewReader(keysDump("a")), replace); err != nil {
			t.Fatalf("Import(replace=%v): %v", replace, err)
		}
		_, uo := s.uniques(t, c)
		for k, want := range map[string]uint64{"a": 4, "b": map[bool]uint64{false: 4, true: 0}[replace]} {
			if got := mustUniqueToday(t, uo, []byte(k), d); got != want {
				t.Errorf("after an import of a alone (replace=%v): %d unique of %q, want %d", replace, got, k, want)
			}
		}
		if again, err := uo.DaySeed(ctx, d); err != nil || again != seed {
			t.Errorf("after an import (replace=%v) the day's seed changed (%v): visitors would count again", replace, err)
		}
	}
}

// Exchange proves that a dump moves between backends: each backend of
// bs that implements [store.Backup] is filled (visits over three days,
// Set, Add, Lock, the hostile keys, /hi), exported, and its dump
// imported into a new store of every other such backend, adding and
// then again, and then replacing. Each import must be taken; the
// importing store must then answer Keys, Get and Days as the exporting
// one did (twice the counts after the second adding import), hand out
// /hi numbers above the dump's, and export the same keys, counts, days
// and locks. Unique visitors and sketches are not part of a dump (see
// the Sketches and Uniques parts of [Run]). Backends are named by Name.
func Exchange(t *testing.T, bs ...Backend) {
	for _, from := range bs {
		for _, to := range bs {
			if from.Name == to.Name {
				continue
			}
			t.Run(from.Name+"->"+to.Name, func(t *testing.T) {
				exchange(t, suite{from}, suite{to})
			})
		}
	}
}

// exchangeKeys are the keys [Exchange] fills: plain ones, and hostile.
func exchangeKeys() [][]byte {
	return append([][]byte{[]byte("plain"), []byte("b/c"), []byte("locked"), []byte("set")}, HostileKeys()...)
}

func exchange(t *testing.T, from, to suite) {
	clock := dumpClock()
	src, sb := from.backup(t, Config{Dir: t.TempDir(), Now: clock.Now})
	defer mustClose(t, src)
	keys := exchangeKeys()
	for day := range 3 {
		if day > 0 {
			clock.Add(24 * time.Hour)
			roll(src)
		}
		for i, k := range keys {
			for range 1 + (i+day)%3 {
				mustIncr(t, src, k)
			}
		}
	}
	mustAdd(t, src, keys[0], 40)
	mustSet(t, src, []byte("set"), 1000)
	mustIncr(t, src, []byte("set"))
	mustLock(t, src, []byte("locked"), true)
	var hits uint64
	for range 7 {
		n, err := src.Hit(ctx)
		if err != nil {
			t.Fatalf("Hit: %v", err)
		}
		hits = n
	}
	flush(t, src)
	out := mustExport(t, sb)
	want := parseDump(t, out)
	if len(want.Keys) != len(keys) {
		t.Fatalf("the export holds %d keys, want %d", len(want.Keys), len(keys))
	}
	dst, db := to.backup(t, Config{Dir: t.TempDir(), Now: clock.Now})
	defer mustClose(t, dst)
	for round, tt := range []struct {
		replace bool
		times   uint64
	}{{false, 1}, {false, 2}, {true, 1}} {
		if err := db.Import(ctx, strings.NewReader(out), tt.replace); err != nil {
			t.Fatalf("import %d (replace=%v) of the export: %v\n%s", round+1, tt.replace, err, out)
		}
		if got := dst.Keys(); got != src.Keys() {
			t.Errorf("import %d: Keys() = %d, want %d", round+1, got, src.Keys())
		}
		for _, k := range keys {
			w := mustGet(t, src, k)
			w.Total *= tt.times
			w.Today *= tt.times
			if got := mustGet(t, dst, k); got != w {
				t.Errorf("import %d (replace=%v): Get(%q) = %+v, want %+v", round+1, tt.replace, k, got, w)
			}
			wd := mustDays(t, src, k, 4)
			for i := range wd.Counts {
				wd.Counts[i] *= tt.times
			}
			if got := mustDays(t, dst, k, 4); !got.Last.Equal(wd.Last) || !slices.Equal(got.Counts, wd.Counts) {
				t.Errorf("import %d (replace=%v): Days(%q, 4) = %v %v, want %v %v", round+1, tt.replace, k, got.Last, got.Counts, wd.Last, wd.Counts)
			}
		}
		if n, err := dst.Hit(ctx); err != nil || n <= hits {
			t.Errorf("import %d: Hit() = %d, %v; want more than the dump's %d", round+1, n, err, hits)
		}
	}
	again := parseDump(t, mustExport(t, db))
	if again.Hits <= want.Hits || !slices.EqualFunc(again.Keys, want.Keys, sameKey) {
		t.Errorf("the importing store's export differs:\n%+v\n%+v", want, again)
	}
}

// parseDump decodes a dump as every import does, its keys sorted.
func parseDump(t *testing.T, s string) dump.Dump {
	t.Helper()
	d := dump.Dump{Format: dump.Format}
	hits, err := dump.Decode(strings.NewReader(s), 0, func(keys []dump.Key, _ []dump.Span) error {
		d.Keys = append(d.Keys, keys...)
		return nil
	})
	if err != nil {
		t.Fatalf("the export does not decode: %v\n%s", err, s)
	}
	d.Hits = hits
	slices.SortFunc(d.Keys, func(a, b dump.Key) int { return strings.Compare(a.Key, b.Key) })
	return d
}

// sameKey reports whether a and b are one key's dump: days without a
// visit are as good as missing.
func sameKey(a, b dump.Key) bool {
	nonzero := func(m map[string]uint64) map[string]uint64 {
		out := map[string]uint64{}
		for d, n := range m {
			if n > 0 {
				out[d] = n
			}
		}
		return out
	}
	return a.Key == b.Key && a.Total == b.Total && a.Locked == b.Locked && maps.Equal(nonzero(a.Days), nonzero(b.Days))
}
