// Command gendocs runs every example that README.md and
// docs/{api,configuration,deploy,migrate}.md show against the real visitors
// binary, and writes what the binary printed into the docs, between the
// markers
//
//	<!-- example: NAME -->
//	<!-- /example -->
//
// It builds ./cmd/visitors once (with the release build's -ldflags that
// the docs show), starts it on free loopback ports with a temporary data
// directory for each session of examples (a real redis-server too, where
// an example needs Redis), runs each command of an example with bash as
// the doc writes it (with the doc's localhost:8080, localhost:6060 and
// 127.0.0.1:6379 replaced by the real addresses, and back in what it
// prints), and writes the commands and their output. The table of flags
// in docs/configuration.md is made the same way from visitors -h. Both
// modes first check that every relative link and #anchor of README.md
// and of the Markdown files under docs/ resolves (CheckLinks).
//
//	go run ./scripts/gendocs          # rewrite the examples in the docs
//	go run ./scripts/gendocs -check   # change nothing; fail with a diff if a doc differs
//
// ./scripts/test.sh runs the check. What varies from run to run is
// compared masked (see masks): times and dates, token secrets and ids,
// latencies, the host name, curl's and Go's versions, the platform,
// VCS revisions and Retry-After's seconds. A block whose masked text is
// the same as the binary's is left as it is, so a run on another day
// changes nothing; when any block of a session differs, every block of
// that session is written anew, so that the ids and tokens of one run
// stay together; -check's diff shows only the blocks that differ. The
// server runs on the real clock: no date is pinned; a run that crosses
// UTC midnight is run again.
//
// Why a Go program and not a shell script: it reuses the tests' helpers
// that start the binary on sockets it holds (internal/servertest) and a
// throwaway redis-server (redistest), reads a live stream until it has
// the events it shows, and does the masking, the merging and the check
// in one place that its own tests cover; bash still runs each command,
// so a doc shows what a reader types.
package main

import (
	"bufio"
	"bytes"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"time"

	"visitors/internal/servertest"
	"visitors/internal/store/redisstore/redistest"
)

// docs are the files whose examples are generated, relative to the
// module's root.
var docs = []string{"README.md", "docs/api.md", "docs/configuration.md", "docs/deploy.md", "docs/migrate.md"}

// buildCmd is the release build the docs show (docs/deploy.md); the
// generator builds the binary it runs with it.
const buildCmd = `go build -ldflags "-X visitors/internal/buildinfo.Version=v1.0.0 -X visitors/internal/buildinfo.Revision=$(git rev-parse HEAD)" ./cmd/visitors`

func main() {
	check := flag.Bool("check", false, "write nothing: fail with a diff when a doc differs from what the binary prints")
	flag.StringVar(&shotsMode, "shots", "yes", "the dashboard's screenshots in docs/ (never with -check): yes, no, or only (no examples)")
	flag.Usage = func() {
		fmt.Fprintf(flag.CommandLine.Output(), "usage: go run ./scripts/gendocs [-check]\n")
		flag.PrintDefaults()
	}
	flag.Parse()
	root, err := servertest.ModuleRoot()
	if err == nil {
		err = run(root, *check, os.Stdout)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "gendocs:", err)
		os.Exit(1)
	}
}

// shotsMode is -shots: whether run makes the dashboard's screenshots.
var shotsMode = "yes"

