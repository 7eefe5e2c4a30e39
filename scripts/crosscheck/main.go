// Command crosscheck type-checks every package of the module, and its
// tests, for other systems and architectures, from source:
//
//	go run ./scripts/crosscheck darwin/arm64 windows/amd64 linux/arm64
//
// It finds what a build for those targets would refuse (a call that
// exists on Linux only, a file whose build constraint leaves a name
// undefined) without compiling anything, then runs go vet's analyzers
// on what type-checks, for the files the host's go vet never sees (a
// printf mistake in a _windows.go file). scripts/test.sh ran go vet for
// each target instead; on a fresh build cache that compiled every
// dependency three more times, 300 s of a 16-minute run here, where this
// takes 8 s to type-check and about 45 s with the analyzers at load 8
// (docs/testing.md). It exits 1 if any package has an error.
package main

import (
	"fmt"
	"os"
	"strings"

	"golang.org/x/tools/go/analysis"
	"golang.org/x/tools/go/analysis/checker"
	"golang.org/x/tools/go/analysis/passes/appends"
	"golang.org/x/tools/go/analysis/passes/asmdecl"
	"golang.org/x/tools/go/analysis/passes/assign"
	"golang.org/x/tools/go/analysis/passes/atomic"
	"golang.org/x/tools/go/analysis/passes/bools"
	"golang.org/x/tools/go/analysis/passes/buildtag"
	"golang.org/x/tools/go/analysis/passes/cgocall"
	"golang.org/x/tools/go/analysis/passes/composite"
	"golang.org/x/tools/go/analysis/passes/copylock"
	"golang.org/x/tools/go/analysis/passes/defers"
	"golang.org/x/tools/go/analysis/passes/directive"
	"golang.org/x/tools/go/analysis/passes/errorsas"
	"golang.org/x/tools/go/analysis/passes/framepointer"
	"golang.org/x/tools/go/analysis/passes/hostport"
	"golang.org/x/tools/go/analysis/passes/httpresponse"
	"golang.org/x/tools/go/analysis/passes/ifaceassert"
	"golang.org/x/tools/go/analysis/passes/loopclosure"
	"golang.org/x/tools/go/analysis/passes/lostcancel"
	"golang.org/x/tools/go/analysis/passes/nilfunc"
	"golang.org/x/tools/go/analysis/passes/printf"
	"golang.org/x/tools/go/analysis/passes/shift"
	"golang.org/x/tools/go/analysis/passes/sigchanyzer"
	"golang.org/x/tools/go/analysis/passes/slog"
	"golang.org/x/tools/go/analysis/passes/stdmethods"
	"golang.org/x/tools/go/analysis/passes/stdversion"
	"golang.org/x/tools/go/analysis/passes/stringintconv"
	"golang.org/x/tools/go/analysis/passes/structtag"
	"golang.org/x/tools/go/analysis/passes/testinggoroutine"
	"golang.org/x/tools/go/analysis/passes/tests"
	"golang.org/x/tools/go/analysis/passes/timeformat"
	"golang.org/x/tools/go/analysis/passes/unmarshal"
	"golang.org/x/tools/go/analysis/passes/unreachable"
	"golang.org/x/tools/go/analysis/passes/unsafeptr"
	"golang.org/x/tools/go/analysis/passes/unusedresult"
	"golang.org/x/tools/go/analysis/passes/waitgroup"
	"golang.org/x/tools/go/packages"
)

// vet is cmd/vet's suite (Go 1.26): go vet for a target ran it on the
// files built for that target only, such as a _windows.go file's printf
// calls, which the host's go vet never sees.
var vet = []*analysis.Analyzer{
	appends.Analyzer,
	asmdecl.Analyzer,
	assign.Analyzer,
	atomic.Analyzer,
	bools.Analyzer,
	buildtag.Analyzer,
	cgocall.Analyzer,
	composite.Analyzer,
	copylock.Analyzer,
	defers.Analyzer,
	directive.Analyzer,
	errorsas.Analyzer,
	framepointer.Analyzer,
	hostport.Analyzer,
	httpresponse.Analyzer,
	ifaceassert.Analyzer,
	loopclosure.Analyzer,
	lostcancel.Analyzer,
	nilfunc.Analyzer,
	printf.Analyzer,
	shift.Analyzer,
	sigchanyzer.Analyzer,
	slog.Analyzer,
	stdmethods.Analyzer,
	stdversion.Analyzer,
	stringintconv.Analyzer,
	structtag.Analyzer,
	testinggoroutine.Analyzer,
	tests.Analyzer,
	timeformat.Analyzer,
	unmarshal.Analyzer,
	unreachable.Analyzer,
	unsafeptr.Analyzer,
	unusedresult.Analyzer,
	waitgroup.Analyzer,
}

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: crosscheck GOOS/GOARCH...")
		os.Exit(2)
	}
	failed := false
	for _, target := range os.Args[1:] {
		errs, err := check(target)
		if err != nil {
			fmt.Fprintf(os.Stderr, "crosscheck: %s: %v\n", target, err)
			os.Exit(1)
		}
		for _, e := range errs {
			fmt.Fprintf(os.Stderr, "%s: %s\n", target, e)
		}
		failed = failed || len(errs) > 0
	}
	if failed {
		os.Exit(1)
	}
}

// check loads and type-checks ./... with its tests for target
// (GOOS/GOARCH), cgo off as in a release build, and returns each error
// once: a package and its test variant report the same one.
func check(target string) ([]string, error) {
	goos, goarch, ok := strings.Cut(target, "/")
	if !ok {
		return nil, fmt.Errorf("want GOOS/GOARCH")
	}
	cfg := &packages.Config{
		Mode:  packages.LoadAllSyntax,
		Tests: true,
		Env:   append(os.Environ(), "GOOS="+goos, "GOARCH="+goarch, "CGO_ENABLED=0"),
	}
	pkgs, err := packages.Load(cfg, "./...")
	if err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	var errs []string
	packages.Visit(pkgs, nil, func(p *packages.Package) {
		for _, e := range p.Errors {
			if s := e.Error(); !seen[s] {
				seen[s] = true
				errs = append(errs, s)
			}
		}
	})
	if len(errs) > 0 {
		return errs, nil // vet's analyzers skip a package that does not type-check
	}
	var roots []*packages.Package
	for _, p := range pkgs {
		if !strings.HasSuffix(p.ID, ".test") { // the generated test main, which go vet skips
			roots = append(roots, p)
		}
	}
	g, err := checker.Analyze(vet, roots, nil)
	if err != nil {
		return nil, err
	}
	for act := range g.All() {
		if !act.IsRoot {
			continue
		}
		if act.Err != nil {
			return nil, fmt.Errorf("%s on %s: %w", act.Analyzer.Name, act.Package.ID, act.Err)
		}
		for _, d := range act.Diagnostics {
			if s := fmt.Sprintf("%s: %s", act.Package.Fset.Position(d.Pos), d.Message); !seen[s] {
				seen[s] = true
				errs = append(errs, s)
			}
		}
	}
	return errs, nil
}
