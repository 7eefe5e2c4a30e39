package runner

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"visitors/lab/report"
)

// RunStep runs one step of one case, c.Case and c.Step: its serial
// benchmark interleaved with the previous step's for c.Count rounds and
// compared as benchstat compares them, its CPU and allocation profiles,
// and its diff from the previous step. It prints everything to stdout
// and writes nothing under docs.
func RunStep(ctx context.Context, c Config, stdout, stderr io.Writer) error {
	var cs Case
	for _, k := range Cases {
		if k.Name == c.Case {
			cs = k
		}
	}
	if cs.Name == "" {
		return fmt.Errorf("no case %q: greeting, digest, hello or whoami", c.Case)
	}
	if c.Step < 0 || c.Step >= len(cs.Funcs) {
		return fmt.Errorf("%s has steps 0 to %d", cs.Name, len(cs.Funcs)-1)
	}
	tmp, err := os.MkdirTemp("", "lab-step-")
	if err != nil {
		return fmt.Errorf("temp dir: %w", err)
	}
	defer os.RemoveAll(tmp)
	bin := filepath.Join(tmp, cs.Name+".test")
	if _, err := output(ctx, "go", "test", "-c", "-o", bin, cs.Pkg); err != nil {
		return err
	}
	var names []string
	if c.Step > 0 {
		names = append(names, fmt.Sprintf("%s/step=%d", cs.Bench, c.Step-1))
	}
	names = append(names, fmt.Sprintf("%s/step=%d", cs.Bench, c.Step))
	lines, err := interleave(ctx, bin, names, c.Count, c.Benchtime, stderr)
	if err != nil {
		return err
	}
	tables, err := report.Parse(strings.NewReader(strings.Join(lines, "\n")+"\n"), "runs")
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "# %s step %d: %d rounds of -benchtime %s, interleaved with step %d\n\n", cs.Name, c.Step, c.Count, c.Benchtime, c.Step-1)
	for _, t := range tables {
		if err := t.WriteText(stdout); err != nil {
			return err
		}
	}
	root, err := moduleRoot()
	if err != nil {
		return err
	}
	p := &profiler{cs: cs, bin: bin, dir: tmp, benchtime: c.ProfTime, root: root}
	text, err := p.profile(ctx, c.Step, cs.Funcs[c.Step])
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "\n%s\n", text)
	pkgDir, err := output(ctx, "go", "list", "-f", "{{.Dir}}", cs.Pkg)
	if err != nil {
		return err
	}
	src, err := ParseDir(strings.TrimSpace(pkgDir))
	if err != nil {
		return err
	}
	cur, err := src.Func(cs.Funcs[c.Step])
	if err != nil {
		return err
	}
	if c.Step == 0 {
		fmt.Fprintf(stdout, "=== source of step 0\n%s", cur)
		return nil
	}
	prev, err := src.Func(cs.Funcs[c.Step-1])
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "=== diff from step %d\n%s", c.Step-1, Diff(prev, cur))
	return nil
}
