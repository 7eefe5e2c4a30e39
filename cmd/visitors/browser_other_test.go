//go:build !unix

package main

import "os/exec"

// killGroupOnCancel leaves cmd's default: without Unix process groups,
// a canceled Chromium is killed alone, and its helpers may outlive it.
func killGroupOnCancel(*exec.Cmd) {}
