package boltstore

import (
	"os"
	"syscall"
)

// datasync makes f's written data durable: fdatasync, which skips the
// inode's times (the log's size never changes once preallocated).
func datasync(f *os.File) error { return syscall.Fdatasync(int(f.Fd())) }
