// Package allocs counts heap allocations exactly, for the lab's tests and
// benchmarks. testing.AllocsPerRun and the allocs/op column of go test
// -benchmem both divide integers and so round down: an average of 4.99
// shows as 4, and a handler that allocates once from its 256th call on
// shows 0 over the first 255. PerRun and Exact divide as floats.
package allocs

import (
	"runtime"
	"runtime/debug"
	"testing"
)

// PerRun returns the average number of heap allocations of one call of
// f over runs calls, unrounded. Like testing.AllocsPerRun it calls f once
// first, to warm it up, and runs with GOMAXPROCS=1 so that other
// goroutines' allocations are less likely to be counted, and with the
// collector off from the warm-up to the end of the count: a collection
// empties every sync.Pool, and one that fell mid-count made a pooled
// step allocate its buffers again once (17.06 for 17 in a full run of
// the test command). What a collection costs a pool is shown apart
// (digest's TestWhyAllocsPoolRefill), with runtime.GC, which still runs.
func PerRun(runs int, f func()) float64 {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	defer debug.SetGCPercent(debug.SetGCPercent(-1))
	f()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for range runs {
		f()
	}
	runtime.ReadMemStats(&after)
	return float64(after.Mallocs-before.Mallocs) / float64(runs)
}

// Unit is the unit of the unrounded count that Exact reports.
const Unit = "exact-allocs/op"

// Exact makes benchmark b report its allocations per operation
// unrounded, as the metric Unit beside go test's allocs/op, which
// divides integers (and which a ReportMetric of "allocs/op" cannot
// replace: go test prints it as an integer).
// Call it where b.ReportAllocs would be called, just before the loop,
// and defer the function it returns:
//
//	defer allocs.Exact(b)()
//	for b.Loop() { … }
func Exact(b *testing.B) func() {
	b.ReportAllocs()
	var before runtime.MemStats
	runtime.ReadMemStats(&before)
	return func() {
		var after runtime.MemStats
		runtime.ReadMemStats(&after)
		if b.N > 0 {
			b.ReportMetric(float64(after.Mallocs-before.Mallocs)/float64(b.N), Unit)
		}
	}
}
