//go:build unix

package servertest

import (
	"fmt"
	"os"
	"syscall"
)

// dupCloexec returns a copy of f's descriptor that no *os.File owns, so
// that no finalizer closes it under the server, and that is
// close-on-exec, so that no child process inherits it.
func dupCloexec(f *os.File) (int, error) {
	nfd, _, errno := syscall.Syscall(syscall.SYS_FCNTL, f.Fd(), syscall.F_DUPFD_CLOEXEC, 3)
	if errno != 0 {
		return -1, fmt.Errorf("dup listener: %w", errno)
	}
	return int(nfd), nil
}
