//go:build unix

package main

import (
	"os/exec"
	"syscall"
)

// killGroupOnCancel runs cmd in a process group of its own and, when its
// context is done, kills the whole group: Chromium's helpers too.
func killGroupOnCancel(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
}
