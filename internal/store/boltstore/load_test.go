package boltstore

import (
	"flag"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"visitors/internal/store"
	"visitors/internal/store/storetest"
)

// TestLoadKeepsEveryKeyInByteOrder: keys of many lengths (the file sorts
// them by length first, List by bytes) come back from a reopen with their
// counts, listed in byte order; a loaded key counts on, is deleted and
// made again, and a new key joins the order, across two more reopens.
func TestLoadKeepsEveryKeyInByteOrder(t *testing.T) {
	dir := t.TempDir()
	s := mustOpen(t, Options{Dir: dir, Durability: store.Batch})
	want := map[string]uint64{}
	for i := range 300 {
		k := fmt.Sprintf("%s/%d", string(rune('a'+i%7)), i*7919%1000) // lengths 3 to 5
		if i%3 == 0 {
			k += "/x"
		}
		for range 1 + i%4 {
			if _, err := storetest.Incr(ctx, s, []byte(k)); err != nil {
				t.Fatal(err)
			}
			want[k]++
		}
	}
	check := func(when string) {
		t.Helper()
		es, err := s.List(ctx, nil, nil, store.MaxList)
		if err != nil {
			t.Fatal(err)
		}
		var keys []string
		for _, e := range es {
			keys = append(keys, string(e.Key))
			if e.Counts.Total != want[string(e.Key)] || e.Counts.Today != want[string(e.Key)] {
				t.Errorf("%s: %q counts %+v, want total and today %d", when, e.Key, e.Counts, want[string(e.Key)])
			}
		}
		if sorted := slices.Sorted(func(yield func(string) bool) {
			for k := range want {
				if !yield(k) {
					return
				}
			}
		}); !slices.Equal(keys, sorted) {
			t.Errorf("%s: List gave %d keys %q..., want the %d held in byte order", when, len(keys), keys[:min(5, len(keys))], len(sorted))
		}
		wantKeys(t, s, len(want), when)
	}
	check("before a reopen")
	s = reopen(t, s, Options{Dir: dir, Durability: store.Batch})
	check("after a reopen")
	if c, err := storetest.Incr(ctx, s, []byte("a/0/x")); err != nil || c.Total != want["a/0/x"]+1 {
		t.Fatalf("Incr(a/0/x) after a reopen = %+v, %v; want total %d", c, err, want["a/0/x"]+1)
	}
	want["a/0/x"]++
	if ok, err := s.Delete(ctx, []byte("b/919")); err != nil || !ok {
		t.Fatalf("Delete(b/919) = %v, %v; want the key deleted", ok, err)
	}
	delete(want, "b/919")
	for _, k := range []string{"a/0/new", "0", "b/919"} { // new, and made again
		if _, err := storetest.Incr(ctx, s, []byte(k)); err != nil {
			t.Fatal(err)
		}
		want[k]++
	}
	check("after visits to loaded and new keys")
	s = reopen(t, s, Options{Dir: dir, Durability: store.Batch})
	defer mustClose(t, s)
	check("after a second reopen")
}

// BenchmarkIncrNewKeys is a visit to a key never seen: the entry made,
// put in the table and in the keys' order (and, now and then, the
// order's B-tree merged into its sorted slice).
func BenchmarkIncrNewKeys(b *testing.B) {
	s := openBench(b, Options{})
	b.ReportAllocs()
	key := []byte("user/")
	i := 0
	for b.Loop() {
		i++
		if _, err := storetest.Incr(ctx, s, strconv.AppendInt(key[:5], int64(i), 10)); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkIncrNewKeysParallel is BenchmarkIncrNewKeys from many
// goroutines: new keys contend for the map's writers' lock.
func BenchmarkIncrNewKeysParallel(b *testing.B) {
	s := openBench(b, Options{})
	b.ReportAllocs()
	var next atomic.Int64
	b.RunParallel(func(pb *testing.PB) {
		key := []byte("user/")
		for pb.Next() {
			if _, err := storetest.Incr(ctx, s, strconv.AppendInt(key[:5], next.Add(1), 10)); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

// TestLoadAllocatesNothingPerKey: opening a store of 20,000 keys makes
// no allocation a key (the entries are one slice, their keys' bytes a
// few blocks, a record's checksum none): the whole open and close stays
// far below one allocation a key (2,536 at a million keys, BenchmarkOpen).
func TestLoadAllocatesNothingPerKey(t *testing.T) {
	const keys = 20_000
	dir := t.TempDir()
	s := mustOpen(t, Options{Dir: dir})
	for i := range keys {
		if _, err := storetest.Incr(ctx, s, fmt.Appendf(nil, "user%06d/repo", i)); err != nil {
			t.Fatal(err)
		}
	}
	mustClose(t, s)
	allocs := testing.AllocsPerRun(3, func() {
		s := mustOpen(t, Options{Dir: dir})
		if s.Keys() != keys {
			t.Fatalf("Keys() = %d after a reopen, want %d", s.Keys(), keys)
		}
		mustClose(t, s)
	})
	if allocs > keys/10 {
		t.Errorf("an open and close of %d keys made %.0f allocations, want at most %d", keys, allocs, keys/10)
	} else {
		t.Logf("an open and close of %d keys: %.0f allocations", keys, allocs)
	}
}

var fillHistory = flag.String("fillhistory", "", "TestFillHistory: write 1,000,000 keys, each visited once a day on the 30 days up to today by the real clock, to the data `directory` (no sketches), for BenchmarkOpen -fill")

// TestFillHistory writes, straight into bbolt, a store of a million keys
// of 16 bytes with 30 days of counts each: what a year-old store's open
// costs, scaled down (BenchmarkOpen -fill DIR, docs/performance.md). It
// runs only with -fillhistory.
func TestFillHistory(t *testing.T) {
	if *fillHistory == "" {
		t.Skip("only with -fillhistory DIR")
	}
	const keys, days = 1_000_000, 30
	mustClose(t, mustOpen(t, Options{Dir: *fillHistory}))
	db, err := bolt.Open(filepath.Join(*fillHistory, FileName), FileMode, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	today := store.DayOf(time.Now())
	key := func(i int) []byte { return fmt.Appendf(nil, "user%06d/repo", i) }
	const batch = 20_000
	for from := 0; from < keys; from += batch {
		err := db.Update(func(tx *bolt.Tx) error {
			totals, dayb := tx.Bucket(bucketTotals), tx.Bucket(bucketDays)
			totals.FillPercent, dayb.FillPercent = 1, 1
			for i := from; i < from+batch; i++ {
				k := keyPrefix(key(i))
				if err := totals.Put(k, totalRecord(k, days, today, 1)); err != nil { // dated, as the flusher writes it
					return err
				}
				for d := today - days + 1; d <= today; d++ {
					dk := dayKey(key(i), d)
					if err := dayb.Put(dk, record(tagDays, dk, 1)); err != nil {
						return err
					}
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
}
