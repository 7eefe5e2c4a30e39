package boltstore

import (
	"fmt"
	"testing"
	"time"

	"visitors/internal/store/storetest"
)

// BenchmarkFlush is one flusher pass that writes 1,000 changed keys, each
// visited once since the last: their totals (dated since issue 26: the
// day and its count beside the total) and today's counts, in one bbolt
// transaction, and the bookkeeping after it. The visits are part of
// each iteration.
func BenchmarkFlush(b *testing.B) {
	s := openBench(b, Options{FlushInterval: time.Hour})
	keys := make([][]byte, 1000)
	for i := range keys {
		keys[i] = fmt.Appendf(nil, "user%04d/repo", i)
	}
	b.ReportAllocs()
	for b.Loop() {
		for _, k := range keys {
			if _, err := storetest.Incr(ctx, s, k); err != nil {
				b.Fatal(err)
			}
		}
		s.flush(false)
		if err := s.Health(); err != nil {
			b.Fatal(err)
		}
	}
}
