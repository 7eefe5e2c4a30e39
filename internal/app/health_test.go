package app

import (
	"context"
	"errors"
	"flag"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestHealth checks "visitors health" against an admin listener that
// answers as /healthz does: 200 passes and prints the body, 503 fails
// with the status, nothing listening fails, and a command line it
// cannot use is a one-line refusal.
func TestHealth(t *testing.T) {
	status, body := http.StatusOK, "ok\n"
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/healthz" {
			http.NotFound(w, r)
			return
		}
		w.WriteHeader(status)
		w.Write([]byte(body))
	}))
	defer srv.Close()
	addr := strings.TrimPrefix(srv.URL, "http://")
	env := func(vars map[string]string) func(string) string {
		return func(k string) string { return vars[k] }
	}
	run := func(args []string, vars map[string]string) (string, error) {
		var out strings.Builder
		err := Main(context.Background(), append([]string{"health"}, args...), env(vars), nil, &out)
		return out.String(), err
	}

	if out, err := run([]string{"-admin-addr", addr}, nil); err != nil || out != "ok\n" {
		t.Errorf("healthy: %q, %v; want ok and no error", out, err)
	}
	// The service's own variable, as in a container started with -e.
	if out, err := run(nil, map[string]string{"VISITORS_ADMIN_ADDR": addr}); err != nil || out != "ok\n" {
		t.Errorf("healthy, address from VISITORS_ADMIN_ADDR: %q, %v; want ok and no error", out, err)
	}
	status, body = http.StatusServiceUnavailable, "unhealthy: store: closed\n"
	if out, err := run([]string{"-admin-addr", addr}, nil); err == nil || !strings.Contains(err.Error(), "503") || out != body {
		t.Errorf("unhealthy: %q, %v; want the body and an error naming 503", out, err)
	}
	srv.Close()
	if _, err := run([]string{"-admin-addr", addr}, nil); err == nil || !strings.Contains(err.Error(), "connection refused") {
		t.Errorf("nothing listening: %v; want connection refused", err)
	}

	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"-admin-addr", ""}, `health: -admin-addr "": want the host:port`},
		{[]string{"-admin-addr", "fd:4"}, `health: -admin-addr "fd:4": want the host:port`},
		{[]string{"extra"}, `health: unexpected argument "extra"`},
		{[]string{"-nope"}, "health: unknown flag -nope; see visitors health -h"},
	} {
		_, err := run(tt.args, nil)
		var ue *UsageError
		if !errors.As(err, &ue) || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("health %q: %v; want a UsageError with %q", tt.args, err, tt.want)
		}
	}
	if out, err := run([]string{"-h"}, nil); !errors.Is(err, flag.ErrHelp) || !strings.HasPrefix(out, "Usage:\n  visitors health") {
		t.Errorf("health -h: %v, usage\n%s", err, out)
	}
}
