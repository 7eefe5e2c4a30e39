package storetest_test

import (
	"bytes"
	"context"
	"crypto/sha1"
	"encoding/hex"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"visitors/internal/store"
	"visitors/internal/store/boltstore"
	"visitors/internal/store/dump"
	"visitors/internal/store/redisstore"
	"visitors/internal/store/redisstore/redistest"
	"visitors/internal/store/storetest"
)

// offlineBackend is a backend of "visitors export" and "visitors
// import": a running store on a place (a data directory, a Redis
// prefix), and the offline store on the same place.
type offlineBackend struct {
	name    string
	open    func(t *testing.T, place string, now func() time.Time) store.Store
	offline func(t *testing.T, place string, now func() time.Time) offlineStore
}

// offlineStore is what each backend's Offline does: export or import a
// store no one has open (as app's offlineStore).
type offlineStore interface {
	Export(io.Writer) error
	Import(io.Reader, bool) error
}

// offlineKeys are the keys TestOfflineExchange counts: the hostile ones
// the web layer and the owner API let through, and keys that are
// prefixes of one another, in bytes and in the file's length-prefixed
// encoding (127 bytes has a one-byte length, 128 a two-byte one).
func offlineKeys() [][]byte {
	keys := storetest.HostileKeys() // "", "a", "a\x00", 128 × "k", ...
	for _, k := range []string{"ab", "abc", "b", "é", "éé", strings.Repeat("k", store.MaxKeyBytes-1), "😀", "😀😀"} {
		keys = append(keys, []byte(k))
	}
	return keys
}

// TestOfflineExchange moves a store through the CLI's offline export
// and import (boltstore.Offline, redisstore.Offline) between every pair
// of backends, Redis a redis-server of the test's own: the export says
// every key's total, days and lock as the visits made them; an import
// into an empty store, then another that adds, then, once a running
// store has counted on it, a third that adds to what the running store
// wrote (the embedded store's dated totals), each read back by a
// running store opened after it (a restart), and exported again.
func TestOfflineExchange(t *testing.T) {
	rs := redistest.StartTest(t)
	backends := []offlineBackend{
		{
			name: "bolt",
			open: func(t *testing.T, dir string, now func() time.Time) store.Store {
				st, err := boltstore.Open(boltstore.Options{Dir: dir, Now: now, FlushInterval: time.Hour})
				if err != nil {
					t.Fatal(err)
				}
				return st
			},
			offline: func(t *testing.T, dir string, _ func() time.Time) offlineStore {
				return boltstore.Offline{Dir: dir}
			},
		},
		{
			name: "redis",
			open: func(t *testing.T, dir string, now func() time.Time) store.Store {
				st, err := redisstore.Open(redisOptions(rs, dir, now))
				if err != nil {
					t.Fatal(err)
				}
				return st
			},
			offline: func(t *testing.T, dir string, now func() time.Time) offlineStore {
				return redisstore.Offline{Options: redisOptions(rs, dir, now), TmpDir: t.TempDir()}
			},
		},
	}
	for _, from := range backends {
		for _, to := range backends {
			t.Run(from.name+"->"+to.name, func(t *testing.T) { offlineExchange(t, from, to) })
		}
	}
}

// redisOptions are the options of a Redis store whose prefix is made
// of dir, a test's own.
func redisOptions(rs *redistest.Server, dir string, now func() time.Time) redisstore.Options {
	h := sha1.Sum([]byte(dir))
	return redisstore.Options{
		URL:           rs.URL(),
		Prefix:        "o" + hex.EncodeToString(h[:6]) + ":",
		Durability:    store.Sync,
		FlushInterval: 5 * time.Millisecond,
		Now:           now,
	}
}

// offlineDay is the day, from the anchor, that offlineExchange counts
// on (and the day before): far from the real clock's, at every anchor
// the suites run at, so that an offline store that read the real clock
// in place of its Options.Now fails.
const offlineDay = -1000

