//go:build !unix

package storetest

import (
	"runtime"
	"testing"
)

// limitFileSize skips t: there is no file size limit (RLIMIT_FSIZE) to
// fill a disk with outside Unix.
func limitFileSize(t *testing.T, _ uint64, _ func()) {
	t.Helper()
	t.Skipf("no file size limit (RLIMIT_FSIZE) on %s: a full disk cannot be simulated", runtime.GOOS)
}
