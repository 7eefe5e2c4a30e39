//go:build linux

package deploy

import (
	"archive/tar"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"
)

// releaseTargets are the targets a release must have an archive for
// (issue 37): a user without Go takes one of them.
var releaseTargets = []string{"linux/amd64", "linux/arm64", "darwin/amd64", "darwin/arm64", "windows/amd64"}

// TestReleaseTargets: scripts/release.sh builds every target a release
// must have, a .zip for Windows and a .tar.gz for the others, and
// docs/deploy.md names each archive. (It reads the script's list:
// cross-compiling all of them costs minutes of CPU on the shared
// machine, so TestReleaseArchive builds one.)
func TestReleaseTargets(t *testing.T) {
	script, err := os.ReadFile("../scripts/release.sh")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^all_targets="([^"]+)"$`).FindSubmatch(script)
	if m == nil {
		t.Fatal(`scripts/release.sh has no all_targets="…" line`)
	}
	have := strings.Fields(string(m[1]))
	doc, err := os.ReadFile("../docs/deploy.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range releaseTargets {
		if !slices.Contains(have, want) {
			t.Errorf("scripts/release.sh builds %v, not %s", have, want)
		}
		ext := ".tar.gz"
		if strings.HasPrefix(want, "windows/") {
			ext = ".zip"
		}
		name := "visitors-v1.2.3-" + strings.ReplaceAll(want, "/", "-") + ext
		if !strings.Contains(string(doc), name) {
			t.Errorf("docs/deploy.md does not name the archive %s", name)
		}
	}
}

// TestReleaseArchive runs scripts/release.sh for linux/amd64 alone and
// checks what a user gets: the archive and SHA256SUMS, whose sum is the
// archive's; entries owned by 0, dated at the commit, in a directory of
// the archive's name; and the binary inside, which runs and says, with
// -version, the version asked for and the commit it was built from. A
// second run writes the same bytes.
func TestReleaseArchive(t *testing.T) {
	if runtime.GOARCH != "amd64" {
		t.Fatalf("the test runs the linux/amd64 binary it builds; this is %s", runtime.GOARCH)
	}
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	rev := strings.TrimSpace(mustOutput(t, root, "git", "rev-parse", "HEAD"))
	whenText := strings.TrimSpace(mustOutput(t, root, "git", "log", "-1", "--format=%cI", "HEAD"))
	when, err := time.Parse(time.RFC3339, whenText)
	if err != nil {
		t.Fatal(err)
	}
	run := func(out string) {
		start := time.Now()
		cmd := exec.Command("./scripts/release.sh", "v9.8.7", out)
		cmd.Dir = root
		cmd.Env = append(os.Environ(), "TARGETS=linux/amd64", "ALLOW_DIRTY=1") // the test may run on a tree being changed
		if b, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("release.sh: %v\n%s", err, b)
		}
		t.Logf("release.sh for linux/amd64 took %v", time.Since(start).Round(100*time.Millisecond))
	}
	a, b := t.TempDir(), t.TempDir()
	run(a)
	const name = "visitors-v9.8.7-linux-amd64"
	archive := filepath.Join(a, name+".tar.gz")
	data, err := os.ReadFile(archive)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(data)
	sums, err := os.ReadFile(filepath.Join(a, "SHA256SUMS"))
	if want := hex.EncodeToString(sum[:]) + "  " + name + ".tar.gz\n"; err != nil || string(sums) != want {
		t.Errorf("SHA256SUMS = %q, %v; want %q", sums, err, want)
	}

	bin := filepath.Join(t.TempDir(), "visitors")
	var names []string
	zr, err := gzip.NewReader(strings.NewReader(string(data)))
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(zr)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, h.Name)
		if h.Uid != 0 || h.Gid != 0 || !h.ModTime.Equal(when) {
			t.Errorf("%s: owner %d:%d, time %v; want 0:0 and the commit's time %v", h.Name, h.Uid, h.Gid, h.ModTime, when)
		}
		if h.Name == name+"/visitors" {
			if h.Mode&0o111 == 0 {
				t.Errorf("%s: mode %o, not executable", h.Name, h.Mode)
			}
			f, err := os.OpenFile(bin, os.O_CREATE|os.O_WRONLY, 0o755)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := io.Copy(f, tr); err != nil {
				t.Fatal(err)
			}
			f.Close()
		}
	}
	if want := []string{name + "/", name + "/README.md", name + "/migrate.md", name + "/visitors"}; !slices.Equal(names, want) {
		t.Errorf("the archive holds %q, want %q", names, want)
	}
	out := mustOutput(t, root, bin, "-version")
	if want := "visitors v9.8.7 revision " + rev + " (" + whenText; !strings.HasPrefix(out, want) || !strings.Contains(out, "linux/amd64") {
		t.Errorf("the archive's visitors -version = %q, want it to begin %q", out, want)
	}

	run(b)
	if again, err := os.ReadFile(filepath.Join(b, "SHA256SUMS")); err != nil || string(again) != string(sums) {
		t.Errorf("a second run wrote other bytes:\n%s\n%s", sums, again)
	}
}

// mustOutput runs name with args in dir and returns its standard output.
func mustOutput(t *testing.T, dir, name string, args ...string) string {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, stderr.String())
	}
	return string(out)
}
