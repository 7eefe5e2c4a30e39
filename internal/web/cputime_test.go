package web

import (
	"syscall"
	"testing"
	"time"
)

// cpuTime returns the CPU time this process has spent, user and system,
// every thread: what the garbage collector and the background goroutines
// spend is spent on the requests too.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// reportCPU reports, beside ns/op, the process's CPU time per operation
// since start (a cpuTime): on a machine shared with other work, the time
// a benchmark waits for a core inflates ns/op, not cpu-ns/op, which
// benchstat then compares on its own.
func reportCPU(b *testing.B, start time.Duration) {
	if b.N > 0 {
		b.ReportMetric(float64(cpuTime()-start)/float64(b.N), "cpu-ns/op")
	}
}
