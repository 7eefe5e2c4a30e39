// Command crosscheck type-checks every package of the module, and its
// tests, for other systems and architectures, from source:
//
//	go run ./scripts/crosscheck darwin/arm64 windows/amd64 linux/arm64
//
// It finds what a build for those targets would refuse (a call that
// exists on Linux only, a file whose build constraint leaves a name
// undefined) without compiling anything. scripts/test.sh ran go vet for
// each target instead; on a fresh build cache that compiled every
// dependency three more times, 300 s of a 16-minute run here, where this
// takes 8 s (docs/testing.md). It exits 1 if any package has an error.
package main

import (
	"fmt"
	"os"
	"strings"

	"golang.org/x/tools/go/packages"
)

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
	return errs, nil
}
