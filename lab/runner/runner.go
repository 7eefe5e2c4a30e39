// Package runner runs the lab for cmd/lab. It measures every step of
// the four case studies in interleaved rounds, one process per run, so
// that each step is compared with the one before it under the same
// conditions (benchstat's test, through golang.org/x/perf's benchmath),
// and profiles each step; it stores the raw figures and profiles under
// docs/lab with the commit measured. Regenerate then writes, without
// running a benchmark, the tables, the charts, the provenance and
// closing sections of docs/lab.md and the per-step sections of each
// case's page, docs/lab/<case>.md (diffs from the step functions' source, escape
// analysis, profile excerpts with their line numbers mapped to the
// source as it is now), so that CI can check they are fresh. RunStep
// runs one step against the previous one, for a reader at the keyboard.
package runner

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"visitors/internal/servertest"
	"visitors/lab/report"
)

// Case is one case study of the lab.
type Case struct {
	Name  string   // greeting
	Pkg   string   // ./lab/greeting
	Bench string   // the serial benchmark without "Benchmark": Greeting
	Funcs []string // the function of each step, by step number
	// Service is the regexp of the service's handler method, listed in
	// the profile of the last step, which only calls internal/web; "" if
	// the last step is the case's own code.
	Service string
	Escape  bool // capture -gcflags=-m for each step
	// Seed names, by step, the seed's step each lab step rebuilds and
	// how faithfully, for the closing table.
	Seed []SeedStep
}

// SeedStep is the seed's side of one lab step.
type SeedStep struct {
	Name     string // the seed's step, as the seed names or shows it
	Faithful string // "yes", "reconstructed", "the lab's", "the service", with a reason
}

func steps(n int) []string {
	f := make([]string, n)
	for i := range f {
		f[i] = fmt.Sprintf("Step%d", i)
	}
	return f
}

// Cases are the lab's four case studies, in the order of docs/lab.md;
// each has its page, docs/lab/<Name>.md.
var Cases = []Case{
	{Name: "greeting", Pkg: "./lab/greeting", Bench: "Greeting", Funcs: steps(10), Service: `web\.\(\*Server\)\.handleHi\b`,
		Seed: []SeedStep{
			{"the demo: MatchString per request", "yes"},
			{"colorRx, unanchored", "yes"},
			{"no Content-Type (mem.1)", "yes"},
			{"fmt.Fprintf (mem.2)", "yes"},
			{"mutex, recorder reused (mem.3)", "yes (the recorder: the lab's harness reuses it at every step)"},
			{"bufPool", "yes, lost quote kept"},
			{"colorRxPool", "yes, missing Put kept"},
			{"nextVisitorNum, defer", "yes"},
			{"atomic.AddInt64", "yes"},
			{"—", "the service"},
		}},
	{Name: "digest", Pkg: "./lab/digest", Bench: "Digest", Funcs: append(steps(9), "AppendDigestDirect", "AppendDigest"), Escape: true,
		Seed: []SeedStep{
			{"foo", "yes"},
			{"Itoa hoisted", "yes"},
			{"x%26", "yes"},
			{"make(…, sum[0])", "yes"},
			{"unsafe string return", "yes"},
			{"[]byte input buffer", "yes"},
			{"bufPool, hashPool", "yes"},
			{"make(…, 256)", "yes"},
			{"copy into pooled sum, unsafe return", "yes, alias kept"},
			{"—", "the lab's: step 8 made safe"},
			{"—", "the lab's: 8 KiB blocks"},
		}},
	{Name: "hello", Pkg: "./lab/hello", Bench: "Hello", Funcs: steps(9), Service: `web\.\(\*Server\)\.handleHello\b`,
		Seed: []SeedStep{
			{"1_orig", "yes (TextFormatter, as benchmarked)"},
			{"2_fmtf", "yes, lost quote kept"},
			{"3_sync_pool_write", "yes"},
			{"4_sync_pool_writestring", "reconstructed (code not shown)"},
			{"5_sync_pool_log", "yes"},
			{"7_zerolog_string", "yes"},
			{"8_fmt_sprintf_to_bytes_write", "reconstructed from the final log code"},
			{"10_final", "yes, lost `</p>` kept"},
			{"—", "the service"},
		}},
	{Name: "whoami", Pkg: "./lab/whoami", Bench: "Whoami", Funcs: steps(5), Service: `web\.\(\*Server\)\.handleWhoami\b`,
		Seed: []SeedStep{
			{"os.Hostname per request, string slice", "reconstructed (no code published)"},
			{"host name once", "reconstructed"},
			{"bytes.Buffer, WriteString", "reconstructed"},
			{"sync.Pool", "reconstructed"},
			{"—", "the service"},
		}},
}

