package redisstore

import (
	"os/exec"
	"strings"
	"testing"

	"visitors/internal/store/storetest"
)

// TestDoesNotLinkTheEmbeddedStore: the Redis store shares the dump
// format through internal/store/dump, not through the embedded store,
// so a binary that uses Redis alone links no bbolt (issue 25: it did,
// for the dump's types alone).
func TestDoesNotLinkTheEmbeddedStore(t *testing.T) {
	storetest.NoDate(t)
	gocmd, err := exec.LookPath("go")
	if err != nil {
		t.Skipf("no go command to list the imports with: %v", err)
	}
	out, err := exec.Command(gocmd, "list", "-deps", ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps: %v\n%s", err, out)
	}
	deps := strings.Fields(string(out))
	if len(deps) < 10 || !strings.Contains(string(out), "visitors/internal/store/dump") {
		t.Fatalf("go list -deps printed %d packages, without internal/store/dump: not the list of this package's imports:\n%s", len(deps), out)
	}
	for _, p := range deps {
		if strings.Contains(p, "bbolt") || p == "visitors/internal/store/boltstore" {
			t.Errorf("internal/store/redisstore imports %s", p)
		}
	}
}
