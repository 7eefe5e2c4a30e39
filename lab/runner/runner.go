// Package runner runs the whole lab for cmd/lab: every step of the four
// case studies benchmarked side by side in one go test run, summarised
// per case with golang.org/x/perf's benchmath; then, step by step, the
// diff from the previous step (from the step functions' source), a CPU
// and an allocation profile, and for the digest case the compiler's
// escape analysis. It writes the tables, the charts and the raw output
// under docs/lab, and the per-step sections into docs/lab.md between
// their markers.
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
	"runtime"
	"strings"
	"time"

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

// Cases are the lab's four case studies, in the order of docs/lab.md.
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
	Count     int    // runs of each benchmark
	Benchtime string // go test -benchtime of each run; "" for go's default
	Out       string // the folder that holds lab.md and lab/
	Profiles  bool   // profile every step
	ProfTime  string // -benchtime of each profiling run
}

// Main runs cmd/lab with args, printing the tables to stdout and progress
// to stderr.
func Main(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("lab", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var c Config
	fs.IntVar(&c.Count, "count", 10, "runs of each benchmark (benchstat wants 10)")
	fs.StringVar(&c.Benchtime, "benchtime", "", "go test -benchtime for each run (default go's 1s)")
	fs.StringVar(&c.Out, "out", "docs", "folder holding lab.md, whose step sections are rewritten, and lab/")
	fs.BoolVar(&c.Profiles, "profiles", true, "profile every step (CPU and allocations)")
	fs.StringVar(&c.ProfTime, "profile-benchtime", "1s", "-benchtime of each profiling run (-benchtime, if set, wins)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if c.Benchtime != "" {
		c.ProfTime = c.Benchtime
	}
	return Run(ctx, c, stdout, stderr)
}

// Run runs the lab as c says.
func Run(ctx context.Context, c Config, stdout, stderr io.Writer) error {
	dir := filepath.Join(c.Out, "lab")
	if err := os.MkdirAll(filepath.Join(dir, "profiles"), 0o755); err != nil {
		return fmt.Errorf("create %s: %w", dir, err)
	}
	goVersion, err := output(ctx, "go", "env", "GOVERSION")
	if err != nil {
		return err
	}
	goVersion = strings.TrimSpace(goVersion)

	goArgs := []string{"test", "-run", "^$", "-bench", ".", "-benchmem", "-count", fmt.Sprint(c.Count)}
	if c.Benchtime != "" {
		goArgs = append(goArgs, "-benchtime", c.Benchtime)
	}
	for _, cs := range Cases {
		goArgs = append(goArgs, cs.Pkg)
	}
	cmdline := "go " + strings.Join(quoteArgs(goArgs), " ")
	fmt.Fprintf(stderr, "lab: %s\n", cmdline)
	started := time.Now().UTC()
	// One go test run holds every case, so every step is measured under
	// the same conditions, interleaved as closely as go test allows.
	raw, err := output(ctx, "go", goArgs...)
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "bench.txt"), []byte(raw), 0o644); err != nil {
		return fmt.Errorf("write bench.txt: %w", err)
	}
	tables, err := report.Parse(strings.NewReader(raw), "bench.txt")
	if err != nil {
		return err
	}
	caption := fmt.Sprintf("%s · %s/%s · %d CPUs · %s · median of %d runs · go run ./cmd/lab",
		goVersion, runtime.GOOS, runtime.GOARCH, runtime.NumCPU(), started.Format("2006-01-02"), c.Count)
	if err := writeTables(dir, caption, cmdline, tables, stdout); err != nil {
		return err
	}

	sections := map[string]string{}
	for _, cs := range Cases {
		fmt.Fprintf(stderr, "lab: steps of %s\n", cs.Name)
		s, err := caseSection(ctx, c, cs, dir, tables, stderr)
		if err != nil {
			return fmt.Errorf("%s: %w", cs.Name, err)
		}
		sections[cs.Name] = fmt.Sprintf("_Generated by `go run ./cmd/lab` (%s); do not edit between the markers._\n\n%s", caption, s)
	}
	sections["closing"] = fmt.Sprintf("_Generated by `go run ./cmd/lab` (%s); do not edit between the markers._\n\n%s", caption, closingTable(Cases, tables))
	if err := Splice(filepath.Join(c.Out, "lab.md"), sections, append(Cases, Case{Name: "closing"})); err != nil {
		return err
	}
	fmt.Fprintf(stderr, "lab: wrote %s and the step sections of %s\n", dir, filepath.Join(c.Out, "lab.md"))
	return nil
}

// writeTables prints every table to stdout and writes tables.md and a
// chart per table under dir.
func writeTables(dir, caption, cmdline string, tables []report.Table, stdout io.Writer) error {
	var md bytes.Buffer
	fmt.Fprintf(&md, "<!-- Written by go run ./cmd/lab; do not edit. -->\n# Lab tables\n\n%s\n\nCommand: `%s`\n", caption, cmdline)
	for _, t := range tables {
		if err := t.WriteText(stdout); err != nil {
			return fmt.Errorf("print %s: %w", t.Bench, err)
		}
		fmt.Fprintln(stdout)
		fmt.Fprintf(&md, "\n## %s\n\n![%s](%s)\n\n", t.Bench, t.Bench, ChartFile(t.Bench))
		if err := t.WriteMarkdown(&md); err != nil {
			return fmt.Errorf("%s: %w", t.Bench, err)
		}
		var svg bytes.Buffer
		if err := t.WriteSVG(&svg, caption); err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(dir, ChartFile(t.Bench)), svg.Bytes(), 0o644); err != nil {
			return fmt.Errorf("write %s: %w", ChartFile(t.Bench), err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "tables.md"), md.Bytes(), 0o644); err != nil {
		return fmt.Errorf("write tables.md: %w", err)
	}
	return nil
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

// quoteArgs quotes the arguments a shell would split or expand.
func quoteArgs(args []string) []string {
	q := make([]string, len(args))
	for i, a := range args {
		if strings.ContainsAny(a, "^$*?[]() '\"|\\") {
			a = "'" + a + "'"
		}
		q[i] = a
	}
	return q
}
