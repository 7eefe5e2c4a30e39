package runner

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestDiff(t *testing.T) {
	tests := []struct {
		name, a, b, want string
	}{
		{"same", "x\ny\n", "x\ny\n", "  x\n  y\n"},
		{"insert", "x\nz\n", "x\ny\nz\n", "  x\n+ y\n  z\n"},
		{"delete", "x\ny\nz\n", "x\nz\n", "  x\n- y\n  z\n"},
		{"change", "x\ny\nz\n", "x\nY\nz\n", "  x\n- y\n+ Y\n  z\n"},
		{"from nothing", "", "a\n", "- \n+ a\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Diff(tt.a, tt.b); got != tt.want {
				t.Errorf("Diff(%q, %q) = %q, want %q", tt.a, tt.b, got, tt.want)
			}
		})
	}
}

func TestSourceFunc(t *testing.T) {
	dir := t.TempDir()
	src := `package p

// shared is used by both steps.
var shared = 1

var unused = 2

func helper() int { return shared }

// Step0 is the first.
func Step0() int { return helper() }

// Step1 is the second.
func Step1() int { return helper() + 1 }
`
	if err := os.WriteFile(filepath.Join(dir, "p.go"), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	s, err := ParseDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	got, err := s.Func("Step1")
	if err != nil {
		t.Fatal(err)
	}
	want := "// shared is used by both steps.\nvar shared = 1\n\nfunc helper() int { return shared }\n\nfunc Step1() int { return helper() + 1 }\n"
	if got != want {
		t.Errorf("Func(Step1) =\n%s\nwant\n%s", got, want)
	}
	if got := s.Doc("Step0"); got != "Step0 is the first.\n" {
		t.Errorf("Doc(Step0) = %q", got)
	}
	if _, first, last, ok := s.Lines("Step1"); !ok || first != 14 || last != 14 {
		t.Errorf("Lines(Step1) = %d, %d, %v; want 14, 14, true", first, last, ok)
	}
	if _, err := s.Func("Step9"); err == nil {
		t.Error("Func(Step9) found a function that does not exist")
	}
}

func TestSplice(t *testing.T) {
	b0, e0 := Markers("a")
	tests := []struct {
		name, doc, want string
	}{
		{"replaces between the markers", "intro\n" + b0 + "\nold\n" + e0 + "\noutro\n", "intro\n" + b0 + "\n\nnew\n\n" + e0 + "\noutro\n"},
		{"appends when missing", "intro", "intro\n\n" + b0 + "\n\nnew\n\n" + e0 + "\n"},
		{"creates", "", "\n" + b0 + "\n\nnew\n\n" + e0 + "\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := splice(tt.doc, "a", "new\n"); got != tt.want {
				t.Errorf("splice = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestListExcerpt(t *testing.T) {
	in := `Total: 1s
ROUTINE ======================== p.Step0 in /x/p.go
      10ms      1s (flat, cum) 100% of Total
         .          .     12:func Step0() {
         .      990ms     13:	work()
      10ms       10ms     14:	more()
         .          .     15:}
`
	got := listExcerpt(in, 10)
	for _, want := range []string{"ROUTINE", "(flat, cum)", "13:\twork()", "14:\tmore()"} {
		if !strings.Contains(got, want) {
			t.Errorf("listExcerpt lost %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "12:") || strings.Contains(got, "Total:") {
		t.Errorf("listExcerpt kept lines without samples:\n%s", got)
	}
}

func TestChartFile(t *testing.T) {
	for bench, want := range map[string]string{"Greeting": "greeting.svg", "GreetingParallel": "greeting-parallel.svg", "VisitCount": "visitcount.svg"} {
		if got := ChartFile(bench); got != want {
			t.Errorf("ChartFile(%q) = %q, want %q", bench, got, want)
		}
	}
}

// TestCasesMatchPackages checks that every step function the runner
// diffs and profiles exists in its case's package.
func TestCasesMatchPackages(t *testing.T) {
	for _, c := range Cases {
		s, err := ParseDir(filepath.Join("..", "..", c.Pkg))
		if err != nil {
			t.Fatal(err)
		}
		if len(c.Seed) != len(c.Funcs) {
			t.Errorf("%s: %d seed steps for %d steps", c.Name, len(c.Seed), len(c.Funcs))
		}
		for i, fn := range c.Funcs {
			if _, err := s.Func(fn); err != nil {
				t.Errorf("%s step %d: %v", c.Name, i, err)
			}
		}
	}
}

func TestBenchPattern(t *testing.T) {
	for name, want := range map[string]string{
		"Greeting/step=0":          `^BenchmarkGreeting$/^step=0$`,
		"VisitCount/counter=defer": `^BenchmarkVisitCount$/^counter=defer$`,
	} {
		if got := benchPattern(name); got != want {
			t.Errorf("benchPattern(%q) = %q, want %q", name, got, want)
		}
	}
}

// TestRemapLines moves a profiled line to where its text is now and
// marks one whose text is gone.
func TestRemapLines(t *testing.T) {
	root := t.TempDir()
	src := "package p\n\n// moved down\n\nfunc f() {\n\tx := 1\n\t_ = x\n}\n"
	if err := os.WriteFile(filepath.Join(root, "p.go"), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	list := "ROUTINE ======================== p.f in p.go\n" +
		"      10ms       20ms (flat, cum) 50% of Total\n" +
		"         .          .      3:func f() {\n" +
		"      10ms       20ms      4:\tx := 1\n" +
		"         .       10ms      5:\ty := 2\n"
	got, stale := RemapLines(list, root)
	want := "ROUTINE ======================== p.f in p.go\n" +
		"      10ms       20ms (flat, cum) 50% of Total\n" +
		"         .          .      5:func f() {\n" +
		"      10ms       20ms      6:\tx := 1\n" +
		"         .       10ms      5:\ty := 2   [line no longer in the source]\n"
	if got != want || stale != 1 {
		t.Errorf("RemapLines =\n%s(%d stale)\nwant\n%s(1 stale)", got, stale, want)
	}
}