// run regenerates the docs under root; with check it writes none and
// returns an error, after printing the diffs to w, if any differs. It
// first fails if a relative link of README.md or docs/ is broken
// (CheckLinks).
func run(root string, check bool, w io.Writer) error {
	start := time.Now()
	if err := CheckLinks(root); err != nil {
		return err
	}
	tmp, err := os.MkdirTemp("", "gendocs-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	bin := filepath.Join(tmp, "bin")
	if err := os.Mkdir(bin, 0o755); err != nil {
		return err
	}
	build := exec.Command("bash", "-c", strings.Replace(buildCmd, "go build ", "go build -o "+filepath.Join(bin, "visitors")+" ", 1))
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		return fmt.Errorf("%s: %v\n%s", buildCmd, err, out)
	}
	fmt.Fprintf(os.Stderr, "gendocs: built visitors in %.1fs\n", time.Since(start).Seconds())
	if !check && shotsMode != "no" {
		if err := shots(root, filepath.Join(bin, "visitors"), tmp, w); err != nil {
			return err
		}
		if shotsMode == "only" {
			return nil
		}
	}
	var fresh map[string]string
	for try := 0; ; try++ {
		day := time.Now().UTC().Format(time.DateOnly)
		fresh, err = runAll(root, tmp, filepath.Join(bin, "visitors"))
		if err != nil {
			return err
		}
		// A run across UTC midnight counted on two days: run again.
		if time.Now().UTC().Format(time.DateOnly) == day || try == 1 {
			break
		}
	}
	changed := 0
	var diffs bytes.Buffer
	files := map[string]string{}
	for _, name := range docs {
		b, err := os.ReadFile(filepath.Join(root, name))
		if err != nil {
			return err
		}
		files[name] = string(b)
	}
	if !strings.Contains(files["docs/deploy.md"], "\n"+buildCmd+"\n") {
		return fmt.Errorf("docs/deploy.md does not show the build command the examples' binary is built with:\n%s", buildCmd)
	}
	updated, err := merge(files, fresh, check)
	if err != nil {
		return err
	}
	for _, name := range docs {
		if updated[name] == files[name] {
			continue
		}
		changed++
		if !check {
			if err := os.WriteFile(filepath.Join(root, name), []byte(updated[name]), 0o644); err != nil {
				return err
			}
			fmt.Fprintf(w, "gendocs: wrote %s\n", name)
			continue
		}
		d, err := diff(tmp, name, files[name], updated[name])
		if err != nil {
			return err
		}
		diffs.WriteString(d)
	}
	fmt.Fprintf(w, "gendocs: %d examples in %d files, %d changed, in %.1fs\n", len(fresh), len(docs), changed, time.Since(start).Seconds())
	if check && changed > 0 {
		w.Write(diffs.Bytes())
		return fmt.Errorf("%d docs differ from what the binary prints: run go run ./scripts/gendocs and commit the result", changed)
	}
	return nil
}

// diff returns diff -u of a doc's old and new text.
func diff(tmp, name, old, new string) (string, error) {
	a, b := filepath.Join(tmp, "a", name), filepath.Join(tmp, "b", name)
	for f, s := range map[string]string{a: old, b: new} {
		if err := os.MkdirAll(filepath.Dir(f), 0o755); err != nil {
			return "", err
		}
		if err := os.WriteFile(f, []byte(s), 0o644); err != nil {
			return "", err
		}
	}
	cmd := exec.Command("diff", "-u", "--label", "doc/"+name, "--label", "binary/"+name, a, b)
	out, err := cmd.Output()
	if err != nil && cmd.ProcessState.ExitCode() != 1 {
		return "", fmt.Errorf("diff: %v", err)
	}
	return string(out), nil
}

// markerRE finds an example's markers and what is between them.
var markerRE = regexp.MustCompile(`(?s)<!-- example: ([a-z0-9-]+) -->\n(.*?)<!-- /example -->`)

// merge returns files with each example's block replaced by fresh's,
// session by session: a session whose every block is, masked, what the
// docs hold keeps the docs' text. With blocksOnly (for -check's diff),
// only the blocks that differ masked are replaced. It fails on a marker
// without an example, an example without a marker, or a marker given
// twice.
func merge(files, fresh map[string]string, blocksOnly bool) (map[string]string, error) {
	have := map[string]string{}
	for _, name := range docs {
		for _, m := range markerRE.FindAllStringSubmatch(files[name], -1) {
			if _, dup := have[m[1]]; dup {
				return nil, fmt.Errorf("%s: example %s is shown twice", name, m[1])
			}
			if _, ok := fresh[m[1]]; !ok {
				return nil, fmt.Errorf("%s: example %s: gendocs has no such example", name, m[1])
			}
			have[m[1]] = m[2]
		}
	}
	use := map[string]string{}
	for _, s := range sessions {
		same := true
		for _, e := range s.examples {
			old, ok := have[e.name]
			if !ok {
				return nil, fmt.Errorf("no doc shows the example %s (<!-- example: %s -->)", e.name, e.name)
			}
			same = same && mask(old) == mask(fresh[e.name])
		}
		for _, e := range s.examples {
			use[e.name] = fresh[e.name]
			if same || blocksOnly && mask(have[e.name]) == mask(fresh[e.name]) {
				use[e.name] = have[e.name]
			}
		}
	}
	out := map[string]string{}
	for name, text := range files {
		out[name] = markerRE.ReplaceAllStringFunc(text, func(m string) string {
			n := markerRE.FindStringSubmatch(m)[1]
			return "<!-- example: " + n + " -->\n" + use[n] + "<!-- /example -->"
		})
	}
	return out, nil
}

