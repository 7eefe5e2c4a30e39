// Command visitors counts visitors: a global counter at /hi, one counter
// per name at /hello, and /whoami, with pprof, health and runtime
// statistics on a separate admin listener. Run it with -h for its flags.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"visitors/internal/app"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := app.Main(ctx, os.Args[1:], os.Getenv, os.Stdin, os.Stdout)
	stop()
	if errors.Is(err, flag.ErrHelp) {
		return
	}
	if ue := (*app.UsageError)(nil); errors.As(err, &ue) {
		fmt.Fprintf(os.Stderr, "visitors: %v\n", err)
		os.Exit(2)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "visitors: %v\n", err)
		os.Exit(1)
	}
}
