package boltstore

import (
	"flag"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"
)

var datasyncDir = flag.String("datasync-dir", "", "BenchmarkDatasync: the `directory` whose disk is measured (default: the test's temporary directory)")

// BenchmarkDatasync is the disk's fdatasync latency as the write-ahead
// log sees it: a record-sized write (128 bytes) at the next offset of
// a preallocated file, then fdatasync (datasync, the log's own call,
// without AIO). It reports the median and the 99th percentile of the
// write and sync together (p50-µs, p99-µs): the yardstick of a sync
// visit's latency (docs/measurements/2026-12-02-sync-latency.md). The
// parallel twin has GOMAXPROCS goroutines sync one file side by side, as
// the log's pipelined syncers do. -datasync-dir picks the disk.
func BenchmarkDatasync(b *testing.B) {
	b.Run("serial", func(b *testing.B) {
		f := mustLogFile(b)
		rec := make([]byte, 128)
		lat := make([]time.Duration, 0, 1<<16)
		var off int64
		b.ReportAllocs()
		for b.Loop() {
			t0 := time.Now()
			if _, err := f.WriteAt(rec, off%(64<<20)); err != nil {
				b.Fatal(err)
			}
			if err := datasync(f); err != nil {
				b.Fatal(err)
			}
			lat = append(lat, time.Since(t0))
			off += int64(len(rec))
		}
		reportLatency(b, lat)
	})
	b.Run("parallel", func(b *testing.B) {
		f := mustLogFile(b)
		var mu sync.Mutex // guards lat and off
		var lat []time.Duration
		var off int64
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			rec := make([]byte, 128)
			var mine []time.Duration
			for pb.Next() {
				mu.Lock()
				at := off % (64 << 20)
				off += int64(len(rec))
				mu.Unlock()
				t0 := time.Now()
				if _, err := f.WriteAt(rec, at); err != nil {
					b.Error(err)
					return
				}
				if err := datasync(f); err != nil {
					b.Error(err)
					return
				}
				mine = append(mine, time.Since(t0))
			}
			mu.Lock()
			lat = append(lat, mine...)
			mu.Unlock()
		})
		reportLatency(b, lat)
	})
}

// mustLogFile creates a 64 MiB file, written once and synced, as the
// log preallocates its own: the syncs then write data, not metadata.
func mustLogFile(b *testing.B) *os.File {
	b.Helper()
	dir := *datasyncDir
	if dir == "" {
		dir = b.TempDir()
	}
	f, err := os.CreateTemp(dir, "datasync-bench-*")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		f.Close()
		os.Remove(filepath.Join(dir, filepath.Base(f.Name())))
	})
	if _, err := f.Write(make([]byte, 64<<20)); err != nil {
		b.Fatal(err)
	}
	if err := f.Sync(); err != nil {
		b.Fatal(err)
	}
	return f
}

// reportLatency reports the median and 99th percentile of lat.
func reportLatency(b *testing.B, lat []time.Duration) {
	if len(lat) == 0 {
		return
	}
	slices.Sort(lat)
	at := func(q float64) float64 { return float64(lat[int(q*float64(len(lat)-1))].Nanoseconds()) / 1e3 }
	b.ReportMetric(at(0.50), "p50-µs")
	b.ReportMetric(at(0.99), "p99-µs")
}
