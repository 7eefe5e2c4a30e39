//go:build !linux

package redistest

import "syscall"

// procAttr is nil: only Linux kills a child with its parent
// (Pdeathsig), so elsewhere a test binary that dies without Close leaves
// its redis-servers running until they are killed.
func procAttr() *syscall.SysProcAttr { return nil }
