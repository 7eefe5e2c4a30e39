// Command lab runs the lab: every step of the four case studies,
// benchmarked in interleaved rounds (each step beside the one before it,
// one process per run) and compared as benchstat compares them, with
// golang.org/x/perf's benchmath; then every step's CPU and allocation
// profiles. It stores the figures and profiles under docs/lab and
// regenerates from them, and from the source as it is now, the tables,
// the charts, the provenance and closing sections of docs/lab.md and the
// step sections of each case's page, docs/lab/<case>.md: each step's diff
// from the previous one, the escape analysis of the digest case, the
// profiles' line references. See lab/runner.
//
//	go run ./cmd/lab -note "…"          # measure: about 30 minutes on 2 busy cores
//	go run ./cmd/lab -regen             # no benchmark: rewrite from the stored figures
//	go run ./cmd/lab -check             # as -regen, write nothing, fail if stale (CI)
//	go run ./cmd/lab -case greeting -step 5   # one step against the previous: benchmark, profiles, diff
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"visitors/lab/runner"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := runner.Main(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	if err != nil && !errors.Is(err, flag.ErrHelp) {
		fmt.Fprintf(os.Stderr, "lab: %v\n", err)
		os.Exit(1)
	}
}
