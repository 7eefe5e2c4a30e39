package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// layoutRow matches a row of docs/architecture.md's layout table and its
// first cell, which names one or more folders in backquotes.
var layoutRow = regexp.MustCompile("(?m)^\\| ([^|]*`[^|]*) \\|")

// TestArchitectureListsEveryPackage: the layout table of
// docs/architecture.md names every package of the module that go list
// finds (the service's, the lab's, the scripts' and docs' commands), so that a new package cannot be left out of the
// map a newcomer reads first.
func TestArchitectureListsEveryPackage(t *testing.T) {
	root := filepath.Join("..", "..")
	doc, err := os.ReadFile(filepath.Join(root, "docs", "architecture.md"))
	if err != nil {
		t.Fatal(err)
	}
	listed := map[string]bool{}
	for _, m := range layoutRow.FindAllStringSubmatch(string(doc), -1) {
		for _, f := range regexp.MustCompile("`([^`]+)`").FindAllStringSubmatch(m[1], -1) {
			listed[strings.TrimSuffix(f[1], "/")] = true
		}
	}
	cmd := exec.Command("go", "list", "./...")
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list ./...: %v", err)
	}
	n := 0
	for _, p := range strings.Fields(string(out)) {
		rel := strings.TrimPrefix(p, "visitors/")
		n++
		if !listed[rel] {
			t.Errorf("docs/architecture.md's layout table does not name `%s`", rel)
		}
	}
	if n < 10 {
		t.Fatalf("go list found %d packages, want the module's", n)
	}
}