// masks are what varies from run to run, in the order they apply, with
// what each is compared as.
var masks = []struct {
	re   *regexp.Regexp
	with string
}{
	{regexp.MustCompile(`\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z`), "TIME"},
	{regexp.MustCompile(`\d{4}-\d\d-\d\dT\d{6}Z`), "TIME"},
	{regexp.MustCompile(`\d{4}-\d\d-\d\d`), "DATE"},
	{regexp.MustCompile(`vt_[A-Za-z0-9-]+\.[A-Za-z0-9_-]+`), "TOKEN"},
	{regexp.MustCompile(`key-[0-9a-f]{32}`), "KEYID"},
	{regexp.MustCompile(`\b[0-9a-f]{16}\b`), "ID"},
	{regexp.MustCompile(`\b[0-9a-f]{40}\b`), "REVISION"},
	{regexp.MustCompile(`(Latency: |"latency":")[0-9.]+[nµm]?s`), "${1}LATENCY"},
	{regexp.MustCompile(`"latency_ns":\d+`), `"latency_ns":N`},
	{regexp.MustCompile(`(Hostname: |"hostname":")[^\s"]+`), "${1}HOST"},
	{regexp.MustCompile(`curl/[0-9.]+`), "curl/VERSION"},
	{regexp.MustCompile(`go1\.\d+(\.\d+)?(rc\d+)?`), "GOVERSION"},
	{regexp.MustCompile(`\b(linux|darwin|windows|freebsd)/(amd64|arm64|386|arm)\b`), "PLATFORM"},
	{regexp.MustCompile(`Retry-After: \d+`), "Retry-After: N"},
}

// mask returns s with what varies from run to run replaced.
func mask(s string) string {
	for _, m := range masks {
		s = m.re.ReplaceAllString(s, m.with)
	}
	return s
}

// runAll runs every session and returns each example's block.
func runAll(root, tmp, bin string) (map[string]string, error) {
	out := map[string]string{}
	for i, s := range sessions {
		dir := filepath.Join(tmp, fmt.Sprintf("session%d-%s", i, s.name))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, err
		}
		r := &runner{root: root, dir: dir, bin: bin}
		begun := time.Now()
		err := r.session(s, out)
		r.close()
		fmt.Fprintf(os.Stderr, "gendocs: session %s: %d examples in %.1fs\n", s.name, len(s.examples), time.Since(begun).Seconds())
		if err != nil {
			return nil, fmt.Errorf("session %s: %w", s.name, err)
		}
	}
	return out, nil
}

// runner runs one session: its server, its Redis and its commands.
type runner struct {
	root, dir, bin string
	proc           *servertest.Proc
	redis          *redistest.Server
	senv           []string // the server's environment, which its commands see too
	vars           []string // variables that commands set for later ones: NAME=value
	cmdRepl        *strings.Replacer
	outRepl        *strings.Replacer
}

func (r *runner) close() {
	if r.proc != nil {
		r.proc.Stop(syscall.SIGKILL, 10*time.Second)
	}
	if r.redis != nil {
		r.redis.Close()
	}
}

