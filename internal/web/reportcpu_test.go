package web

import (
	"testing"
	"time"
)

// reportCPU reports, beside ns/op, the process's CPU time per operation
// since start (a cpuTime): on a machine shared with other work, the time
// a benchmark waits for a core inflates ns/op, not cpu-ns/op, which
// benchstat then compares on its own.
func reportCPU(b *testing.B, start time.Duration) {
	if b.N > 0 && start > 0 {
		b.ReportMetric(float64(cpuTime()-start)/float64(b.N), "cpu-ns/op")
	}
}
