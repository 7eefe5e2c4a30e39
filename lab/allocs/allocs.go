// Package allocs counts heap allocations exactly, for the lab's tests and
// benchmarks. testing.AllocsPerRun and the allocs/op column of go test
// -benchmem both divide integers and so round down: an average of 4.99
// shows as 4, and a handler that allocates once from its 256th call on
// shows 0 over the first 255. PerRun and Report divide as floats.
package allocs

import (
	"runtime"
	"testing"
)

// PerRun returns the average number of heap allocations of one call of
// f over runs calls, unrounded. Like testing.AllocsPerRun it calls f once
// first, to warm it up, and runs with GOMAXPROCS=1 so that other
// goroutines' allocations are less likely to be counted.
func PerRun(runs int, f func()) float64 {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	f()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for range runs {
		f()
	}
	runtime.ReadMemStats(&after)
	return float64(after.Mallocs-before.Mallocs) / float64(runs)
}

// Counter measures the allocations of a benchmark's loop, so that the
// benchmark can report them unrounded: call Start just before the loop
// and Report after it.
type Counter struct{ mallocs uint64 }

// Start records the allocations made so far.
func (c *Counter) Start() {
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	c.mallocs = m.Mallocs
}

// Report reports the allocations made since Start, divided by b.N, as
// the benchmark's allocs/op, which it replaces; go test prints it with
// its decimals.
func (c *Counter) Report(b *testing.B) {
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	if b.N > 0 {
		b.ReportMetric(float64(m.Mallocs-c.mallocs)/float64(b.N), "allocs/op")
	}
}
