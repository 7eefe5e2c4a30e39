//go:build linux

package deploy

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The commands of docs/deploy.md#in-a-container, as the doc writes them;
// TestContainer runs each from the repository's root, with the host's
// ports 8080 and 8081 replaced by free ones and /srv/visitors by a
// directory of the test's.
const (
	docImageBuild = `./deploy/container/build.sh visitors`
	docVolume     = `podman volume create visitors-data`
	docRun        = `podman run -d --name visitors --ulimit nofile=16384:16384 --ulimit nproc=4096:4096 -p 8080:8080 -v visitors-data:/data visitors`
	docBadge      = `curl -sS -A 'Mozilla/5.0' http://127.0.0.1:8080/counter/demo.svg`
	docBadge2     = `curl -sS -A 'Mozilla/5.0 (another reader)' http://127.0.0.1:8080/counter/demo.svg`
	docHealth     = `podman healthcheck run visitors`
	docUser       = `podman top visitors user huser`
	docStop       = `podman stop visitors && podman rm visitors`
	docImageUser  = `podman image inspect --format '{{.Config.User}} {{.Config.Volumes}} {{.Config.Healthcheck.Test}}' visitors`
	docVersion    = `podman run --rm --ulimit nofile=16384:16384 --ulimit nproc=4096:4096 visitors -version`
	docBindDir    = `mkdir /srv/visitors && chown 10001:10001 /srv/visitors`
	docBindRun    = `podman run -d --name visitors-bound --ulimit nofile=16384:16384 --ulimit nproc=4096:4096 -p 8081:8080 -v /srv/visitors:/data visitors`
)

// podman is the podman of the test: its images, containers and volumes
// in a directory of its own, with vfs storage (no overlay mount needed)
// and runc; the ulimits are the doc's flags.
type podman struct {
	root string   // the repository's root, where the doc's commands run
	env  []string // CONTAINERS_CONF and CONTAINERS_STORAGE_CONF
	repl *strings.Replacer
}

// newPodman writes the test's storage.conf and containers.conf and
// removes every container it made when the test ends.
func newPodman(t *testing.T, port, boundPort, srv string) *podman {
	t.Helper()
	if _, err := exec.LookPath("podman"); err != nil {
		t.Fatalf("podman is missing (./scripts/install-deps.sh installs it): %v", err)
	}
	dir := t.TempDir()
	storage := fmt.Sprintf("[storage]\ndriver = \"vfs\"\ngraphroot = %q\nrunroot = %q\n",
		filepath.Join(dir, "graph"), filepath.Join(dir, "run"))
	// runc, not Debian 12's crun 1.8, which refuses a host whose cgroups
	// are v1 and v2 at once ("hybrid mode"). podman's default ulimits
	// are left alone: they fail here (open files 1048576 past a hard
	// limit of 20000, without CAP_SYS_RESOURCE), so the doc's --ulimit
	// flags are what lets every podman run start.
	containers := "[engine]\nruntime = \"runc\"\n"
	for name, text := range map[string]string{"storage.conf": storage, "containers.conf": containers} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	p := &podman{
		root: root,
		env: []string{
			"CONTAINERS_CONF=" + filepath.Join(dir, "containers.conf"),
			"CONTAINERS_STORAGE_CONF=" + filepath.Join(dir, "storage.conf"),
		},
		repl: strings.NewReplacer("8080:8080", port+":8080", "127.0.0.1:8080", "127.0.0.1:"+port,
			"8081:8080", boundPort+":8080", "127.0.0.1:8081", "127.0.0.1:"+boundPort, "/srv/visitors", srv),
	}
	t.Cleanup(func() {
		// Before the TempDir goes: the containers' network namespaces
		// and the storage's lock live there.
		p.cmd("podman rm -f -a -t 0").Run()
		p.cmd("podman volume rm -a -f").Run()
	})
	return p
}

// cmd is the shell command line under bash, in the repository's root,
// with the test's podman.
func (p *podman) cmd(line string) *exec.Cmd {
	c := exec.Command("bash", "-c", "set -o pipefail; "+line)
	c.Dir = p.root
	c.Env = append(os.Environ(), p.env...)
	return c
}

// run runs the doc's command line, which must be in doc, with the
// test's port, and returns its output; it fails the test if the command
// fails.
func (p *podman) run(t *testing.T, doc, line string) string {
	t.Helper()
	if !strings.Contains(doc, line) {
		t.Fatalf("docs/deploy.md does not show the command the test runs:\n%s", line)
	}
	return p.must(t, p.repl.Replace(line))
}

// must runs line and returns its standard output; it fails the test if
// the command fails.
func (p *podman) must(t *testing.T, line string) string {
	t.Helper()
	c := p.cmd(line)
	var stderr strings.Builder
	c.Stderr = &stderr
	out, err := c.Output()
	if err != nil {
		t.Fatalf("%s: %v\nstdout:\n%s\nstderr:\n%s", line, err, out, stderr.String())
	}
	return string(out)
}

// badgeCount is the count a badge shows in its accessible label.
var badgeCount = regexp.MustCompile(`aria-label="visitors: (\d+)"`)

