// datasync on Linux: fdatasync.

package boltstore

import (
	"os"
	"syscall"
)

// datasync makes f's written data durable: fdatasync, which skips the
// inode's times (the log's size never changes once preallocated).
func datasync(f *os.File) error { return fdatasync(int(f.Fd())) }

// fdatasync is the system call itself, a variable so that a test can
// hold the real call and see that no visit is answered before it returns
// (TestSyncVisitWaitsForTheRealSync).
var fdatasync = syscall.Fdatasync
