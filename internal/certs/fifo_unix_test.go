//go:build unix

package certs

import (
	"os"
	"syscall"
	"testing"
)

// mustFIFO puts a FIFO at name. When the test ends, it opens the FIFO
// for writing and closes it, so that a reader blocked in it (a bug)
// gets an end of file and lets the test's goroutines end.
func mustFIFO(t *testing.T, name string) {
	t.Helper()
	tmp := name + ".fifo"
	if err := syscall.Mkfifo(tmp, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, name); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if w, err := os.OpenFile(name, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil { // fails at once if nobody reads
			w.Close()
		}
	})
}
