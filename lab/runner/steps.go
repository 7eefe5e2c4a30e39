package runner

import (
	"context"
	"fmt"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"

	"visitors/lab/report"
)

// caseSection writes the Markdown of every step of cs: its doc comment,
// its figures beside the published ones, its diff from the previous step,
// for cs.Escape the escape analysis, and the excerpts of its stored
// profiles (profiles[i], "" if none), their line references into the
// module's source mapped to the lines as they are now. It returns the
// number of profiled lines no longer in the source.
func caseSection(ctx context.Context, cs Case, tables []report.Table, profiles []string, root string) (string, int, error) {
	pkgDir, err := output(ctx, "go", "list", "-f", "{{.Dir}}", cs.Pkg)
	if err != nil {
		return "", 0, err
	}
	src, err := ParseDir(strings.TrimSpace(pkgDir))
	if err != nil {
		return "", 0, err
	}
	var escapes map[int][]string
	if cs.Escape {
		if escapes, err = escapeAnalysis(ctx, cs, src); err != nil {
			return "", 0, err
		}
	}
	var b strings.Builder
	prev := ""
	stale := 0
	for i, fn := range cs.Funcs {
		step := strconv.Itoa(i)
		cur, err := src.Func(fn)
		if err != nil {
			return "", 0, err
		}
		fmt.Fprintf(&b, "### %s step %d: `%s`\n\n", cs.Name, i, fn)
		if doc := src.Doc(fn); doc != "" {
			// A doc comment is text, not Markdown: keep "</p>" visible.
			b.WriteString(strings.ReplaceAll(strings.TrimSpace(doc), "<", "&lt;") + "\n\n")
		}
		writeFigures(&b, cs, step, tables)
		if i == 0 {
			fmt.Fprintf(&b, "<details><summary>source</summary>\n\n```go\n%s```\n\n</details>\n\n", cur)
		} else {
			fmt.Fprintf(&b, "<details open><summary>diff from step %d</summary>\n\n```diff\n%s```\n\n</details>\n\n", i-1, Diff(prev, cur))
		}
		prev = cur
		if lines := escapes[i]; cs.Escape {
			fmt.Fprintf(&b, "Escape analysis (`go build -gcflags=-m %s`, this step's lines):\n\n```text\n%s```\n\n", cs.Pkg, strings.Join(lines, ""))
		}
		if i >= len(profiles) || profiles[i] == "" {
			continue
		}
		p := parseProfiles(profiles[i])
		list, n1 := RemapLines(p.list, root)
		allocList, n2 := RemapLines(p.allocList, root)
		stale += n1 + n2
		fmt.Fprintf(&b, "<details><summary>profiles (full text, as measured: <code>docs/lab/profiles/%s-step%d.txt</code>)</summary>\n\n", cs.Name, i)
		fmt.Fprintf(&b, "CPU, top:\n\n```text\n%s```\n\nCPU, `list` of the step (lines with samples; line numbers as the source is now):\n\n```text\n%s```\n\n", p.cpuTop, orNone(listExcerpt(list, 30)))
		fmt.Fprintf(&b, "Allocations (alloc_space, every allocation recorded), top:\n\n```text\n%s```\n\nAllocations, `list` of the step:\n\n```text\n%s```\n\n</details>\n\n", p.allocTop, orNone(listExcerpt(allocList, 20)))
	}
	return b.String(), stale, nil
}

func orNone(s string) string {
	if strings.TrimSpace(s) == "" {
		return "(no samples on the step's own lines)\n"
	}
	return s
}

// writeFigures writes the measured and the published figures of one step
// as a small table.
func writeFigures(b *strings.Builder, cs Case, step string, tables []report.Table) {
	b.WriteString("| | ns/op | ± | vs previous step (benchstat) | B/op | allocs/op |\n| --- | ---: | ---: | --- | ---: | ---: |\n")
	pub := ""
	kinds := []struct{ bench, what string }{
		{cs.Bench, "measured, one goroutine"},
		{cs.Bench + "Parallel", "measured, parallel"},
		{cs.Bench + "AsPublished", "measured with the seed's harness"},
		{cs.Bench + "AsPublishedParallel", "measured with the seed's harness, parallel"},
	}
	for _, k := range kinds {
		for _, t := range tables {
			if t.Bench != k.bench {
				continue
			}
			for ri, r := range t.Rows {
				if r.Step != step {
					continue
				}
				if t.Bench == cs.Bench {
					pub = r.Published
				}
				fmt.Fprintf(b, "| %s | %s | %s | %s | %s | %s |\n", k.what, report.Num(r.NsOp.Center), report.Pct(r.NsOp), t.Delta(ri), report.Num(r.BytesOp.Center), report.NumAllocs(r.Allocs()))
			}
		}
	}
	for _, f := range report.Figures(pub) {
		fmt.Fprintf(b, "| published | %s | | | | |\n", f)
	}
	b.WriteString("\n")
}