func (r *runner) session(s session, out map[string]string) error {
	// ./visitors and visitors are both the binary, as the docs write it.
	if err := os.Symlink(r.bin, filepath.Join(r.dir, "visitors")); err != nil {
		return err
	}
	r.senv = s.env
	cmdPairs := []string{}
	outPairs := []string{r.dir + "/", "./", r.dir, "."}
	if s.redis {
		srv, err := redistest.Start(r.dir)
		if err != nil {
			return err
		}
		r.redis = srv
		cmdPairs = append(cmdPairs, "127.0.0.1:6379", srv.Addr)
		outPairs = append(outPairs, srv.Addr, "127.0.0.1:6379")
	}
	if s.args != nil {
		args := append(slices.Clone(s.args), "-data", filepath.Join(r.dir, "server-data"))
		p, err := servertest.StartErr(r.bin, s.env, args...)
		if err != nil {
			return err
		}
		r.proc = p
		cmdPairs = append(cmdPairs, "localhost:8080", p.Addr, "127.0.0.1:8080", p.Addr, "localhost:6060", p.AdminAddr)
		outPairs = append(outPairs, p.Addr, "localhost:8080", p.AdminAddr, "localhost:6060")
	}
	for _, p := range s.paths {
		from, to, _ := strings.Cut(p, "=")
		to = strings.NewReplacer("$ROOT", r.root, "$DIR", r.dir).Replace(to)
		cmdPairs = append(cmdPairs, from, to)
		outPairs = append(outPairs, to, from)
	}
	r.cmdRepl = strings.NewReplacer(cmdPairs...)
	// Longer strings first, so that a directory's path is replaced
	// before its parent's.
	r.outRepl = newLongestFirst(outPairs)
	for _, e := range s.examples {
		text, err := r.example(s, e)
		if err != nil {
			return fmt.Errorf("example %s: %w", e.name, err)
		}
		out[e.name] = text
	}
	return nil
}

// newLongestFirst is strings.NewReplacer with the longest old strings
// tried first.
func newLongestFirst(pairs []string) *strings.Replacer {
	type pair struct{ old, new string }
	var ps []pair
	for i := 0; i+1 < len(pairs); i += 2 {
		ps = append(ps, pair{pairs[i], pairs[i+1]})
	}
	slices.SortStableFunc(ps, func(a, b pair) int { return len(b.old) - len(a.old) })
	var flat []string
	for _, p := range ps {
		flat = append(flat, p.old, p.new)
	}
	return strings.NewReplacer(flat...)
}

// example runs e's steps and returns its block.
func (r *runner) example(s session, e example) (string, error) {
	var b strings.Builder
	switch e.kind {
	case "server":
		fmt.Fprintf(&b, "```sh\n%s\n```\n", s.shown())
		return b.String(), nil
	case "flags":
		out, err := exec.Command(r.bin, "-h").Output()
		if err != nil {
			return "", fmt.Errorf("visitors -h: %v", err)
		}
		return flagsTable(string(out))
	}
	lang := e.lang
	if lang == "" {
		lang = "console"
	}
	prompt := e.prompt
	if prompt == "" {
		prompt = "$ "
	}
	fmt.Fprintf(&b, "```%s\n", lang)
	for _, st := range e.steps {
		var out string
		var err error
		switch {
		case st.log != "":
			out, err = r.logLine(st.log)
		case st.events > 0:
			out, err = r.stream(st)
		default:
			out, err = r.sh(st.cmd, st.hidden)
		}
		if err != nil {
			return "", err
		}
		for _, v := range st.set {
			name, field, _ := strings.Cut(v, "=")
			m := regexp.MustCompile(`"` + field + `": "([^"]*)"`).FindStringSubmatch(out)
			if m == nil {
				return "", fmt.Errorf("%s printed no %q field for $%s:\n%s", st.cmd, field, name, out)
			}
			r.vars = append(r.vars, name+"="+m[1])
		}
		if st.hidden {
			continue
		}
		if st.log == "" {
			b.WriteString(prompt + st.cmd + "\n")
		}
		out = r.outRepl.Replace(out)
		b.WriteString(out)
		if out != "" && !strings.HasSuffix(out, "\n") {
			b.WriteString("\n")
		}
	}
	b.WriteString("```\n")
	return b.String(), nil
}

// env is the environment of the session's commands.
func (r *runner) env() []string {
	env := append(os.Environ(), "PATH="+r.dir+string(os.PathListSeparator)+os.Getenv("PATH"))
	return append(append(env, r.senv...), r.vars...)
}

