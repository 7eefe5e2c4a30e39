package main

import (
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// readDocs reads the docs that gendocs writes, from the module's root.
func readDocs(t *testing.T) map[string]string {
	t.Helper()
	files := map[string]string{}
	for _, name := range docs {
		b, err := os.ReadFile(filepath.Join("..", "..", name))
		if err != nil {
			t.Fatal(err)
		}
		files[name] = string(b)
	}
	return files
}

// TestREADMELeadsWithTheMainJob: the README is at most 250 lines, in the
// order issue 24 asks (what it is, quick start, deploy, where the rest
// lives), and gives the command that runs the service and the one that
// runs every test.
func TestREADMELeadsWithTheMainJob(t *testing.T) {
	readme := readDocs(t)["README.md"]
	if n := strings.Count(readme, "\n"); n > 250 {
		t.Errorf("README.md has %d lines, more than 250: move the reference to docs/", n)
	}
	at := -1
	for _, h := range []string{"\n## Quick start\n", "\n## Deploy\n", "\n## Where the rest lives\n"} {
		i := strings.Index(readme, h)
		if i < at {
			t.Errorf("README.md lacks %q after the sections before it", strings.TrimSpace(h))
		}
		at = i
	}
	for _, cmd := range []string{"```sh\ngo run ./cmd/visitors\n```", "```sh\n./scripts/test.sh\n```", "-tls-domains", "-trusted-proxies"} {
		if !strings.Contains(readme, cmd) {
			t.Errorf("README.md does not show %s", cmd)
		}
	}
}

// shown returns what the docs in files show of each example, by name,
// the last block where one is shown twice.
func shown(files map[string]string) map[string]string {
	have := map[string]string{}
	for _, name := range docs {
		for _, m := range markerRE.FindAllStringSubmatch(files[name], -1) {
			have[m[1]] = m[2]
		}
	}
	return have
}

// TestMarkersMatchExamples: every marker in the docs names an example
// gendocs has, every example has a marker, and merging what the docs
// hold changes nothing. (The check that they are what the binary prints
// is go run ./scripts/gendocs -check, in ./scripts/test.sh.)
func TestMarkersMatchExamples(t *testing.T) {
	files := readDocs(t)
	have := shown(files)
	out, err := merge(files, have, false)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range docs {
		if out[name] != files[name] {
			t.Errorf("merging %s's own examples changed it", name)
		}
	}
	if !strings.Contains(files["docs/deploy.md"], "\n"+buildCmd+"\n") {
		t.Errorf("docs/deploy.md does not show the build command of the examples' binary:\n%s", buildCmd)
	}
}

// TestMergeRefusesStrays: a marker without an example, and an example
// shown twice, are errors.
func TestMergeRefusesStrays(t *testing.T) {
	files := readDocs(t)
	have := shown(files)
	stray := maps.Clone(files)
	stray["README.md"] += "\n<!-- example: no-such-example -->\n<!-- /example -->\n"
	if _, err := merge(stray, have, false); err == nil || !strings.Contains(err.Error(), "no-such-example") {
		t.Errorf("merge with a stray marker: err = %v, want one naming it", err)
	}
	twice := maps.Clone(files)
	twice["README.md"] += "\n<!-- example: hi -->\n" + have["hi"] + "<!-- /example -->\n"
	if _, err := merge(twice, have, false); err == nil || !strings.Contains(err.Error(), "shown twice") {
		t.Errorf("merge with an example shown twice: err = %v, want shown twice", err)
	}
}

// TestMergeWritesWholeSessions: a block that differs beyond what is
// masked is written anew with every block of its session, so that one
// run's ids stay together (for -check's diff, alone); one that differs
// only in what is masked is kept.
func TestMergeWritesWholeSessions(t *testing.T) {
	files := readDocs(t)
	have := shown(files)
	fresh := maps.Clone(have)
	// Another run: new ids and times everywhere in the owner session.
	fresh["token-create"] = regexp.MustCompile(`\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ`).ReplaceAllString(have["token-create"], "1999-01-01T00:00:00Z")
	if fresh["token-create"] == have["token-create"] {
		t.Fatal("token-create shows no time")
	}
	out, err := merge(files, fresh, false)
	if err != nil {
		t.Fatal(err)
	}
	if out["docs/api.md"] != files["docs/api.md"] {
		t.Error("a run that differs only in masked times rewrote docs/api.md")
	}
	fresh["token-list"] = strings.Replace(have["token-list"], `"name": "ci"`, `"name": "changed"`, 1)
	out, err = merge(files, fresh, true)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out["docs/api.md"], `"name": "changed"`) || strings.Contains(out["docs/api.md"], `1999-01-01T00:00:00Z`) {
		t.Error("-check's merge did not replace the changed block alone")
	}
	out, err = merge(files, fresh, false)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out["docs/api.md"], `"name": "changed"`) || !strings.Contains(out["docs/api.md"], `1999-01-01T00:00:00Z`) {
		t.Error("a changed block was not written with the rest of its session")
	}
}