func offlineExchange(t *testing.T, from, to offlineBackend) {
	ctx := context.Background()
	clock := storetest.NewClock(storetest.At(offlineDay-1, "12:00"))
	keys := offlineKeys()
	locked := string(keys[len(keys)-1])
	// Key i has 1 + i%3 visits yesterday and 1 + i%2 today.
	type counts struct{ yesterday, today uint64 }
	want := map[string]counts{}
	src := t.TempDir()
	st := from.open(t, src, clock.Now)
	for i, k := range keys {
		for range 1 + i%3 {
			mustCount(t, st, k)
		}
	}
	clock.Add(24 * time.Hour)
	if r, ok := st.(interface{ Rollover() }); ok {
		r.Rollover()
	}
	for i, k := range keys {
		for range 1 + i%2 {
			mustCount(t, st, k)
		}
		want[string(k)] = counts{uint64(1 + i%3), uint64(1 + i%2)}
	}
	if _, err := st.Lock(ctx, []byte(locked), true); err != nil {
		t.Fatal(err)
	}
	for range 5 {
		if _, err := st.Hit(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}

	// An export says each key's counts yesterday and today, as days(key)
	// gives them, its total their sum, and the lock.
	check := func(when string, d dump.Dump, days func(string) (uint64, uint64)) {
		t.Helper()
		if len(d.Keys) != len(keys) {
			t.Errorf("%s: the export holds %d keys, want %d", when, len(d.Keys), len(keys))
		}
		got := map[string]dump.Key{}
		for _, k := range d.Keys {
			got[k.Key] = k
		}
		for _, k := range keys {
			y, n := days(string(k))
			w := dump.Key{Key: string(k), Total: y + n, Locked: string(k) == locked,
				Days: map[string]uint64{storetest.Date(offlineDay - 1): y, storetest.Date(offlineDay): n}}
			if g, ok := got[string(k)]; !ok || g.Total != w.Total || g.Locked != w.Locked || !maps.Equal(g.Days, w.Days) {
				t.Errorf("%s: %q = %+v (there: %v), want %+v", when, k, g, ok, w)
			}
		}
	}
	out := offlineExport(t, from.offline(t, src, clock.Now))
	check("the source's export", parseOffline(t, out), func(k string) (uint64, uint64) {
		return want[k].yesterday, want[k].today
	})

	// Into an empty store, then adding: a running store opened after
	// each reads what the import wrote.
	dst := t.TempDir()
	off := to.offline(t, dst, clock.Now)
	for round := uint64(1); round <= 2; round++ {
		if err := off.Import(strings.NewReader(out), false); err != nil {
			t.Fatalf("import %d: %v", round, err)
		}
		st := to.open(t, dst, clock.Now)
		checkStore(t, st, fmt.Sprintf("after import %d", round), keys, locked, func(k string) (uint64, uint64) {
			return round * want[k].yesterday, round * want[k].today
		})
		if round == 2 {
			// A running store counts on the imported keys (the locked
			// one counts nothing): the embedded store writes them back
			// as dated totals.
			for _, k := range keys {
				mustCount(t, st, k)
			}
		}
		if err := st.Close(); err != nil {
			t.Fatal(err)
		}
	}
	// The third import adds to what the running store wrote.
	if err := off.Import(strings.NewReader(out), false); err != nil {
		t.Fatalf("import 3: %v", err)
	}
	third := func(k string) (uint64, uint64) {
		visit := uint64(1)
		if k == locked {
			visit = 0
		}
		return 3 * want[k].yesterday, 3*want[k].today + visit
	}
	st = to.open(t, dst, clock.Now)
	checkStore(t, st, "after import 3", keys, locked, third)
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	again := parseOffline(t, offlineExport(t, off))
	check("the last export", again, third)
	if again.Hits < 5 {
		t.Errorf("the last export's hits = %d, want at least the source's 5", again.Hits)
	}
}

// checkStore compares each key's counts in st with days(key): its
// counts yesterday and today.
func checkStore(t *testing.T, st store.Store, when string, keys [][]byte, locked string, days func(string) (uint64, uint64)) {
	t.Helper()
	ctx := context.Background()
	if st.Keys() != len(keys) {
		t.Errorf("%s: Keys() = %d, want %d", when, st.Keys(), len(keys))
	}
	for _, k := range keys {
		y, d := days(string(k))
		c, err := st.Get(ctx, k)
		if err != nil {
			t.Fatal(err)
		}
		if w := (store.Counts{Total: y + d, Today: d, Locked: string(k) == locked}); c != w {
			t.Errorf("%s: Get(%q) = %+v, want %+v", when, k, c, w)
		}
		dl, err := st.Days(ctx, k, 3)
		if err != nil {
			t.Fatal(err)
		}
		if w := []uint64{0, y, d}; !slices.Equal(dl.Counts, w) {
			t.Errorf("%s: Days(%q, 3) = %v, want %v", when, k, dl.Counts, w)
		}
	}
}

func mustCount(t *testing.T, st store.Counter, key []byte) {
	t.Helper()
	if _, err := storetest.Incr(context.Background(), st, key); err != nil {
		t.Fatalf("Incr(%q): %v", key, err)
	}
}

func offlineExport(t *testing.T, o interface{ Export(io.Writer) error }) string {
	t.Helper()
	var b bytes.Buffer
	if err := o.Export(&b); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// parseOffline decodes an export as an import does.
func parseOffline(t *testing.T, s string) dump.Dump {
	t.Helper()
	var d dump.Dump
	hits, err := dump.Decode(strings.NewReader(s), 0, func(keys []dump.Key, _ []dump.Span) error {
		d.Keys = append(d.Keys, keys...)
		return nil
	})
	if err != nil {
		t.Fatalf("the export does not decode: %v\n%s", err, s)
	}
	d.Hits = hits
	return d
}