// TestContainer follows docs/deploy.md#in-a-container: it builds the
// image from this checkout with deploy/container/build.sh, runs it with
// podman (no daemon) with a named volume, and checks that it serves a
// badge that counts a browser's visits, runs as the user visitors, has
// a health check that passes (and fails when the admin listener is
// off), and keeps its counts in the volume across a new container.
func TestContainer(t *testing.T) {
	docb, err := os.ReadFile("../docs/deploy.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(docb)
	_, section, ok := strings.Cut(doc, "\n## In a container\n")
	if !ok {
		t.Fatal("docs/deploy.md has no section ## In a container")
	}
	section, _, _ = strings.Cut(section, "\n## ")
	srv := filepath.Join(t.TempDir(), "visitors")
	p := newPodman(t, freePort(t), freePort(t), srv)

	start := time.Now()
	p.run(t, section, docImageBuild)
	t.Logf("built the image in %v", time.Since(start).Round(time.Second))
	size := strings.TrimSpace(p.must(t, "podman image inspect --format '{{.Size}}' visitors"))
	t.Logf("image size: %s bytes", size)

	if got, want := strings.TrimSpace(p.run(t, section, docImageUser)), "10001:10001 map[/data:{}] [CMD /visitors health]"; got != want {
		t.Errorf("the image's user, volumes and health check:\n got %s\nwant %s", got, want)
	}
	if got := p.run(t, section, docVersion); !strings.HasPrefix(got, "visitors ") || !strings.Contains(got, " linux/") {
		t.Errorf("%s printed %q, want visitors VERSION revision ... linux/ARCH", docVersion, got)
	}

	if got := p.run(t, section, docVolume); got != "visitors-data\n" {
		t.Errorf("%s printed %q, want visitors-data", docVolume, got)
	}
	p.run(t, section, docRun)
	badge := func(line string) int {
		t.Helper()
		var out string
		// The container answers once visitors listens, a moment
		// after podman run returns.
		for deadline := time.Now().Add(20 * time.Second); ; {
			c := p.cmd(p.repl.Replace(line))
			b, err := c.Output()
			out = string(b)
			if err == nil || time.Now().After(deadline) {
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
		m := badgeCount.FindStringSubmatch(out)
		if m == nil {
			t.Fatalf("%s answered no badge:\n%s\ncontainer's log:\n%s", line, out, p.logs())
		}
		n, _ := strconv.Atoi(m[1])
		return n
	}
	for _, line := range []string{docBadge, docBadge2} {
		if !strings.Contains(section, line) {
			t.Fatalf("docs/deploy.md does not show the command the test runs:\n%s", line)
		}
	}
	if n := badge(docBadge); n != 1 {
		t.Errorf("first visit: badge shows %d, want 1", n)
	}
	if n := badge(docBadge); n != 1 {
		t.Errorf("the same reader again: badge shows %d, want 1 (a refresh is not counted)", n)
	}
	if n := badge(docBadge2); n != 2 {
		t.Errorf("another reader: badge shows %d, want 2", n)
	}
	// curl's own User-Agent is a bot's: answered, not counted.
	if out := p.must(t, p.repl.Replace(`curl -sS http://127.0.0.1:8080/counter/demo.svg`)); !strings.Contains(out, `aria-label="visitors: 2"`) {
		t.Errorf("a bot's visit: want the badge at 2, got\n%s", out)
	}
	// It fails the test unless it exits 0: healthy.
	p.run(t, section, docHealth)
	if got := strings.Fields(p.run(t, section, docUser)); len(got) != 4 || got[2] != "visitors" || got[3] != "10001" {
		t.Errorf("%s: want USER HUSER visitors 10001, got %q", docUser, got)
	}

	// A new container on the same volume goes on from the old count:
	// the counts are in the volume, not in the container.
	if got := p.run(t, section, docStop); got != "visitors\nvisitors\n" {
		t.Errorf("%s printed %q, want the name twice", docStop, got)
	}
	p.run(t, section, docRun)
	if n := badge(docBadge); n != 3 {
		t.Errorf("first visit to the new container on the volume: badge shows %d, want 3\ncontainer's log:\n%s", n, p.logs())
	}

	// A host directory given to uid 10001 holds the store as well.
	p.run(t, section, docBindDir)
	p.run(t, section, docBindRun)
	if n := badge(strings.ReplaceAll(docBadge, "8080", "8081")); n != 1 {
		t.Errorf("first visit to the container on a bind-mounted directory: badge shows %d, want 1", n)
	}
	if _, err := os.Stat(filepath.Join(srv, "visitors")); err != nil {
		t.Errorf("the bind-mounted directory holds no store: %v", err)
	}

	// The health check fails when /healthz does not answer: a container
	// with the admin listener off is unhealthy.
	p.must(t, "podman run -d --name no-admin --ulimit nofile=16384:16384 --ulimit nproc=4096:4096 visitors -admin-addr= -addr 127.0.0.1:8080")
	c := p.cmd("podman healthcheck run no-admin")
	out, err := c.CombinedOutput()
	if err == nil || !strings.Contains(string(out), "unhealthy") {
		t.Errorf("podman healthcheck run on a container without an admin listener: err %v, want it unhealthy:\n%s", err, out)
	}
}

// logs is the log of the container the doc runs.
func (p *podman) logs() string {
	out, _ := p.cmd("podman logs visitors").CombinedOutput()
	return string(out)
}
