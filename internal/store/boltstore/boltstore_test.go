package boltstore

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"visitors/internal/race"
	"visitors/internal/store/storetest"
)

var ctx = context.Background()

func mustOpen(t *testing.T, o Options) *Store {
	t.Helper()
	s, err := Open(o)
	if err != nil {
		t.Fatalf("Open(%s): %v", o.Dir, err)
	}
	return s
}

func mustClose(t *testing.T, s *Store) {
	t.Helper()
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
}

func TestReopenKeepsEverything(t *testing.T) {
	for _, d := range []Durability{Batch, Sync} {
		t.Run(d.String(), func(t *testing.T) {
			dir := t.TempDir()
			s := mustOpen(t, Options{Dir: dir, Durability: d})
			var last uint64
			for range 5 {
				last, _ = s.Hit(ctx)
			}
			for _, k := range []string{"a", "b", "a", "octocat/hello-world", "a"} {
				if _, err := s.Incr(ctx, []byte(k)); err != nil {
					t.Fatal(err)
				}
			}
			mustClose(t, s)

			s = mustOpen(t, Options{Dir: dir, Durability: d})
			defer mustClose(t, s)
			if n, _ := s.Hit(ctx); n <= last {
				t.Errorf("after reopening, Hit() = %d, want more than %d", n, last)
			}
			for k, want := range map[string]uint64{"a": 3, "b": 1, "octocat/hello-world": 1, "c": 0} {
				if c, _ := s.Get(ctx, []byte(k)); c.Total != want || c.Today != want {
					t.Errorf("after reopening, Get(%s) = %+v, want total and today %d", k, c, want)
				}
			}
			if s.Keys() != 3 {
				t.Errorf("Keys() = %d, want 3", s.Keys())
			}
		})
	}
}

func TestBatchReservesHitNumbersAhead(t *testing.T) {
	dir := t.TempDir()
	s := mustOpen(t, Options{Dir: dir, FlushInterval: time.Hour}) // no timed flush
	n, _ := s.Hit(ctx)
	if n != 1 {
		t.Fatalf("first Hit() = %d, want 1", n)
	}
	// The number was handed out only after a reservation covering it
	// reached the disk: read the file as a crash would leave it.
	if r := s.reserved.Load(); r < 1 {
		t.Fatalf("reserved = %d after handing out 1", r)
	}
	s.db.View(func(tx *bolt.Tx) error {
		v, _ := u64(tx.Bucket(bucketMeta).Get(keyHits))
		if v < n {
			t.Errorf("durable reservation %d is below the number handed out, %d", v, n)
		}
		return nil
	})
	mustClose(t, s)
}

func TestDaysSurviveReopenAndMidnight(t *testing.T) {
	dir := t.TempDir()
	clock := storetest.NewClock(time.Date(2026, 11, 20, 12, 0, 0, 0, time.UTC))
	s := mustOpen(t, Options{Dir: dir, Now: clock.Now, FlushInterval: time.Hour})
	key := []byte("badge")
	for range 4 {
		s.Incr(ctx, key)
	}
	s.flush() // day 1 is on disk
	clock.Add(24 * time.Hour)
	s.mem.Rollover()
	for range 2 {
		s.Incr(ctx, key)
	}
	mustClose(t, s)

	clock.Add(24 * time.Hour)
	s = mustOpen(t, Options{Dir: dir, Now: clock.Now})
	defer mustClose(t, s)
	s.Incr(ctx, key)
	d, err := s.Days(ctx, key, 4)
	if err != nil {
		t.Fatal(err)
	}
	if want := []uint64{0, 4, 2, 1}; fmt.Sprint(d.Counts) != fmt.Sprint(want) {
		t.Errorf("Days(4) = %v, want %v", d.Counts, want)
	}
	if c, _ := s.Get(ctx, key); c.Total != 7 || c.Today != 1 {
		t.Errorf("Get = %+v, want total 7, today 1", c)
	}
}