// sh runs cmd with bash in the session's directory and returns what it
// printed on stdout and stderr. A hidden command must succeed; a shown
// one may fail, as the docs' refused commands do.
func (r *runner) sh(cmd string, hidden bool) (string, error) {
	c := exec.Command("bash", "-c", r.cmdRepl.Replace(cmd))
	c.Dir = r.dir
	c.Env = r.env()
	var out bytes.Buffer
	c.Stdout, c.Stderr = &out, &out
	err := c.Run()
	if _, exit := err.(*exec.ExitError); err != nil && (!exit || hidden) {
		return "", fmt.Errorf("%s: %v\n%s", cmd, err, out.String())
	}
	return out.String(), nil
}

// stream runs st.cmd, which prints server-sent events, until it has
// printed st.events of them; after the first it runs st.then, hidden.
func (r *runner) stream(st step) (string, error) {
	c := exec.Command("bash", "-c", "exec "+r.cmdRepl.Replace(st.cmd))
	c.Dir = r.dir
	c.Env = r.env()
	stdout, err := c.StdoutPipe()
	if err != nil {
		return "", err
	}
	if err := c.Start(); err != nil {
		return "", err
	}
	defer func() {
		c.Process.Kill()
		c.Wait()
	}()
	done := make(chan error, 1)
	var out strings.Builder
	go func() {
		sc := bufio.NewScanner(stdout)
		events := 0
		for sc.Scan() {
			line := sc.Text()
			out.WriteString(line + "\n")
			if line == "" && events > 0 {
				if events == 1 && st.then != "" {
					if _, err := r.sh(st.then, true); err != nil {
						done <- err
						return
					}
				}
				if events == st.events {
					done <- nil
					return
				}
			}
			if strings.HasPrefix(line, "data:") {
				events++
			}
		}
		done <- fmt.Errorf("%s ended after %q", st.cmd, out.String())
	}()
	select {
	case err := <-done:
		return out.String(), err
	case <-time.After(30 * time.Second):
		c.Process.Kill()
		return "", fmt.Errorf("%s: no %d events within 30s", st.cmd, st.events)
	}
}

// logLine returns the first line of the server's stdout that holds
// substr, waiting a second at most for it (the log is buffered).
func (r *runner) logLine(substr string) (string, error) {
	deadline := time.Now().Add(5 * time.Second)
	for {
		for line := range strings.Lines(r.proc.Stdout()) {
			if strings.Contains(line, substr) {
				return line, nil
			}
		}
		if time.Now().After(deadline) {
			return "", fmt.Errorf("the server logged no line with %s:\n%s", substr, r.proc.Stdout())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// flagLineRE is a flag's line of visitors -h: the name and its
// argument's placeholder.
var flagLineRE = regexp.MustCompile(`^  -([a-z0-9-]+)(?: (.+))?$`)

// defaultRE is the end of a flag's description: its default and its
// variable.
var defaultRE = regexp.MustCompile(`^(.*) \(default "(.*)"; env (VISITORS_[A-Z0-9_]+)\)$`)

// flagsTable renders visitors -h's flags as a Markdown table.
func flagsTable(usage string) (string, error) {
	var b strings.Builder
	b.WriteString("| flag | default | variable | meaning |\n| --- | --- | --- | --- |\n")
	lines := strings.Split(usage, "\n")
	n := 0
	for i := 0; i < len(lines); i++ {
		m := flagLineRE.FindStringSubmatch(lines[i])
		if m == nil || i+1 >= len(lines) {
			continue
		}
		d := defaultRE.FindStringSubmatch(strings.TrimSpace(lines[i+1]))
		if d == nil {
			return "", fmt.Errorf("visitors -h: -%s: no (default …; env …) in %q", m[1], lines[i+1])
		}
		i++
		flagCell := "`-" + m[1] + "`"
		if m[2] != "" {
			flagCell += " " + m[2]
		}
		def := ""
		if d[2] != "" {
			def = "`" + strings.ReplaceAll(d[2], "|", `\|`) + "`"
		}
		fmt.Fprintf(&b, "| %s | %s | `%s` | %s |\n", flagCell, def, d[3], cell(d[1]))
		n++
	}
	if n < 30 {
		return "", fmt.Errorf("visitors -h: found %d flags; the usage's form changed", n)
	}
	return b.String(), nil
}

// cell escapes s for a Markdown table's cell.
func cell(s string) string {
	return strings.NewReplacer("|", `\|`, "<", "&lt;", ">", "&gt;").Replace(s)
}
