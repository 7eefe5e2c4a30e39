package boltstore

import (
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"visitors/internal/store"
	"visitors/internal/store/storetest"
)

// AddHistory gives every key of the closed store in dir days-1 earlier
// days of history, straight into bbolt: a count of 1 on each of the
// days-1 days before today, the key's sketch of today copied to each of
// them (if it has one), and its total raised by days-1, kept dated as
// the flusher wrote it. TestFillForStartTime -days uses it, so that
// scripts/starttime.sh can start the binary on a year of history
// without a year of visits through the store.
var AddHistory = addHistory

func addHistory(tb testing.TB, dir string, days int, today store.Day) {
	tb.Helper()
	if days <= 1 {
		return
	}
	db, err := bolt.Open(filepath.Join(dir, FileName), FileMode, &bolt.Options{NoSync: true})
	if err != nil {
		tb.Fatal(err)
	}
	defer func() {
		if err := db.Sync(); err != nil {
			tb.Error(err)
		}
		if err := db.Close(); err != nil {
			tb.Error(err)
		}
	}()
	// The keys, with their totals and sketches of today, read first.
	type held struct {
		k      []byte // the totals bucket's key
		t      total
		sketch []byte
	}
	var keys []held
	err = db.View(func(tx *bolt.Tx) error {
		uniq := tx.Bucket(bucketUniques)
		return tx.Bucket(bucketTotals).ForEach(func(k, v []byte) error {
			t, err := parseTotal(k, v)
			if err != nil {
				return err
			}
			h := held{k: append([]byte(nil), k...), t: t}
			if uniq != nil {
				key, _ := splitTotalKey(k)
				sk := sketchKey(today, key)
				if v := uniq.Get(sk); v != nil {
					data, err := readSketch(sk, v)
					if err != nil {
						return err
					}
					h.sketch = append([]byte(nil), data...)
				}
			}
			keys = append(keys, h)
			return nil
		})
	})
	if err != nil {
		tb.Fatal(err)
	}
	const batch = 20_000
	for from := 0; from < len(keys); from += batch {
		err := db.Update(func(tx *bolt.Tx) error {
			totals, dayb := tx.Bucket(bucketTotals), tx.Bucket(bucketDays)
			uniq, err := tx.CreateBucketIfNotExists(bucketUniques)
			if err != nil {
				return err
			}
			totals.FillPercent, dayb.FillPercent, uniq.FillPercent = 1, 1, 1
			// Each bucket in its own order (days: by key, then day;
			// uniques: by day, then key): bbolt splits a node only at the
			// commit, so puts out of order into one node are quadratic.
			part := keys[from:min(from+batch, len(keys))]
			for d := today - store.Day(days) + 1; d < today; d++ {
				for _, h := range part {
					if h.sketch == nil {
						continue
					}
					key, _ := splitTotalKey(h.k)
					sk := sketchKey(d, key)
					v := binary.BigEndian.AppendUint32(append(make([]byte, 0, len(h.sketch)+4), h.sketch...), sketchSum(sk, h.sketch))
					if err := uniq.Put(sk, v); err != nil {
						return err
					}
				}
			}
			for _, h := range part {
				key, _ := splitTotalKey(h.k)
				for d := today - store.Day(days) + 1; d < today; d++ {
					dk := dayKey(key, d)
					if err := dayb.Put(dk, record(tagDays, dk, 1)); err != nil {
						return err
					}
				}
				n := h.t.n + uint64(days-1)
				v := record(tagTotals, h.k, n)
				if h.t.dated {
					v = totalRecord(h.k, n, h.t.day, h.t.count)
				}
				if err := totals.Put(h.k, v); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			tb.Fatal(err)
		}
	}
}

// BenchmarkOpenHistory opens a store of 5,000 keys, each visited once a
// day on 1, 30 and 365 days up to today: the time to Open's return (the
// first answer waits for it) is that of the keys, whatever the history
// (s-to-open/op; the whole file's check runs after it, and Close
// waits for it: ns/op, which grows with the file, file-MB). A load that read the days bucket
// (as before format 3, issue 26) would take about 365 times as long on
// the last as on the first. With 1,000,000 keys, scripts/starttime.sh
// measures the real binary (TestFillForStartTime -days).
func BenchmarkOpenHistory(b *testing.B) {
	const keys = 5_000
	for _, days := range []int{1, 30, 365} {
		b.Run(fmt.Sprintf("days=%d", days), func(b *testing.B) {
			dir := b.TempDir()
			now := time.Now()
			s, err := Open(Options{Dir: dir, Now: func() time.Time { return now }})
			if err != nil {
				b.Fatal(err)
			}
			for i := range keys {
				if _, err := storetest.Incr(ctx, s, fmt.Appendf(nil, "user%06d/repo", i)); err != nil {
					b.Fatal(err)
				}
			}
			if err := s.Close(); err != nil {
				b.Fatal(err)
			}
			addHistory(b, dir, days, store.DayOf(now))
			b.ReportAllocs()
			var open time.Duration
			for b.Loop() {
				start := time.Now()
				s, err := Open(Options{Dir: dir, Now: func() time.Time { return now }})
				open += time.Since(start)
				if err != nil {
					b.Fatal(err)
				}
				if got := s.Keys(); got != keys {
					b.Fatalf("Keys() = %d after Open, want %d", got, keys)
				}
				if c, err := s.Get(ctx, []byte("user000000/repo")); err != nil || c.Total != uint64(days) || c.Today != 1 {
					b.Fatalf("Get(user000000/repo) = %+v, %v; want total %d, today 1", c, err, days)
				}
				if err := s.Close(); err != nil { // waits for the check after Open
					b.Fatal(err)
				}
			}
			b.ReportMetric(open.Seconds()/float64(b.N), "s-to-open/op")
			fi, err := os.Stat(filepath.Join(dir, FileName))
			if err != nil {
				b.Fatal(err)
			}
			b.ReportMetric(float64(fi.Size())/(1<<20), "file-MB")
		})
	}
}
