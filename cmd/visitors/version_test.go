package main

import (
	"bytes"
	"os/exec"
	"strings"
	"testing"

	"visitors/internal/servertest"
)

// mustHead returns the commit the test builds from, or "" outside a git
// checkout (a source archive), where no revision can be compared.
func mustHead(t *testing.T) string {
	t.Helper()
	out, err := exec.Command("git", "rev-parse", "HEAD").Output()
	if err != nil {
		t.Logf("not a git checkout (%v): the revision is not compared", err)
		return ""
	}
	return strings.TrimSpace(string(out))
}

// TestBinaryVersion: visitors -version prints one line to stdout, with
// the revision of the checkout it was built from, and exits 0. Before,
// -version was an unknown flag (exit 2), and the binary the tests build
// carried no revision at all: the machine's GOFLAGS has -buildvcs=false,
// and go build cannot stamp in a git worktree (golang/go#58218).
func TestBinaryVersion(t *testing.T) {
	for _, arg := range []string{"-version", "--version"} {
		cmd := exec.Command(bin, arg)
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		if err := cmd.Run(); err != nil {
			t.Fatalf("visitors %s: %v (want exit 0)\nstderr: %s", arg, err, stderr.String())
		}
		out := stdout.String()
		if stderr.Len() > 0 || !strings.HasPrefix(out, "visitors ") || strings.Count(out, "\n") != 1 {
			t.Errorf("visitors %s printed stdout %q, stderr %q; want one line on stdout", arg, out, stderr.String())
		}
		if head := mustHead(t); head != "" && !strings.Contains(out, " revision "+head) {
			t.Errorf("visitors %s = %q, want revision %s (git rev-parse HEAD)", arg, out, head)
		}
	}
}

// TestBinaryBuildInfoMatchesVersion: visitors_build_info carries the
// version and revision -version prints; before, "(devel)" and "unknown".
func TestBinaryBuildInfoMatchesVersion(t *testing.T) {
	out, err := exec.Command(bin, "-version").Output()
	if err != nil {
		t.Fatalf("visitors -version: %v", err)
	}
	f := strings.Fields(string(out)) // visitors VERSION revision REV …
	if len(f) < 4 || f[2] != "revision" {
		t.Fatalf("visitors -version = %q, want visitors VERSION revision REV …", out)
	}
	p := servertest.Start(t, bin, rulesOff, "-store", "memory")
	labels := map[string]string{}
	if bi := mustScrape(t, p)["visitors_build_info"]; bi != nil && len(bi.GetMetric()) == 1 {
		for _, l := range bi.GetMetric()[0].GetLabel() {
			labels[l.GetName()] = l.GetValue()
		}
	}
	if labels["version"] != f[1] || labels["revision"] != f[3] {
		t.Errorf("visitors_build_info labels = %v, want version %s and revision %s as -version prints", labels, f[1], f[3])
	}
	if head := mustHead(t); head != "" && labels["revision"] != head {
		t.Errorf("visitors_build_info revision = %q, want %s (git rev-parse HEAD)", labels["revision"], head)
	}
}

// TestBinaryBadgeShieldsParams: shields.io's labelColor and logoColor and
// the CSS color names change the badge the real binary draws, and a
// misspelt parameter answers an error badge that names it.
func TestBinaryBadgeShieldsParams(t *testing.T) {
	p := servertest.Start(t, bin, rulesOff, "-store", "memory")
	_, _, plain := mustGet(t, p.URL("/counter/e2e/shields.svg?count=false&logo=github"))
	code, _, colored := mustGet(t, p.URL("/counter/e2e/shields.svg?count=false&logo=github&labelColor=purple&logoColor=pink"))
	if code != 200 || colored == plain || !strings.Contains(colored, `fill="#800080"`) || !strings.Contains(colored, `fill="#ffc0cb"`) {
		t.Errorf("GET ?labelColor=purple&logoColor=pink = %d, want 200 with fills #800080 and #ffc0cb:\n%s", code, colored)
	}
	code, hdr, body := mustGet(t, p.URL("/counter/e2e/shields.svg?colour=red"))
	if code != 400 || !strings.HasPrefix(hdr.Get("Content-Type"), "image/svg+xml") || !strings.Contains(body, "unknown parameter colour") ||
		!strings.Contains(hdr.Get("Visitors-Error"), `"colour"`) {
		t.Errorf("GET ?colour=red = %d %q (Visitors-Error %q), want 400 and an error badge naming colour:\n%s", code, hdr.Get("Content-Type"), hdr.Get("Visitors-Error"), body)
	}
	code, _, body = mustGet(t, p.URL("/counter/e2e/shields.json?colour=red"))
	if code != 400 || !strings.Contains(body, `Unknown parameter "colour"`) {
		t.Errorf("GET .json?colour=red = %d %q, want 400 naming colour", code, body)
	}
}
