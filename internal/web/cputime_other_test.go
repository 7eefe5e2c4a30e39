//go:build !unix

package web

import "time"

// cpuTime is 0 where getrusage is not: no cpu-ns/op is reported.
func cpuTime() time.Duration { return 0 }
