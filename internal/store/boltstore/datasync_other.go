//go:build !linux

// datasync elsewhere: f.Sync.

package boltstore

import "os"

// datasync makes f's written data durable (fsync where fdatasync is not
// available).
func datasync(f *os.File) error { return f.Sync() }