func TestOpenRefuses(t *testing.T) {
	tests := []struct {
		name  string
		setup func(t *testing.T, dir string) string // returns the -data dir
		want  string
	}{
		{"a path under a file", func(t *testing.T, dir string) string {
			f := filepath.Join(dir, "file")
			os.WriteFile(f, []byte("x"), 0o644)
			return filepath.Join(f, "data")
		}, "create data directory"},
		{"another program's file", func(t *testing.T, dir string) string {
			os.WriteFile(filepath.Join(dir, FileName), bytes.Repeat([]byte("not a database "), 1000), 0o644)
			return dir
		}, "not a visitors data file"},
		{"another program's bbolt file", func(t *testing.T, dir string) string {
			db, err := bolt.Open(filepath.Join(dir, FileName), 0o644, nil)
			if err != nil {
				t.Fatal(err)
			}
			db.Update(func(tx *bolt.Tx) error { _, err := tx.CreateBucket([]byte("users")); return err })
			db.Close()
			return dir
		}, "not a visitors store"},
		{"corrupted meta pages", func(t *testing.T, dir string) string {
			mustFill(t, dir)
			corrupt(t, filepath.Join(dir, FileName), 0, 2*4096)
			return dir
		}, FileName},
		{"corrupted data pages", func(t *testing.T, dir string) string {
			mustFill(t, dir)
			corrupt(t, filepath.Join(dir, FileName), 2*4096, -1)
			return dir
		}, "corrupted"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := tt.setup(t, t.TempDir())
			s, err := Open(Options{Dir: dir})
			if err == nil {
				s.Close()
				t.Fatalf("Open succeeded, want an error containing %q", tt.want)
			}
			if !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), dir) {
				t.Errorf("Open error = %q, want one naming %s and containing %q", err, dir, tt.want)
			}
		})
	}
}

// mustFill writes a store with a few hundred keys into dir.
func mustFill(t *testing.T, dir string) {
	t.Helper()
	s := mustOpen(t, Options{Dir: dir})
	for i := range 500 {
		s.Incr(ctx, fmt.Appendf(nil, "key-%d", i))
	}
	mustClose(t, s)
}