// Config is one run of the lab.
type Config struct {
	Count     int    // rounds: runs of each benchmark, interleaved
	Benchtime string // go test -benchtime of each run
	Out       string // the folder that holds lab.md and lab/ (the case pages, figures and charts)
	Profiles  bool   // profile every step
	ProfTime  string // -benchtime of each profiling run
	Note      string // said of the machine in bench.txt and the captions
	// Regen rewrites only what needs no benchmark, from the figures and
	// profiles stored under Out/lab; Check does the same and writes
	// nothing, failing if a file would change.
	Regen, Check bool
	// Case and Step, if Case is set, run one step: its benchmark
	// interleaved with the previous step's, its profiles and its diff,
	// printed; nothing is written.
	Case string
	Step int
}

// Main runs cmd/lab with args, printing the tables to stdout and progress
// to stderr.
func Main(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("lab", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var c Config
	fs.IntVar(&c.Count, "count", 10, "rounds: runs of each benchmark, interleaved step by step (benchstat wants 10)")
	fs.StringVar(&c.Benchtime, "benchtime", "200ms", "go test -benchtime of each run")
	fs.StringVar(&c.Out, "out", "docs", "folder holding lab.md and lab/ (the case pages <case>.md), whose generated sections are rewritten")
	fs.BoolVar(&c.Profiles, "profiles", true, "profile every step (CPU and allocations)")
	fs.StringVar(&c.ProfTime, "profile-benchtime", "1s", "-benchtime of each profiling run")
	fs.StringVar(&c.Note, "note", "", "what to say of the machine (\"busy: other builds ran on its 2 cores\")")
	fs.BoolVar(&c.Regen, "regen", false, "run no benchmark: rewrite the diffs, escape analysis, line references, tables and charts from the stored figures")
	fs.BoolVar(&c.Check, "check", false, "as -regen, but write nothing and fail if docs/lab.md or docs/lab/ (the case pages, tables, charts) would change (CI)")
	fs.StringVar(&c.Case, "case", "", "run one step of this case (greeting, digest, hello, whoami): with -step")
	fs.IntVar(&c.Step, "step", 0, "the step -case runs, compared with the step before it")
	if err := fs.Parse(args); err != nil {
		return err
	}
	switch {
	case c.Case != "":
		return RunStep(ctx, c, stdout, stderr)
	case c.Regen || c.Check:
		return Regenerate(ctx, c, stdout, stderr)
	}
	return Run(ctx, c, stdout, stderr)
}

// Run measures the lab as c says, into Out/lab/bench.txt and
// Out/lab/profiles, then regenerates everything else from them.
func Run(ctx context.Context, c Config, stdout, stderr io.Writer) error {
	dir := filepath.Join(c.Out, "lab")
	if err := os.MkdirAll(filepath.Join(dir, "profiles"), 0o755); err != nil {
		return fmt.Errorf("create %s: %w", dir, err)
	}
	tmp, err := os.MkdirTemp("", "lab-")
	if err != nil {
		return fmt.Errorf("temp dir: %w", err)
	}
	defer os.RemoveAll(tmp)
	tree, err := currentTree(ctx) // before the build, which is what is measured
	if err != nil {
		return err
	}
	bins := map[string]string{}
	for _, cs := range Cases {
		bin := filepath.Join(tmp, cs.Name+".test")
		if _, err := output(ctx, "go", "test", "-c", "-o", bin, cs.Pkg); err != nil {
			return err
		}
		bins[cs.Name] = bin
	}
	started := time.Now()
	if err := measure(ctx, c, dir, tree, bins, stderr); err != nil {
		return err
	}
	fmt.Fprintf(stderr, "lab: benchmarks took %s\n", time.Since(started).Round(time.Second))
	if c.Profiles {
		root, err := moduleRoot()
		if err != nil {
			return err
		}
		for _, cs := range Cases {
			p := &profiler{cs: cs, bin: bins[cs.Name], dir: tmp, benchtime: c.ProfTime, root: root}
			for i, fn := range cs.Funcs {
				fmt.Fprintf(stderr, "lab: profiling %s step %d\n", cs.Name, i)
				text, err := p.profile(ctx, i, fn)
				if err != nil {
					return err
				}
				if err := os.WriteFile(profileFile(dir, cs.Name, i), []byte(text), 0o644); err != nil {
					return err
				}
			}
		}
	}
	return Regenerate(ctx, c, stdout, stderr)
}

// profileFile is where the profiles of one step are kept.
func profileFile(dir, name string, step int) string {
	return filepath.Join(dir, "profiles", fmt.Sprintf("%s-step%d.txt", name, step))
}

// moduleRoot returns the module's folder with a trailing separator.
func moduleRoot() (string, error) {
	root, err := servertest.ModuleRoot()
	if err != nil {
		return "", err
	}
	return root + string(filepath.Separator), nil
}

// tableFiles returns tables.md and a chart per table, by file name
// under docs/lab, and prints every table to stdout.
func tableFiles(caption, cmdline string, tables []report.Table, stdout io.Writer) (map[string][]byte, error) {
	files := map[string][]byte{}
	var md bytes.Buffer
	fmt.Fprintf(&md, "<!-- Written by go run ./cmd/lab; do not edit. -->\n# Lab tables\n\n%s\n\nCommand: `%s`\n", caption, cmdline)
	for _, t := range tables {
		if err := t.WriteText(stdout); err != nil {
			return nil, fmt.Errorf("print %s: %w", t.Bench, err)
		}
		fmt.Fprintln(stdout)
		fmt.Fprintf(&md, "\n## %s\n\n![%s](%s)\n\n", t.Bench, t.Bench, ChartFile(t.Bench))
		if err := t.WriteMarkdown(&md); err != nil {
			return nil, fmt.Errorf("%s: %w", t.Bench, err)
		}
		var svg bytes.Buffer
		if err := t.WriteSVG(&svg, caption); err != nil {
			return nil, err
		}
		files[ChartFile(t.Bench)] = svg.Bytes()
	}
	files["tables.md"] = md.Bytes()
	return files, nil
}

// ChartFile returns the file name of the chart of benchmark bench:
// greeting.svg for Greeting, greeting-parallel.svg for GreetingParallel.
func ChartFile(bench string) string {
	name, parallel := strings.CutSuffix(bench, "Parallel")
	name = strings.ToLower(name)
	if parallel {
		name += "-parallel"
	}
	return name + ".svg"
}

// output runs name with args and returns its standard output, with its
// standard error in the error if it fails.
func output(ctx context.Context, name string, args ...string) (string, error) {
	out, errb, err := run(ctx, name, args...)
	if err != nil {
		return "", fmt.Errorf("%s %s: %w\n%s%s", name, strings.Join(args, " "), err, errb, tail(out, 2000))
	}
	return out, nil
}

// run runs name with args and returns its standard output and error.
func run(ctx context.Context, name string, args ...string) (stdout, stderr string, err error) {
	var out, errb bytes.Buffer
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Stdout, cmd.Stderr = &out, &errb
	err = cmd.Run()
	return out.String(), errb.String(), err
}

func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}
