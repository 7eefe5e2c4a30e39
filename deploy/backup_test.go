//go:build linux

package deploy

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"visitors/internal/servertest"
	"visitors/internal/webtest"
)

// The commands of docs/deploy.md#backups, as the doc writes them;
// TestBackupDrill runs each with the doc's paths and URL replaced by the
// test's.
const (
	docMakeToken = `curl -sS -H "Authorization: Bearer $VISITORS_ADMIN_TOKEN" -H 'Content-Type: application/json' -d '{"name":"nightly backup","scope":"backup"}' http://127.0.0.1:8080/api/v1/tokens`
	docBackup    = `/usr/local/bin/visitors-backup.sh -url http://127.0.0.1:8080 -token-file /etc/visitors/backup.token -dir /var/backups/visitors -keep 14`
	docCron      = `15 3 * * * root ` + docBackup
	docRestore   = `visitors import -data /tmp/visitors-drill -replace "$(ls -t /var/backups/visitors/visitors-*.json | head -n 1)"`
	docCheck     = `curl -sS -H "Authorization: Bearer $VISITORS_ADMIN_TOKEN" http://127.0.0.1:8081/api/v1/counters/octocat/hello-world`
	docKeepDays  = 14
)

// backupRoot is the root token of the drill.
const backupRoot = "drill-root-token-0123456789abcdef"

// backupEnv counts every visit of the test's client.
var backupEnv = []string{"VISITORS_ADMIN_TOKEN=" + backupRoot, "VISITORS_COUNT_BOTS=true", "VISITORS_CLIENT_RATE=0", "VISITORS_CLIENT_NEW_KEYS=0", "VISITORS_REPEAT_WINDOW=0"}

// drill runs the doc's commands with the doc's paths replaced.
type drill struct {
	repl *strings.Replacer
	env  []string
}

// run runs the doc's command cmd, which must be in doc, under bash, and
// returns its output and exit status.
func (d *drill) run(t *testing.T, doc, cmd string) (string, error) {
	t.Helper()
	if !strings.Contains(doc, cmd) {
		t.Fatalf("docs/deploy.md does not show the command the drill runs:\n%s", cmd)
	}
	c := exec.Command("bash", "-c", "set -o pipefail; "+d.repl.Replace(cmd))
	c.Env = append(os.Environ(), d.env...)
	out, err := c.CombinedOutput()
	return string(out), err
}

// mustRun is run that fails the test unless the command succeeds.
func (d *drill) mustRun(t *testing.T, doc, cmd string) string {
	t.Helper()
	out, err := d.run(t, doc, cmd)
	if err != nil {
		t.Fatalf("%s: %v\n%s", d.repl.Replace(cmd), err, out)
	}
	return out
}

// backups lists the base names of dir's files, sorted.
func backups(t *testing.T, dir string) []string {
	t.Helper()
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range es {
		names = append(names, e.Name())
	}
	return names
}

// rootGet GETs path of p with the root token and returns its body.
func rootGet(t *testing.T, p *servertest.Proc, path string) string {
	t.Helper()
	resp, err := webtest.Client.Do(webtest.NewAPIRequest(t, "GET", p.URL(path), backupRoot, ""))
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("GET %s = %d %s %v", path, resp.StatusCode, b, err)
	}
	return string(b)
}

// visit GETs url without a token and returns the body.
func visit(t *testing.T, url string) string {
	t.Helper()
	resp, err := webtest.Client.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("GET %s = %d %v", url, resp.StatusCode, err)
	}
	return string(b)
}