// profiler profiles the steps of one case from its test binary.
type profiler struct {
	cs        Case
	bin, dir  string
	benchtime string
	root      string // the module's folder, trimmed from file names
}

// profiles are the text excerpts of one step's profiles.
type profiles struct {
	cpuTop, list, allocTop, allocList string
}

// The headers of the sections of a stored profile text.
const (
	hdrCPUTop    = "=== cpu top"
	hdrCPUList   = "=== cpu list"
	hdrAllocTop  = "=== alloc_space top (every allocation recorded)"
	hdrAllocList = "=== alloc_space list"
)

// parseProfiles splits a stored profile text into its sections.
func parseProfiles(text string) profiles {
	var p profiles
	var cur *string
	for _, line := range strings.SplitAfter(text, "\n") {
		switch {
		case strings.HasPrefix(line, hdrCPUTop):
			cur = &p.cpuTop
		case strings.HasPrefix(line, hdrCPUList):
			cur = &p.list
		case strings.HasPrefix(line, hdrAllocTop):
			cur = &p.allocTop
		case strings.HasPrefix(line, hdrAllocList):
			cur = &p.allocList
		case cur != nil:
			*cur += line
		}
	}
	return p
}

// profile takes a CPU and an allocation profile of step i, whose function
// is fn, and returns them as text, in the sections parseProfiles reads.
func (p *profiler) profile(ctx context.Context, i int, fn string) (string, error) {
	cpu := filepath.Join(p.dir, fmt.Sprintf("%s-step%d.cpu.pprof", p.cs.Name, i))
	mem := filepath.Join(p.dir, fmt.Sprintf("%s-step%d.mem.pprof", p.cs.Name, i))
	bench := benchPattern(fmt.Sprintf("%s/step=%d", p.cs.Bench, i))
	// Two runs: the CPU profiler allocates (its buffers, gzip), and an
	// allocation profile taken beside it would show those; every
	// allocation is recorded (-memprofilerate=1), which would slow the
	// CPU profile's run.
	if _, err := output(ctx, p.bin, "-test.run", "^$", "-test.bench", bench,
		"-test.benchtime", p.benchtime, "-test.cpuprofile", cpu); err != nil {
		return "", err
	}
	if _, err := output(ctx, p.bin, "-test.run", "^$", "-test.bench", bench,
		"-test.benchtime", p.benchtime, "-test.memprofile", mem, "-test.memprofilerate", "1"); err != nil {
		return "", err
	}
	listRx := fmt.Sprintf(`%s\.%s\b`, regexp.QuoteMeta(strings.TrimPrefix(p.cs.Pkg, "./")), fn)
	if p.cs.Service != "" && i == len(p.cs.Funcs)-1 {
		listRx = p.cs.Service
	}
	pprof := func(args ...string) string {
		out, err := output(ctx, "go", append(append([]string{"tool", "pprof"}, args...), p.bin)...)
		if err != nil {
			return "(pprof: no samples)\n"
		}
		return strings.ReplaceAll(out, p.root, "")
	}
	return fmt.Sprintf("# %s step %d (%s), -benchtime %s\n%s\n%s%s %s\n%s%s\n%s%s %s\n%s",
		p.cs.Name, i, fn, p.benchtime,
		hdrCPUTop, stripHeader(pprof("-top", "-nodecount=10", cpu)),
		hdrCPUList, listRx, pprof("-list", listRx, cpu),
		hdrAllocTop, stripHeader(pprof("-sample_index=alloc_space", "-top", "-nodecount=8", mem)),
		hdrAllocList, listRx, pprof("-sample_index=alloc_space", "-list", listRx, mem)), nil
}

