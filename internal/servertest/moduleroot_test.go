package servertest

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// TestModuleRoot: ModuleRoot is the directory of this module (its
// go.mod says module visitors), where BuildAs builds the binary and
// scripts/gendocs finds the docs, from a test's package directory, and
// also in a workspace (go.work) that uses another module beside it,
// where go list -m names every module of the workspace, one a line.
func TestModuleRoot(t *testing.T) {
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	want := filepath.Join(wd, "..", "..") // this package is internal/servertest
	check := func(t *testing.T) {
		t.Helper()
		root, err := ModuleRoot()
		if err != nil {
			t.Fatal(err)
		}
		if root != want {
			t.Errorf("ModuleRoot() = %q, want %q", root, want)
		}
		if b, err := os.ReadFile(filepath.Join(root, "go.mod")); err != nil || !bytes.HasPrefix(b, []byte("module visitors\n")) {
			t.Errorf("ModuleRoot() = %q, whose go.mod is not visitors': %v", root, err)
		}
	}
	t.Run("module", check)
	t.Run("workspace", func(t *testing.T) {
		dir := t.TempDir()
		other := filepath.Join(dir, "other")
		if err := os.Mkdir(other, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(other, "go.mod"), []byte("module other\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command("go", "work", "init", want, other)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GOWORK=")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("go work init: %v\n%s", err, out)
		}
		t.Setenv("GOWORK", filepath.Join(dir, "go.work"))
		check(t)
	})
}
