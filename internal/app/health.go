package app

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
)

// healthUsage is the usage of "visitors health", before its flags.
const healthUsage = `Usage:
  visitors health [-admin-addr address]

health asks the running service's /healthz, on its admin listener, and
prints the answer; it exits 1 unless the service is healthy. It is the
health check of a container image, which holds no other client.
A flag with a variable named beside it can also be set by that variable.

Flags:
`

// healthTimeout bounds the whole of one health check.
const healthTimeout = 5 * time.Second

// Health runs "visitors health": it gets /healthz from the admin
// listener at -admin-addr (VISITORS_ADMIN_ADDR, as the service reads
// it), writes the body to stdout and fails unless the answer is 200.
func Health(ctx context.Context, args []string, getenv func(string) string, stdout io.Writer) error {
	cl := newCommandLine("visitors health", healthUsage, func(f string) bool { return f == "admin-addr" })
	addr := cl.fs.String("admin-addr", "127.0.0.1:6060", "the service's admin `address`, host:port")
	if err := cl.parseNone(args, nil, getenv, stdout); err != nil {
		return err
	}
	if *addr == "" || strings.HasPrefix(*addr, "fd:") {
		return cl.refuse(fmt.Errorf("-admin-addr %q: want the host:port the admin listener listens on", *addr))
	}
	host := *addr
	if strings.HasPrefix(host, ":") {
		host = "127.0.0.1" + host
	}
	ctx, cancel := context.WithTimeout(ctx, healthTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+host+"/healthz", nil)
	if err != nil {
		return cl.refuse(fmt.Errorf("-admin-addr %q: %w", *addr, err))
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("health: %w", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	if err != nil {
		return fmt.Errorf("health: %w", err)
	}
	if _, err := stdout.Write(body); err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return errors.New("health: " + resp.Status)
	}
	return nil
}
