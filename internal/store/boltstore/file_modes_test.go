package boltstore

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// TestLooseModes names each directory and regular file under the data
// directory that others on the host may read or enter (more than
// DirMode or FileMode), with its mode and the chmod that fixes it, and
// nothing else. (Mutation testing, issue 28: with its walk's error check
// negated, file.go:41:10, LooseModes named nothing and every test of the
// package still passed.)
func TestLooseModes(t *testing.T) {
	dir := t.TempDir()
	mk := func(path string, mode os.FileMode, isDir bool) string {
		t.Helper()
		p := filepath.Join(dir, path)
		var err error
		if isDir {
			err = os.Mkdir(p, mode)
		} else {
			err = os.WriteFile(p, nil, mode)
		}
		noErr(t, err, "make %s", path)
		noErr(t, os.Chmod(p, mode), "chmod %s", path) // past the umask
		return p
	}
	noErr(t, os.Chmod(dir, DirMode), "chmod %s", dir)
	mk("tight", DirMode, true)
	mk("tight/f", FileMode, false)
	open := mk("open", 0o755, true)
	readable := mk("open/f", 0o644, false)
	mk("open/g", 0o400, false) // less than FileMode: fine
	// Not a regular file: skipped.
	noErr(t, os.Symlink("f", filepath.Join(open, "link")), "symlink")
	got := LooseModes(dir)
	want := []string{
		fmt.Sprintf("%s has mode 0755: others on the host may read it; chmod 700 %s", open, open),
		fmt.Sprintf("%s has mode 0644: others on the host may read it; chmod 600 %s", readable, readable),
	}
	if !slices.Equal(got, want) {
		t.Errorf("LooseModes = %q, want %q", got, want)
	}
}
