package runner

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"
)

// benchLine is a result line of go test -bench: its name without
// "Benchmark" and the GOMAXPROCS suffix.
var benchLine = regexp.MustCompile(`^Benchmark(\S+?)(?:-\d+)?\s+\d+\s`)

// discover runs every benchmark of bin once (-benchtime 1x), as a smoke
// run, and returns their names ("Greeting/step=0") in order and the
// configuration lines go test printed (goos, goarch, pkg, cpu).
func discover(ctx context.Context, bin string) (names, config []string, err error) {
	out, err := output(ctx, bin, "-test.run", "^$", "-test.bench", ".", "-test.benchtime", "1x")
	if err != nil {
		return nil, nil, err
	}
	for _, line := range strings.Split(out, "\n") {
		if m := benchLine.FindStringSubmatch(line); m != nil {
			names = append(names, m[1])
		} else if k, _, ok := strings.Cut(line, ": "); ok && (k == "goos" || k == "goarch" || k == "pkg" || k == "cpu") {
			config = append(config, line)
		}
	}
	if len(names) == 0 {
		return nil, nil, fmt.Errorf("%s: no benchmarks", bin)
	}
	return names, config, nil
}

// benchPattern returns the -test.bench pattern that selects exactly the
// benchmark name ("Greeting/step=0": ^BenchmarkGreeting$/^step=0$).
func benchPattern(name string) string {
	parts := strings.Split(name, "/")
	for i, p := range parts {
		if i == 0 {
			p = "Benchmark" + p
		}
		parts[i] = "^" + regexp.QuoteMeta(p) + "$"
	}
	return strings.Join(parts, "/")
}

// interleave runs each benchmark of names once per round, for rounds
// rounds, one process per run, in step order and then in reverse order
// on alternate rounds, so that every step and the one before it are
// measured side by side and a slow minute of the machine falls on both.
// It returns the result lines in the order they were measured.
func interleave(ctx context.Context, bin string, names []string, rounds int, benchtime string, progress io.Writer) ([]string, error) {
	var lines []string
	for r := range rounds {
		order := names
		if r%2 == 1 {
			order = make([]string, len(names))
			for i, n := range names {
				order[len(names)-1-i] = n
			}
		}
		fmt.Fprintf(progress, "lab: %s round %d of %d\n", filepath.Base(bin), r+1, rounds)
		for _, n := range order {
			out, err := output(ctx, bin, "-test.run", "^$", "-test.bench", benchPattern(n), "-test.benchtime", benchtime)
			if err != nil {
				return nil, err
			}
			found := false
			for _, line := range strings.Split(out, "\n") {
				if benchLine.MatchString(line) {
					lines = append(lines, line)
					found = true
				}
			}
			if !found {
				return nil, fmt.Errorf("%s %s: no result in\n%s", bin, n, out)
			}
		}
	}
	return lines, nil
}

// treeState is the commit checked out and the changes not committed in
// the folders the figures measure, taken before the test binaries are
// built from them.
type treeState struct{ commit, dirty string }

func currentTree(ctx context.Context) (treeState, error) {
	commit, err := output(ctx, "git", "rev-parse", "HEAD")
	if err != nil {
		return treeState{}, err
	}
	dirty, err := output(ctx, "git", "status", "--porcelain", "--", "lab", "internal", "cmd", "go.mod", "go.sum")
	if err != nil {
		return treeState{}, err
	}
	return treeState{commit, dirty}, nil
}

// measure benchmarks every case, interleaved, and writes bench.txt under
// dir: configuration lines that say where and when (the commit whose
// tree was measured, and whether that tree had changes not committed),
// then each package's results.
func measure(ctx context.Context, c Config, dir string, tree treeState, bins map[string]string, stderr io.Writer) error {
	commit, dirty := tree.commit, tree.dirty
	goVersion, err := output(ctx, "go", "env", "GOVERSION")
	if err != nil {
		return err
	}
	var b strings.Builder
	fmt.Fprintf(&b, "commit: %s\n", strings.TrimSpace(commit))
	if strings.TrimSpace(dirty) != "" {
		b.WriteString("commit-tree: with changes not committed in lab, internal or cmd\n")
	}
	fmt.Fprintf(&b, "measured: %s\n", time.Now().UTC().Format("2006-01-02 15:04 MST"))
	fmt.Fprintf(&b, "go: %s\n", strings.TrimSpace(goVersion))
	fmt.Fprintf(&b, "rounds: %d\n", c.Count)
	fmt.Fprintf(&b, "benchtime: %s\n", c.Benchtime)
	if c.Note != "" {
		fmt.Fprintf(&b, "note: %s\n", c.Note)
	}
	for _, cs := range Cases {
		names, config, err := discover(ctx, bins[cs.Name])
		if err != nil {
			return err
		}
		lines, err := interleave(ctx, bins[cs.Name], names, c.Count, c.Benchtime, stderr)
		if err != nil {
			return err
		}
		b.WriteString("\n")
		for _, l := range config {
			b.WriteString(l + "\n")
		}
		for _, l := range lines {
			b.WriteString(l + "\n")
		}
	}
	return os.WriteFile(filepath.Join(dir, "bench.txt"), []byte(b.String()), 0o644)
}

// benchConfig returns the configuration lines of a bench.txt ("commit",
// "measured", …) before its first package.
func benchConfig(text string) map[string]string {
	m := map[string]string{}
	sc := bufio.NewScanner(strings.NewReader(text))
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "goos:") || strings.HasPrefix(line, "Benchmark") {
			break
		}
		if k, v, ok := strings.Cut(line, ": "); ok {
			m[k] = v
		}
	}
	return m
}
