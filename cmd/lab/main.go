// Command lab runs the whole lab: every step of the four case studies,
// benchmarked side by side in one go test run and summarised per case
// with golang.org/x/perf's benchmath; then, for every step, its diff from
// the previous step, its CPU and allocation profiles and, for the digest
// case, the compiler's escape analysis. It prints a table per benchmark
// and writes docs/lab/ (tables.md, a chart per benchmark, the raw
// bench.txt for benchstat, the profiles as text) and the step sections of
// docs/lab.md. See lab/runner.
//
//	go run ./cmd/lab              # -count=10: about half an hour on 2 cores
//	go run ./cmd/lab -count 1 -benchtime 1x -out /tmp/lab   # a smoke run
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
