package redistest

import "syscall"

// procAttr makes a redis-server die with the test binary that started it
// (a panic skips TestMain's Close).
func procAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