// TestBackupDrill follows docs/deploy.md#backups with the real binary
// and the real script: a backup token, two runs of the backup (the
// second deletes a backup older than -keep days and keeps a younger
// one), refused runs that keep and delete nothing, then a restore of the
// newest backup into a new directory whose counts and /hi go on from the
// service's.
func TestBackupDrill(t *testing.T) {
	docb, err := os.ReadFile("../docs/deploy.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(docb)
	for _, prog := range []string{"bash", "curl", "find"} {
		mustLookPath(t, prog)
	}
	if !strings.Contains(doc, "\n## Backups\n") || !strings.Contains(doc, docCron) {
		t.Fatalf("docs/deploy.md has no section ## Backups with the crontab line:\n%s", docCron)
	}
	script, err := filepath.Abs("backup/visitors-backup.sh")
	if err != nil {
		t.Fatal(err)
	}
	tmp := t.TempDir()
	dataA, dataB, dir := filepath.Join(tmp, "data"), filepath.Join(tmp, "drill"), filepath.Join(tmp, "backups")
	tokenFile := filepath.Join(tmp, "backup.token")

	a := servertest.Start(t, bin, backupEnv, "-data", dataA)
	d := &drill{env: []string{"VISITORS_ADMIN_TOKEN=" + backupRoot}}
	d.repl = strings.NewReplacer(
		"http://127.0.0.1:8080", a.URL(""),
		"/usr/local/bin/visitors-backup.sh", "bash "+script,
		"/etc/visitors/backup.token", tokenFile,
		"/var/backups/visitors", dir,
		"/tmp/visitors-drill", dataB,
		"visitors import", bin+" import",
	)
	for range 3 {
		visit(t, a.URL("/counter/octocat/hello-world.svg"))
		visit(t, a.URL("/hi"))
	}

	// A backup token, made as the doc makes it.
	var nt struct{ ID, Token, Scope string }
	if out := d.mustRun(t, doc, docMakeToken); json.Unmarshal([]byte(out), &nt) != nil || nt.Scope != "backup" || nt.Token == "" {
		t.Fatalf("the doc's token command printed %s", out)
	}
	if err := os.WriteFile(tokenFile, []byte(nt.Token+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}

	// The first run writes one dated backup, 0600 in a 0700 directory.
	out := d.mustRun(t, doc, docBackup)
	first := backups(t, dir)
	if len(first) != 1 || !strings.HasPrefix(first[0], "visitors-") || !strings.Contains(out, "wrote "+filepath.Join(dir, first[0])) {
		t.Fatalf("after the first backup, %s holds %v; the script printed %s", dir, first, out)
	}
	for _, f := range []string{dir, filepath.Join(dir, first[0])} {
		fi, err := os.Stat(f)
		if err != nil {
			t.Fatal(err)
		}
		if want := map[bool]os.FileMode{true: 0o700, false: 0o600}[fi.IsDir()]; fi.Mode().Perm() != want {
			t.Errorf("%s has mode %v, want %v", f, fi.Mode().Perm(), want)
		}
	}

	// Older backups, and a file that is not one: only the backup past
	// -keep days goes, and only after a good export.
	now := time.Now()
	old := "visitors-" + now.AddDate(0, 0, -docKeepDays-2).UTC().Format("2006-01-02T150405Z") + ".json"
	young := "visitors-" + now.AddDate(0, 0, -docKeepDays+2).UTC().Format("2006-01-02T150405Z") + ".json"
	for name, age := range map[string]time.Duration{
		old:         (docKeepDays + 2) * 24 * time.Hour,
		young:       (docKeepDays - 2) * 24 * time.Hour,
		"notes.txt": (docKeepDays + 30) * 24 * time.Hour,
	} {
		f := filepath.Join(dir, name)
		if err := os.WriteFile(f, []byte("{}"), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(f, now.Add(-age), now.Add(-age)); err != nil {
			t.Fatal(err)
		}
	}
	planted := backups(t, dir)

	// Refused runs exit non-zero and keep and delete nothing: a wrong
	// token, and a server that answers 200 with no dump or half of one.
	if err := os.WriteFile(tokenFile+".bad", []byte("vt_0000.wrong\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	bad := &drill{env: d.env, repl: strings.NewReplacer(
		"http://127.0.0.1:8080", a.URL(""), "/usr/local/bin/visitors-backup.sh", "bash "+script,
		"/etc/visitors/backup.token", tokenFile+".bad", "/var/backups/visitors", dir)}
	if out, err := bad.run(t, doc, docBackup); err == nil || !strings.Contains(out, "answered 401") {
		t.Errorf("a backup with a wrong token: %v %s, want a failure that says 401", err, out)
	}
	for _, body := range []string{"", `{"format":"visitors-export-1","hits":3,"keys":[`, `{"error":"not a dump"}`} {
		fake := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, body) }))
		wrong := &drill{env: d.env, repl: strings.NewReplacer(
			"http://127.0.0.1:8080", fake.URL, "/usr/local/bin/visitors-backup.sh", "bash "+script,
			"/etc/visitors/backup.token", tokenFile, "/var/backups/visitors", dir)}
		if out, err := wrong.run(t, doc, docBackup); err == nil || !strings.Contains(out, "visitors-backup: the export from") {
			t.Errorf("a backup of the answer %q: %v %s, want a failure", body, err, out)
		}
		fake.Close()
	}
	if got := backups(t, dir); !slices.Equal(got, planted) {
		t.Errorf("after refused backups %s holds %v, want %v as before", dir, got, planted)
	}

	// The second run, after more visits, deletes the old backup only.
	visit(t, a.URL("/counter/octocat/hello-world.svg"))
	visit(t, a.URL("/counter/other.svg"))
	hi := visit(t, a.URL("/hi"))
	out = d.mustRun(t, doc, docBackup)
	second := backups(t, dir)
	if slices.Contains(second, old) || !slices.Contains(second, young) || !slices.Contains(second, "notes.txt") ||
		!slices.Contains(second, first[0]) || len(second) != len(planted) || !strings.Contains(out, "deleted "+filepath.Join(dir, old)) {
		t.Errorf("after the second backup %s holds %v (it printed %s); want %s deleted, %s, notes.txt, the first backup and a new one kept",
			dir, second, out, old, young)
	}
	want := rootGet(t, a, "/api/v1/counters")
	if err := a.Stop(syscall.SIGTERM, 30*time.Second); err != nil {
		t.Fatalf("stop the service: %v\n%s", err, a.Stderr())
	}

	// The restore drill: the newest backup into a new directory.
	d.mustRun(t, doc, docRestore)
	b := servertest.Start(t, bin, backupEnv, "-data", dataB)
	if got := rootGet(t, b, "/api/v1/counters"); got != want {
		t.Errorf("the restored counters:\n%s\nwant the service's:\n%s", got, want)
	}
	d.repl = strings.NewReplacer("http://127.0.0.1:8081", b.URL(""))
	var c struct{ Total uint64 }
	if out := d.mustRun(t, doc, docCheck); json.Unmarshal([]byte(out), &c) != nil || c.Total != 4 {
		t.Errorf("the doc's check on the restored service printed %s, want total 4", out)
	}
	var n int
	if _, err := fmt.Sscanf(hi[strings.Index(hi, "number ")+len("number "):], "%d", &n); err != nil {
		t.Fatalf("/hi said %q", hi)
	}
	if got, wantHi := visit(t, b.URL("/hi")), fmt.Sprintf("number %d!", n+1); !strings.Contains(got, wantHi) {
		t.Errorf("/hi on the restored service = %q, want %q", got, wantHi)
	}
}