// corrupt overwrites bytes [from, to) of path (to -1: the end) with a
// pattern no valid page holds.
func corrupt(t *testing.T, path string, from, to int) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if to < 0 {
		to = len(b)
	}
	for i := from; i < to; i++ {
		b[i] = byte(0xA5 ^ i)
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestSecondOpenIsRefused(t *testing.T) {
	dir := t.TempDir()
	s := mustOpen(t, Options{Dir: dir})
	defer mustClose(t, s)
	if s2, err := Open(Options{Dir: dir}); err == nil {
		s2.Close()
		t.Fatal("a second Open of the same directory succeeded")
	} else if !strings.Contains(err.Error(), "another process") {
		t.Errorf("second Open error = %q, want it to say another process has it", err)
	}
}

// TestFlushFailureKeepsCountsAndRetries closes the file under the store
// so that every write fails, then reopens it: the counts made while it
// was failing reach the disk on the retry.
func TestFlushFailureKeepsCountsAndRetries(t *testing.T) {
	dir := t.TempDir()
	s := mustOpen(t, Options{Dir: dir, FlushInterval: time.Hour})
	s.Incr(ctx, []byte("k"))
	s.flush()
	if err := s.db.Close(); err != nil { // writes now fail with bolt's ErrDatabaseNotOpen
		t.Fatal(err)
	}
	s.Incr(ctx, []byte("k"))
	s.flush()
	if err := s.Health(); err == nil || !strings.Contains(err.Error(), FileName) {
		t.Fatalf("Health() = %v after a failed flush, want an error naming the file", err)
	}
	db, err := bolt.Open(filepath.Join(dir, FileName), 0o644, nil) // the disk is back
	if err != nil {
		t.Fatal(err)
	}
	s.db = db
	s.flush()
	if err := s.Health(); err != nil {
		t.Fatalf("Health() = %v after a successful retry, want nil", err)
	}
	mustClose(t, s)
	s = mustOpen(t, Options{Dir: dir})
	defer mustClose(t, s)
	if c, _ := s.Get(ctx, []byte("k")); c.Total != 2 {
		t.Errorf("after the retry and a reopen, total = %d, want 2", c.Total)
	}
}

func TestSyncFailureIsNotAcknowledged(t *testing.T) {
	dir := t.TempDir()
	s := mustOpen(t, Options{Dir: dir, Durability: Sync, FlushInterval: time.Hour}) // no timed retries
	if _, err := s.Incr(ctx, []byte("k")); err != nil {
		t.Fatal(err)
	}
	path := s.db.Path()
	s.db.Close()
	if _, err := s.Incr(ctx, []byte("k")); err == nil {
		t.Error("Incr in sync mode succeeded while writes fail, want an error")
	}
	if _, err := s.Hit(ctx); err == nil {
		t.Error("Hit in sync mode succeeded while writes fail, want an error")
	}
	reopened, err := bolt.Open(path, 0o644, nil)
	if err != nil {
		t.Fatal(err)
	}
	s.db = reopened
	if _, err := s.Incr(ctx, []byte("k")); err != nil {
		t.Errorf("Incr after the disk came back: %v", err)
	}
	mustClose(t, s)
}

func TestExportImportRoundTrip(t *testing.T) {
	src := t.TempDir()
	clock := storetest.NewClock(time.Date(2026, 11, 20, 12, 0, 0, 0, time.UTC))
	s := mustOpen(t, Options{Dir: src, Now: clock.Now, FlushInterval: time.Hour})
	for range 7 {
		s.Hit(ctx)
	}
	for _, k := range []string{"a", "b", "a", "weird \x00 \"key\" ü"} {
		s.Incr(ctx, []byte(k))
	}
	s.flush()
	clock.Add(24 * time.Hour)
	s.mem.Rollover()
	s.Incr(ctx, []byte("a"))
	mustClose(t, s)

	var first bytes.Buffer
	if err := Export(src, &first); err != nil {
		t.Fatal(err)
	}
	dst := t.TempDir()
	if err := Import(dst, bytes.NewReader(first.Bytes()), false); err != nil {
		t.Fatal(err)
	}
	var second bytes.Buffer
	if err := Export(dst, &second); err != nil {
		t.Fatal(err)
	}
	if first.String() != second.String() {
		t.Errorf("export → import → export changed the data:\n%s\nthen\n%s", first.String(), second.String())
	}
	for _, want := range []string{`"key":"a","total":3,"days":{"2026-11-20":2,"2026-11-21":1}`, `"key":"b","total":1`} {
		if !strings.Contains(first.String(), want) {
			t.Errorf("export lacks %s:\n%s", want, first.String())
		}
	}

	// Merging adds; replacing replaces.
	if err := Import(dst, bytes.NewReader(first.Bytes()), false); err != nil {
		t.Fatal(err)
	}
	var merged bytes.Buffer
	Export(dst, &merged)
	if !strings.Contains(merged.String(), `"key":"a","total":6,"days":{"2026-11-20":4,"2026-11-21":2}`) {
		t.Errorf("merge import did not add:\n%s", merged.String())
	}
	if err := Import(dst, strings.NewReader(`{"format":"visitors-export-1","hits":100,"keys":[{"key":"z","total":5}]}`), true); err != nil {
		t.Fatal(err)
	}
	var replaced bytes.Buffer
	Export(dst, &replaced)
	if want := "{\"format\":\"visitors-export-1\",\"hits\":100,\"keys\":[\n{\"key\":\"z\",\"total\":5}\n]}\n"; replaced.String() != want {
		t.Errorf("after a replacing import, export = %q, want %q", replaced.String(), want)
	}
}

func TestImportRejectsBadDumps(t *testing.T) {
	tests := []struct{ name, dump, want string }{
		{"not json", "hello", "read the dump"},
		{"wrong format", `{"format":"other","hits":1,"keys":[]}`, "format"},
		{"bad date", `{"format":"visitors-export-1","hits":1,"keys":[{"key":"a","total":1,"days":{"yesterday":1}}]}`, "YYYY-MM-DD"},
		{"unknown field", `{"format":"visitors-export-1","hits":1,"keys":[],"extra":1}`, "unknown field"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			err := Import(dir, strings.NewReader(tt.dump), false)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Import(%s) = %v, want an error containing %q", tt.dump, err, tt.want)
			}
		})
	}
}

