// Command loadtest puts visitors beside the classic unoptimised server
// and a bare net/http ceiling on this machine, in one run, and prints
// their requests/s and latencies side by side. It needs wrk and taskset.
//
//	go run ./cmd/loadtest                       # 3 rounds of 10s, then a constant-rate run
//	go run ./cmd/loadtest -profile cmd/visitors/default.pgo   # also take the PGO profile
//
// See -h for every flag.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"visitors/lab/loadtest"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := loadtest.Main(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	if err != nil && !errors.Is(err, flag.ErrHelp) {
		fmt.Fprintf(os.Stderr, "loadtest: %v\n", err)
		os.Exit(1)
	}
}
