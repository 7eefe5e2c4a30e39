package storetest

import (
	"bytes"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
)

// ownProcessEnv names, in the environment of a test binary started by
// [OwnProcess], the test that runs there.
const ownProcessEnv = "VISITORS_TEST_OWN_PROCESS"

// OwnProcess runs test t in a process of its own, for a test that
// changes what the whole process shares (a file size limit): in the test
// binary that go test started, it starts the binary again to run t
// alone, fails t if t fails there, and returns false, and t returns; in
// that second process it returns true, and t goes on.
func OwnProcess(t *testing.T) bool {
	t.Helper()
	if os.Getenv(ownProcessEnv) == t.Name() {
		return true
	}
	parts := strings.Split(t.Name(), "/")
	for i, p := range parts {
		parts[i] = "^" + regexp.QuoteMeta(p) + "$"
	}
	cmd := exec.Command(os.Args[0], "-test.run="+strings.Join(parts, "/"), "-test.count=1", "-test.v")
	cmd.Env = append(os.Environ(), ownProcessEnv+"="+t.Name())
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s in a process of its own: %v\n%s", t.Name(), err, out)
	}
	if !bytes.Contains(out, []byte("--- PASS: "+t.Name()+" ")) {
		t.Fatalf("%s in a process of its own did not pass:\n%s", t.Name(), out)
	}
	return false
}

// WithFileSizeLimit runs f while no file of the process may grow past
// limit bytes (RLIMIT_FSIZE: a write past it fails with EFBIG; Go
// ignores SIGXFSZ): a disk that fills up, for this process alone. The
// limit holds for every file the process writes, go test's own log
// among them, so t must run in a process of its own ([OwnProcess]).
func WithFileSizeLimit(t *testing.T, limit uint64, f func()) {
	t.Helper()
	if os.Getenv(ownProcessEnv) != t.Name() {
		t.Fatal("WithFileSizeLimit in a test that does not run in a process of its own (storetest.OwnProcess)")
	}
	limitFileSize(t, limit, f)
}
