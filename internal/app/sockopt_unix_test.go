//go:build unix

package app

import "syscall"

// setRcvBuf sets the receive buffer of socket fd to n bytes.
func setRcvBuf(fd uintptr, n int) error {
	return syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, n)
}
