//go:build unix

package web

import (
	"syscall"
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
