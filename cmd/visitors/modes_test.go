package main

import (
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"visitors/internal/servertest"
)

// TestPrivateFiles: the data directory holds private keys, token hashes
// and today's unique-visitor sketches (issue 23, item 10). The binary
// creates it 0700 and every file in it 0600: the store, its log, the
// flight recorder's traces and the store an import writes. On main they
// were 0755 and 0644 (with the usual umask 022), readable by anyone on
// the host.
func TestPrivateFiles(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	p := servertest.Start(t, bin, openEnv, "-data", dir, "-durability", "sync")
	mustGet(t, p.URL("/counter/private/modes.svg"))
	mustGet(t, p.URL("/hello?name=modes"))
	mustCreate(t, p, "private/created")
	armFlightRecorder(t, p, "1m")
	if code, _, _ := mustGet(t, p.AdminURL("/debug/flightrecorder")); code != 200 {
		t.Fatalf("GET /debug/flightrecorder = %d", code)
	}
	if err := p.Stop(syscall.SIGTERM, 30*time.Second); err != nil {
		t.Fatal(err)
	}
	checkPrivate(t, dir, "visitors.db", "visitors.wal", "traces")

	dump := filepath.Join(t.TempDir(), "dump.json")
	if err := os.WriteFile(dump, []byte(`{"format":"visitors-export-1","hits":1,"keys":[{"key":"a","total":1}]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	imported := filepath.Join(t.TempDir(), "imported")
	if out, err := exec.Command(bin, "import", "-data", imported, dump).CombinedOutput(); err != nil {
		t.Fatalf("visitors import: %v\n%s", err, out)
	}
	checkPrivate(t, imported, "visitors.db")
}

// checkPrivate fails unless dir and every directory under it are 0700,
// every file 0600, and the names are there.
func checkPrivate(t *testing.T, dir string, names ...string) {
	t.Helper()
	for _, n := range names {
		if _, err := os.Stat(filepath.Join(dir, n)); err != nil {
			t.Errorf("%s: %v", n, err)
		}
	}
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		want := fs.FileMode(0o600)
		if d.IsDir() {
			want = 0o700
		}
		if got := fi.Mode().Perm(); got != want {
			t.Errorf("%s has mode %#o, want %#o", path, got, want)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestLooseModesWarned: a data directory made before the rule, or by
// hand, is not chmod-ed behind the operator's back: visitors check
// prints a line naming each path, its mode and the fix, and the service
// warns in its log at start, and leaves the modes as they were. On main
// neither said a word.
func TestLooseModesWarned(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	p := servertest.Start(t, bin, rulesOff, "-data", dir)
	mustGet(t, p.URL("/counter/loose/modes.svg"))
	if err := p.Stop(syscall.SIGTERM, 30*time.Second); err != nil {
		t.Fatal(err)
	}
	db := filepath.Join(dir, "visitors.db")
	for path, mode := range map[string]fs.FileMode{dir: 0o755, db: 0o644} {
		if err := os.Chmod(path, mode); err != nil {
			t.Fatal(err)
		}
	}
	wants := []string{dir + " has mode 0755", "chmod 700 " + dir, db + " has mode 0644", "chmod 600 " + db}

	out, err := exec.Command(bin, "check", "-data", dir).CombinedOutput()
	if err != nil {
		t.Fatalf("visitors check: %v\n%s", err, out)
	}
	for _, w := range wants {
		if !strings.Contains(string(out), w) {
			t.Errorf("visitors check printed:\n%s\nwant a line with %q", out, w)
		}
	}

	p = servertest.Start(t, bin, rulesOff, "-data", dir)
	if err := p.Stop(syscall.SIGTERM, 30*time.Second); err != nil {
		t.Fatal(err)
	}
	log := p.Stdout()
	for _, w := range wants {
		if !strings.Contains(log, w) {
			t.Errorf("the log at start:\n%s\nwant a warning with %q", log, w)
		}
	}
	for path, want := range map[string]fs.FileMode{dir: 0o755, db: 0o644} {
		if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != want {
			t.Errorf("%s after a start: %v %v, want mode %#o left alone", path, fi.Mode(), err, want)
		}
	}
}