func TestExportRefusesARunningStore(t *testing.T) {
	dir := t.TempDir()
	s := mustOpen(t, Options{Dir: dir})
	defer mustClose(t, s)
	if err := Export(dir, new(bytes.Buffer)); err == nil || !strings.Contains(err.Error(), "stop visitors first") {
		t.Errorf("Export of an open store = %v, want an error saying to stop visitors", err)
	}
}

func TestConcurrentSyncVisitsAreAllCounted(t *testing.T) {
	dir := t.TempDir()
	s := mustOpen(t, Options{Dir: dir, Durability: Sync})
	var wg sync.WaitGroup
	for g := range 32 {
		wg.Go(func() {
			for range 20 {
				if _, err := s.Incr(ctx, fmt.Appendf(nil, "k%d", g%4)); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	mustClose(t, s)
	s = mustOpen(t, Options{Dir: dir})
	defer mustClose(t, s)
	for i := range 4 {
		if c, _ := s.Get(ctx, fmt.Appendf(nil, "k%d", i)); c.Total != 160 {
			t.Errorf("k%d total = %d, want 160", i, c.Total)
		}
	}
}

// TestBatchHotPathAllocatesNothing: in batch mode a visit to a known key,
// and a /hi number inside the reservation, touch only memory.
func TestBatchHotPathAllocatesNothing(t *testing.T) {
	if race.Enabled {
		t.Skip("allocation budgets are checked without -race")
	}
	s := mustOpen(t, Options{Dir: t.TempDir()})
	defer mustClose(t, s)
	key := []byte("gopher")
	s.Incr(ctx, key)
	s.Hit(ctx) // makes the first reservation durable
	if got := testing.AllocsPerRun(500, func() { s.Incr(ctx, key) }); got != 0 {
		t.Errorf("batch Incr allocs = %v, want 0", got)
	}
	if got := testing.AllocsPerRun(200, func() { s.Hit(ctx) }); got != 0 {
		t.Errorf("batch Hit allocs = %v, want 0", got)
	}
}

func BenchmarkIncr(b *testing.B) {
	for _, d := range []Durability{Batch, Sync} {
		b.Run("durability="+d.String(), func(b *testing.B) {
			s, err := Open(Options{Dir: b.TempDir(), Durability: d})
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			key := []byte("gopher")
			b.ReportAllocs()
			for b.Loop() {
				s.Incr(ctx, key)
			}
		})
	}
}

// BenchmarkIncrParallel is group commit at work in sync mode: every
// goroutine waits for its own visit to be on disk, and they share commits.
func BenchmarkIncrParallel(b *testing.B) {
	for _, d := range []Durability{Batch, Sync} {
		b.Run("durability="+d.String(), func(b *testing.B) {
			s, err := Open(Options{Dir: b.TempDir(), Durability: d})
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			b.ReportAllocs()
			b.SetParallelism(32) // 64 waiters on 2 cores, like 64 connections
			b.RunParallel(func(pb *testing.PB) {
				key := []byte("gopher")
				for pb.Next() {
					s.Incr(ctx, key)
				}
			})
		})
	}
}
