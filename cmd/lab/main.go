// Command lab runs the whole lab: every step of the four case studies,
// benchmarked side by side in one go test run, then summarised per case
// with golang.org/x/perf's benchmath. It prints a table per benchmark,
// writes docs/lab/<case>.svg bar charts, docs/lab/tables.md, the raw
// benchmark output docs/lab/bench.txt (for benchstat), and CPU and
// allocation profiles of the first and last step of each case.
//
//	go run ./cmd/lab              # -count=10: several minutes
//	go run ./cmd/lab -count 1 -benchtime 1x -out /tmp/lab   # a smoke run
package main

import (
	"bytes"
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

// labCase is one case study: its package, serial benchmark and last step.
type labCase struct {
	name, pkg, bench, last string
}

var cases = []labCase{
	{"greeting", "./lab/greeting", "Greeting", "5"},
	{"digest", "./lab/digest", "Digest", "6"},
	{"hello", "./lab/hello", "Hello", "7"},
	{"whoami", "./lab/whoami", "Whoami", "4"},
}

func main() {
	if err := run(os.Args[1:], os.Stdout, os.Stderr); err != nil {
		if err != flag.ErrHelp {
			fmt.Fprintf(os.Stderr, "lab: %v\n", err)
		}
		os.Exit(1)
	}
}

func run(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("lab", flag.ContinueOnError)
	fs.SetOutput(stderr)
	count := fs.Int("count", 10, "runs of each benchmark (benchstat wants 10)")
	benchtime := fs.String("benchtime", "", "go test -benchtime for each run (default go's 1s)")
	out := fs.String("out", "docs", "folder to write lab/ into")
	profiles := fs.Bool("profiles", true, "also take CPU and allocation profiles of the first and last steps")
	if err := fs.Parse(args); err != nil {
		return err
	}
	dir := filepath.Join(*out, "lab")
	if err := os.MkdirAll(filepath.Join(dir, "profiles"), 0o755); err != nil {
		return err
	}

	goVersion, err := output("go", "env", "GOVERSION")
	if err != nil {
		return err
	}
	cmdline := fmt.Sprintf("go test -run '^$' -bench . -benchmem -count %d", *count)
	if *benchtime != "" {
		cmdline += " -benchtime " + *benchtime
	}
	pkgs := make([]string, len(cases))
	for i, c := range cases {
		pkgs[i] = c.pkg
	}
	cmdline += " " + strings.Join(pkgs, " ")
	fmt.Fprintf(stderr, "lab: %s\n", cmdline)

	// One go test run holds every case, so every step is measured under
	// the same conditions, interleaved as closely as go test allows.
	goArgs := []string{"test", "-run", "^$", "-bench", ".", "-benchmem", "-count", fmt.Sprint(*count)}
	if *benchtime != "" {
		goArgs = append(goArgs, "-benchtime", *benchtime)
	}
	raw, err := output("go", append(goArgs, pkgs...)...)
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "bench.txt"), []byte(raw), 0o644); err != nil {
		return err
	}
	tables, err := report.Parse(strings.NewReader(raw), "bench.txt")
	if err != nil {
		return err
	}

	caption := fmt.Sprintf("%s · %s/%s · %d CPUs · %s · median of %d runs · go run ./cmd/lab",
		goVersion, runtime.GOOS, runtime.GOARCH, runtime.NumCPU(), time.Now().UTC().Format("2006-01-02"), *count)
	var md bytes.Buffer
	fmt.Fprintf(&md, "<!-- Written by go run ./cmd/lab; do not edit. -->\n# Lab tables\n\n%s\n\nCommand: `%s`\n", caption, cmdline)
	for _, t := range tables {
		if err := t.WriteText(stdout); err != nil {
			return err
		}
		fmt.Fprintln(stdout)
		fmt.Fprintf(&md, "\n## %s\n\n", t.Bench)
		if err := t.WriteMarkdown(&md); err != nil {
			return err
		}
		for _, c := range cases {
			if c.bench != t.Bench {
				continue
			}
			var svg bytes.Buffer
			if err := t.WriteSVG(&svg, caption); err != nil {
				return err
			}
			if err := os.WriteFile(filepath.Join(dir, c.name+".svg"), svg.Bytes(), 0o644); err != nil {
				return err
			}
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "tables.md"), md.Bytes(), 0o644); err != nil {
		return err
	}
	if *profiles {
		if err := takeProfiles(dir, *benchtime, stdout, stderr); err != nil {
			return err
		}
	}
	fmt.Fprintf(stderr, "lab: wrote %s\n", dir)
	return nil
}

// takeProfiles takes a CPU and an allocation profile of the first and the
// last step of each case, and writes the top of each beside it as text.
func takeProfiles(dir, benchtime string, stdout, stderr io.Writer) error {
	tmp, err := os.MkdirTemp("", "lab-profiles")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	if benchtime == "" {
		benchtime = "2s"
	}
	for _, c := range cases {
		bin := filepath.Join(tmp, c.name+".test")
		if _, err := output("go", "test", "-c", "-o", bin, c.pkg); err != nil {
			return err
		}
		for _, step := range []string{"0", c.last} {
			base := filepath.Join(dir, "profiles", fmt.Sprintf("%s-step%s", c.name, step))
			fmt.Fprintf(stderr, "lab: profiling %s step %s\n", c.name, step)
			if _, err := output(bin, "-test.run", "^$",
				"-test.bench", fmt.Sprintf("^Benchmark%s$/^step=%s$", c.bench, step),
				"-test.benchtime", benchtime, "-test.benchmem",
				"-test.cpuprofile", base+".cpu.pprof", "-test.memprofile", base+".mem.pprof"); err != nil {
				return err
			}
			var top bytes.Buffer
			for _, p := range []struct{ title, file, index string }{
				{"CPU", base + ".cpu.pprof", ""},
				{"allocations (alloc_space)", base + ".mem.pprof", "-sample_index=alloc_space"},
			} {
				args := []string{"tool", "pprof", "-top", "-nodecount=12"}
				if p.index != "" {
					args = append(args, p.index)
				}
				text, err := output("go", append(args, p.file)...)
				if err != nil {
					return err
				}
				fmt.Fprintf(&top, "# %s step %s: %s\n%s\n", c.name, step, p.title, text)
			}
			if err := os.WriteFile(base+".top.txt", top.Bytes(), 0o644); err != nil {
				return err
			}
		}
	}
	return nil
}

// output runs name with args and returns its standard output, with its
// standard error in the error if it fails.
func output(name string, args ...string) (string, error) {
	var out, errb bytes.Buffer
	cmd := exec.Command(name, args...)
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("%s %s: %v\n%s%s", name, strings.Join(args, " "), err, errb.String(), tail(out.String(), 2000))
	}
	return strings.TrimSpace(out.String()) + "\n", nil
}

func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}
