package boltstore_test

import (
	"context"
	"flag"
	"fmt"
	"net/netip"
	"os"
	"runtime"
	"runtime/pprof"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"visitors/internal/client"
	"visitors/internal/store"
	"visitors/internal/store/boltstore"
	"visitors/internal/store/storetest"
	"visitors/internal/top"
	"visitors/internal/unique"
)

// held is what the server holds for keys that were visited: the durable
// store, the unique counter on it, the per-client limiter and the top
// list, wired as internal/app wires them by default.
type held struct {
	st  *boltstore.Store
	u   *unique.Counter
	lim *client.Limiter
	top *top.Board
}

func openHeld(tb testing.TB, dir string, now func() time.Time) *held {
	tb.Helper()
	st, err := boltstore.Open(boltstore.Options{Dir: dir, Now: now, Log: zerolog.Nop()})
	if err != nil {
		tb.Fatal(err)
	}
	u, err := unique.New(unique.Options{Dir: dir, Store: st, Now: now, Log: zerolog.Nop()})
	if err != nil {
		st.Close()
		tb.Fatal(err)
	}
	h := &held{st: st, u: u,
		lim: client.NewLimiter(client.LimiterOptions{
			Visits:  client.Rate{Events: 10, Per: time.Second},
			Burst:   20,
			NewKeys: client.Rate{Events: 100, Per: time.Hour},
		}),
		top: top.New(top.Options{Store: st, Today: func() store.Day { return store.DayOf(now()) }}),
	}
	return h
}

// close writes what is left and closes the counter and the store.
func (h *held) close(tb testing.TB) {
	if err := h.u.Close(); err != nil {
		tb.Error(err)
	}
	if err := h.st.Close(); err != nil {
		tb.Error(err)
	}
}

// memKey is the i-th key of the memory measures: 16 bytes.
func memKey(buf []byte, i int) []byte { return fmt.Appendf(buf[:0], "user%06d/repo", i) }

// visit counts one visit of key by the visitor at addr, as the server's
// counting path does: the client's buckets, the store, the top list,
// the unique visitors.
func (h *held) visit(tb testing.TB, key []byte, addr netip.Addr, now time.Time) {
	allowed, _ := h.lim.Visit(addr, now, false)
	if !allowed {
		tb.Fatalf("visit of %q refused", key)
	}
	c, err := h.st.Incr(context.Background(), key)
	if err != nil {
		tb.Fatal(err)
	}
	h.top.Observe(key, c)
	h.lim.Created(addr, now)
	v := h.u.Hash(addr, "Mozilla/5.0 (X11; Linux x86_64; rv:140.0) Gecko/20100101 Firefox/140.0", now)
	h.u.Add(key, v, now)
}

var heapProfile = flag.String("heapprofile", "", "write the heap profile of each memory measure, as it is measured, to `FILE`.NKEYS.NDAYS")

// writeHeapProfile writes the heap profile as of the last collection.
func writeHeapProfile(tb testing.TB, path string) {
	f, err := os.Create(path)
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	if err := pprof.Lookup("heap").WriteTo(f, 0); err != nil {
		tb.Fatal(err)
	}
}

// heapNow returns the live heap after a full collection.
func heapNow() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// perKey fills a new store with n keys, each visited by one visitor of
// its own on each of days consecutive UTC days, writes everything as
// the flushers would, and returns the heap the keys hold, per key, less
// the key's own bytes.
func perKey(tb testing.TB, n, days int) float64 {
	tb.Helper()
	clock := storetest.NewClock(storetest.At(0, "12:00"))
	h := openHeld(tb, tb.TempDir(), clock.Now)
	defer h.close(tb)
	base := heapNow()
	var buf []byte
	var keyBytes int
	for d := range days {
		if d > 0 {
			clock.Add(24 * time.Hour)
			h.st.Rollover()
		}
		now := clock.Now()
		for i := range n {
			buf = memKey(buf, i)
			if d == 0 {
				keyBytes += len(buf)
			}
			h.visit(tb, buf, netip.AddrFrom4([4]byte{10, byte(i >> 16), byte(i >> 8), byte(i)}), now)
		}
		if err := h.st.Flush(); err != nil {
			tb.Fatal(err)
		}
		if err := h.u.Flush(); err != nil {
			tb.Fatal(err)
		}
	}
	used := heapNow() - base
	if *heapProfile != "" {
		writeHeapProfile(tb, fmt.Sprintf("%s.%dkeys.%ddays", *heapProfile, n, days))
	}
	runtime.KeepAlive(h)
	return (float64(used) - float64(keyBytes)) / float64(n)
}

// BenchmarkMemoryPerKey reports the heap held per key, less the key's
// bytes, with n keys each visited by one visitor on one day (and on 30
// days: flat over days), unique visitors on. Run with -benchtime=1x
// -memprofile for the breakdown (docs/performance.md).
func BenchmarkMemoryPerKey(b *testing.B) {
	for _, c := range []struct{ keys, days int }{{100_000, 1}, {1_000_000, 1}, {100_000, 30}} {
		b.Run(fmt.Sprintf("keys=%d/days=%d", c.keys, c.days), func(b *testing.B) {
			var per float64
			for b.Loop() {
				per = perKey(b, c.keys, c.days)
			}
			b.ReportMetric(per, "B/key")
		})
	}
}