// stripHeader drops the lines of a pprof report that change on every run
// without saying anything about the code: the file, build ID and time.
func stripHeader(s string) string {
	var b strings.Builder
	for _, line := range strings.SplitAfter(s, "\n") {
		if strings.HasPrefix(line, "File:") || strings.HasPrefix(line, "Build ID:") || strings.HasPrefix(line, "Time:") {
			continue
		}
		b.WriteString(line)
	}
	return b.String()
}

var listLine = regexp.MustCompile(`^\s*(\S+)\s+(\S+)\s+\d+:`)

// listExcerpt keeps, of a pprof -list report, the routine headers and the
// source lines with samples, at most max lines.
func listExcerpt(s string, max int) string {
	var b strings.Builder
	n := 0
	for _, line := range strings.SplitAfter(s, "\n") {
		keep := strings.HasPrefix(line, "ROUTINE") || strings.Contains(line, "(flat, cum)")
		if m := listLine.FindStringSubmatch(line); m != nil {
			keep = m[1] != "." || m[2] != "."
		}
		if !keep {
			continue
		}
		if n == max {
			b.WriteString("…\n")
			break
		}
		b.WriteString(line)
		n++
	}
	return b.String()
}

var escapeLine = regexp.MustCompile(`^(\S+\.go):(\d+):\d+: (.*)$`)

// escapeAnalysis builds cs.Pkg with -gcflags=-m and returns, by step, the
// compiler's escape decisions on the lines of the step's function.
func escapeAnalysis(ctx context.Context, cs Case, src *Source) (map[int][]string, error) {
	_, out, err := run(ctx, "go", "build", "-gcflags=-m", cs.Pkg)
	if err != nil {
		return nil, fmt.Errorf("go build -gcflags=-m %s: %w\n%s", cs.Pkg, err, out)
	}
	byStep := map[int][]string{}
	for _, line := range strings.Split(out, "\n") {
		m := escapeLine.FindStringSubmatch(line)
		if m == nil || !(strings.Contains(m[3], "escape") || strings.Contains(m[3], "moved to heap") || strings.Contains(m[3], "leaking")) {
			continue
		}
		ln, _ := strconv.Atoi(m[2])
		for i, fn := range cs.Funcs {
			file, first, last, ok := src.Lines(fn)
			if ok && filepath.Base(file) == filepath.Base(m[1]) && ln >= first && ln <= last {
				byStep[i] = append(byStep[i], fmt.Sprintf("%s:%s: %s\n", filepath.Base(m[1]), m[2], m[3]))
			}
		}
	}
	return byStep, nil
}

// closingTable writes, for every case, one row per lab step: the seed's
// step, its published figure, the lab's step, the measured figures and
// how faithful the step is.
func closingTable(cases []Case, tables []report.Table) string {
	find := func(bench, step string) (report.Row, bool) {
		for _, t := range tables {
			if t.Bench != bench {
				continue
			}
			for _, r := range t.Rows {
				if r.Step == step {
					return r, true
				}
			}
		}
		return report.Row{}, false
	}
	fig := func(r report.Row, ok bool) string {
		if !ok {
			return "—"
		}
		return fmt.Sprintf("%s ns, %s B, %s allocs", report.Num(r.NsOp.Center), report.Num(r.BytesOp.Center), report.NumAllocs(r.Allocs()))
	}
	var b strings.Builder
	b.WriteString("| case | seed step | published | lab step | measured | measured with the seed's harness | faithful? |\n")
	b.WriteString("| --- | --- | --- | --- | --- | --- | --- |\n")
	for _, c := range cases {
		for i, s := range c.Seed {
			step := strconv.Itoa(i)
			r, ok := find(c.Bench, step)
			pub := strings.Join(report.Figures(r.Published), "; ")
			if pub == "" {
				pub = "—"
			}
			asPub, okPub := find(c.Bench+"AsPublished", step)
			fmt.Fprintf(&b, "| %s | %s | %s | %d `%s` | %s | %s | %s |\n", c.Name, s.Name, pub, i, c.Funcs[i], fig(r, ok), fig(asPub, okPub), s.Faithful)
		}
	}
	return b.String()
}
