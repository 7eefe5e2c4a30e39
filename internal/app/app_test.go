package app

import (
	"context"
	"errors"
	"flag"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"visitors/internal/servertest"
)

func TestParseFlags(t *testing.T) {
	def := Config{Addr: ":8080", AdminAddr: "127.0.0.1:6060", LogLevel: "info", MaxKeys: 1_000_000, ShutdownTimeout: 10 * time.Second,
		Store: "embedded", Data: "./data", Durability: "batch", FlushInterval: 100 * time.Millisecond}
	with := func(f func(*Config)) Config { c := def; f(&c); return c }
	tests := []struct {
		name string
		args []string
		env  map[string]string
		want Config
	}{
		{"defaults", nil, nil, def},
		{"flags", []string{"-addr", ":9", "-admin-addr", "", "-log-level", "off", "-max-keys", "5", "-shutdown-timeout", "1s", "-block-profile-rate", "100", "-mutex-profile-fraction", "10",
			"-store", "memory", "-data", "/var/lib/v", "-durability", "sync", "-flush-interval", "1s"}, nil,
			Config{Addr: ":9", AdminAddr: "", LogLevel: "off", MaxKeys: 5, ShutdownTimeout: time.Second, BlockProfileRate: 100, MutexProfileFraction: 10,
				Store: "memory", Data: "/var/lib/v", Durability: "sync", FlushInterval: time.Second}},
		{"env", nil, map[string]string{"VISITORS_ADDR": ":7", "VISITORS_MAX_KEYS": "3", "VISITORS_SHUTDOWN_TIMEOUT": "2s", "VISITORS_LOG_LEVEL": "warn", "VISITORS_DATA": "/d", "VISITORS_DURABILITY": "sync"},
			with(func(c *Config) {
				c.Addr, c.MaxKeys, c.ShutdownTimeout, c.LogLevel, c.Data, c.Durability = ":7", 3, 2*time.Second, "warn", "/d", "sync"
			})},
		{"flag beats env", []string{"-addr", ":6"}, map[string]string{"VISITORS_ADDR": ":7"}, with(func(c *Config) { c.Addr = ":6" })},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseFlags(tt.args, func(k string) string { return tt.env[k] }, io.Discard)
			if err != nil || got != tt.want {
				t.Errorf("ParseFlags(%q, %v) = %+v, %v; want %+v", tt.args, tt.env, got, err, tt.want)
			}
		})
	}
}

func TestParseFlagsErrors(t *testing.T) {
	tests := []struct {
		name string
		args []string
		env  map[string]string
		want string
	}{
		{"help", []string{"-h"}, nil, flag.ErrHelp.Error()},
		{"level", []string{"-log-level", "verbose"}, nil, `-log-level "verbose"`},
		{"env level", nil, map[string]string{"VISITORS_LOG_LEVEL": "loud"}, `-log-level "loud"`},
		{"env int", nil, map[string]string{"VISITORS_MAX_KEYS": "lots"}, "VISITORS_MAX_KEYS"},
		{"negative timeout", []string{"-shutdown-timeout", "-1s"}, nil, "must not be negative"},
		{"unknown flag", []string{"-port", "80"}, nil, "flag provided but not defined"},
		{"argument", []string{"extra"}, nil, `unexpected argument "extra"`},
		{"store", []string{"-store", "redis"}, nil, `-store "redis"`},
		{"durability", []string{"-durability", "often"}, nil, `durability "often"`},
		{"flush interval", []string{"-flush-interval", "0s"}, nil, "-flush-interval must be positive"},
		{"no data dir", []string{"-data", ""}, nil, "-data must name a directory"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseFlags(tt.args, func(k string) string { return tt.env[k] }, io.Discard)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("ParseFlags(%q, %v) error = %v, want one containing %q", tt.args, tt.env, err, tt.want)
			}
		})
	}
}

// mustRun starts Run in the background with to and returns the public
// address, the log, and a stop function that cancels and waits for Run.
func mustRun(t *testing.T, to Timeouts) (string, *servertest.Buffer, func() error) {
	t.Helper()
	addr, err := servertest.FreeAddr()
	if err != nil {
		t.Fatal(err)
	}
	cfg := Config{Addr: addr, LogLevel: "info", ShutdownTimeout: 5 * time.Second, Store: "memory"}
	ctx, cancel := context.WithCancel(context.Background())
	var out servertest.Buffer
	done := make(chan error, 1)
	go func() { done <- Run(ctx, cfg, to, &out) }()
	for i := 0; ; i++ {
		c, err := net.Dial("tcp", addr)
		if err == nil {
			c.Close()
			break
		}
		if i == 500 {
			t.Fatalf("Run did not listen on %s: %v\n%s", addr, err, out.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	var once sync.Once
	var runErr error
	stop := func() error {
		once.Do(func() { cancel(); runErr = <-done })
		return runErr
	}
	t.Cleanup(func() { stop() })
	return addr, &out, stop
}

// TestSlowClientIsCutOff: a client that never finishes its header is
// disconnected after ReadHeaderTimeout instead of holding the connection.
func TestSlowClientIsCutOff(t *testing.T) {
	to := DefaultTimeouts
	to.ReadHeader = 200 * time.Millisecond
	addr, _, _ := mustRun(t, to)
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := io.WriteString(c, "GET /hi HTTP/1.1\r\nHost: x\r\nX-Slow: "); err != nil {
		t.Fatal(err)
	}
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	_, err = io.ReadAll(c)
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		t.Fatal("the server kept a slow client's connection open for 10s; ReadHeaderTimeout is 200ms")
	}
}

func TestOversizedHeaderIsRejected(t *testing.T) {
	addr, _, _ := mustRun(t, DefaultTimeouts)
	req, _ := http.NewRequest("GET", "http://"+addr+"/hi", nil)
	req.Header.Set("X-Big", strings.Repeat("x", 2*DefaultTimeouts.MaxHeaderBytes))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusRequestHeaderFieldsTooLarge {
		t.Errorf("oversized header = %d, want 431", resp.StatusCode)
	}
}

func TestRunStopsCleanlyWithIdleConnections(t *testing.T) {
	addr, out, stop := mustRun(t, DefaultTimeouts)
	resp, err := http.Get("http://" + addr + "/hello?name=idle") // leaves a keep-alive connection
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if err := stop(); err != nil {
		t.Fatalf("Run() = %v after cancel, want nil", err)
	}
	log := out.String()
	for _, want := range []string{`"name":"idle","count":1`, `"message":"shutting down"`, `"message":"stopped"`} {
		if !strings.Contains(log, want) {
			t.Errorf("log lacks %s after shutdown:\n%s", want, log)
		}
	}
	if _, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
		t.Error("still accepting connections after Run returned")
	}
}
