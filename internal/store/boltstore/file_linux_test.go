package boltstore

import (
	"os"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// TestCloseReportsTheFilesCloseError: a healthy store whose bbolt file
// cannot be closed (here its lock cannot be released) says so from
// Close, naming the file. The file's descriptor is swapped under bbolt
// for an O_PATH one of the same file, on which flock fails with EBADF;
// dup3 swaps it in one step, so no other file can take its number.
func TestCloseReportsTheFilesCloseError(t *testing.T) {
	s := mustOpen(t, Options{Dir: t.TempDir()}) // nothing to write at Close
	fd := -1
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skipf("no /proc/self/fd: %v", err)
	}
	for _, e := range ents {
		if target, err := os.Readlink("/proc/self/fd/" + e.Name()); err == nil && target == s.path {
			if fd >= 0 {
				t.Fatalf("two descriptors of %s open", s.path)
			}
			fd, _ = strconv.Atoi(e.Name())
		}
	}
	if fd < 0 {
		t.Fatalf("no descriptor of %s open", s.path)
	}
	p, err := unix.Open(s.path, unix.O_PATH|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := unix.Dup3(p, fd, unix.O_CLOEXEC); err != nil {
		t.Fatal(err)
	}
	unix.Close(p)
	err = s.Close()
	if err == nil || !strings.Contains(err.Error(), "close "+s.path) {
		t.Fatalf("Close = %v, want the file's close error, naming %s", err, s.path)
	}
}