// TestMask: what varies between runs is masked, and a count is not.
func TestMask(t *testing.T) {
	a := `{"id": "824c679236650891", "token": "vt_824c679236650891.343kTVjZNkJF291G2jDNmYZxvb0ZS6s63nPpZwVoXc0", "created": "2026-11-25T20:58:24Z", "date":"2026-11-24"}
User-Agent: curl/7.88.1
Hostname: vm
Latency: 10.84µs
{"user_agent":"curl/7.88.1","hostname":"vm","latency":"2.865µs","latency_ns":2865}
visitors v1.0.0 revision 99e3cb2cb45f2099527cc7ebed5c3bdbd8757bc5 go1.26.8 linux/amd64
Retry-After: 1799
wrote /var/backups/visitors/visitors-2026-11-25T205831Z.json (115 bytes)
{"id": "key-862b4e867867c3790d8b1bfff04becc7"}`
	b := `{"id": "0123456789abcdef", "token": "vt_0123456789abcdef.w--TpMf4IqKtRaL3Yl9hNE8t9ZsHVki9r6_FRyjURwM", "created": "2031-01-02T03:04:05Z", "date":"2031-01-01"}
User-Agent: curl/8.14.1
Hostname: ci-runner-7
Latency: 1.2ms
{"user_agent":"curl/8.14.1","hostname":"ci-runner-7","latency":"900ns","latency_ns":900}
visitors v1.0.0 revision d5fdb9001b96623cc1af7b45efb91a5913c6da23 go1.27 linux/arm64
Retry-After: 1800
wrote /var/backups/visitors/visitors-2031-01-02T030405Z.json (115 bytes)
{"id": "key-00000000000000000000000000000000"}`
	if mask(a) != mask(b) {
		t.Errorf("masked runs differ:\n%s\n%s", mask(a), mask(b))
	}
	if mask(`{"total":1}`) == mask(`{"total":2}`) || mask("(115 bytes)") == mask("(116 bytes)") {
		t.Error("a count was masked")
	}
}

// TestFlagsTable: each flag of visitors -h is a row, and a flag whose
// description lacks its default and variable is an error.
func TestFlagsTable(t *testing.T) {
	usage := "Flags:\n"
	for range 30 {
		usage += "  -addr address\n    \tpublic address; a|b <x> (default \":8080\"; env VISITORS_ADDR)\n"
	}
	usage += "  -count-bots\n    \tcount them (default \"false\"; env VISITORS_COUNT_BOTS)\n"
	got, err := flagsTable(usage)
	if err != nil {
		t.Fatal(err)
	}
	for _, row := range []string{
		"| `-addr` address | `:8080` | `VISITORS_ADDR` | public address; a\\|b &lt;x&gt; |\n",
		"| `-count-bots` | `false` | `VISITORS_COUNT_BOTS` | count them |\n",
	} {
		if !strings.Contains(got, row) {
			t.Errorf("table lacks %q:\n%s", row, got)
		}
	}
	if _, err := flagsTable(usage + "  -bad int\n    \tno default\n"); err == nil {
		t.Error("a flag without its default made a table")
	}
}
