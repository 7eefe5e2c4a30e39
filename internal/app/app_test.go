package app

import (
	"flag"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"visitors/internal/servertest"
	"visitors/internal/store"
)

func TestParseFlags(t *testing.T) {
	def := Config{Addr: ":8080", AdminAddr: "127.0.0.1:6060", LogLevel: "info", MaxKeys: 1_000_000, ShutdownTimeout: 10 * time.Second,
		Store: "embedded", Data: "./data", Durability: store.Batch, FlushInterval: 100 * time.Millisecond,
		Metrics: true, FlightRecorder: true, FlightRecorderWindow: 10 * time.Second, FlightRecorderBytes: 32 << 20,
		SlowRequest: 250 * time.Millisecond, TraceEvery: time.Minute, TraceKeep: 10, MaxStreams: 10000}
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
			with(func(c *Config) {
				*c = Config{Addr: ":9", AdminAddr: "", LogLevel: "off", MaxKeys: 5, ShutdownTimeout: time.Second, BlockProfileRate: 100, MutexProfileFraction: 10,
					Store: "memory", Data: "/var/lib/v", Durability: store.Sync, FlushInterval: time.Second,
					Metrics: true, FlightRecorder: true, FlightRecorderWindow: 10 * time.Second, FlightRecorderBytes: 32 << 20, SlowRequest: 250 * time.Millisecond, TraceEvery: time.Minute, TraceKeep: 10, MaxStreams: 10000}
			})},
		{"observability flags", []string{"-metrics=false", "-flight-recorder=false", "-flight-recorder-window", "3s", "-flight-recorder-max-bytes", "1048576",
			"-slow-request", "1s", "-trace-dir", "/t", "-trace-every", "5s", "-trace-keep", "2"}, nil,
			with(func(c *Config) {
				c.Metrics, c.FlightRecorder, c.FlightRecorderWindow, c.FlightRecorderBytes = false, false, 3*time.Second, 1<<20
				c.SlowRequest, c.TraceDir, c.TraceEvery, c.TraceKeep = time.Second, "/t", 5*time.Second, 2
			})},
		{"observability env", nil, map[string]string{"VISITORS_METRICS": "false", "VISITORS_SLOW_REQUEST": "100ms", "VISITORS_TRACE_DIR": "/e"},
			with(func(c *Config) { c.Metrics, c.SlowRequest, c.TraceDir = false, 100*time.Millisecond, "/e" })},
		{"env", nil, map[string]string{"VISITORS_ADDR": ":7", "VISITORS_MAX_KEYS": "3", "VISITORS_SHUTDOWN_TIMEOUT": "2s", "VISITORS_LOG_LEVEL": "warn", "VISITORS_DATA": "/d", "VISITORS_DURABILITY": "sync"},
			with(func(c *Config) {
				c.Addr, c.MaxKeys, c.ShutdownTimeout, c.LogLevel, c.Data, c.Durability = ":7", 3, 2*time.Second, "warn", "/d", store.Sync
			})},
		{"flag beats env", []string{"-addr", ":6"}, map[string]string{"VISITORS_ADDR": ":7"}, with(func(c *Config) { c.Addr = ":6" })},
		{"no wait at shutdown", []string{"-shutdown-timeout", "0s"}, nil, with(func(c *Config) { c.ShutdownTimeout = 0 })},
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
		{"slow request under the clock's tick", []string{"-slow-request", "500us"}, nil, "-slow-request 500µs: want at least 1ms"},
		{"window", []string{"-flight-recorder-window", "0s"}, nil, "-flight-recorder-window must be positive"},
		{"trace every", []string{"-trace-every", "0s"}, nil, "-trace-every must be positive"},
		{"trace keep", []string{"-trace-keep", "0"}, nil, "-trace-keep must be at least 1"},
		{"no trace dir", []string{"-store", "memory", "-data", ""}, nil, "-trace-dir or -data must name a directory"},
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

func TestOversizedHeaderIsRejected(t *testing.T) {
	r := mustStart(t, testConfig(), DefaultTimeouts, io.Discard)
	req, err := http.NewRequest("GET", "http://"+r.addr+"/hi", nil)
	if err != nil {
		t.Fatal(err)
	}
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
	var out servertest.Buffer
	r := mustStart(t, testConfig(), DefaultTimeouts, &out)
	resp, err := http.Get("http://" + r.addr + "/hello?name=idle") // leaves a keep-alive connection
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if err := r.stop(); err != nil {
		t.Fatalf("Run() = %v after cancel, want nil", err)
	}
	log := out.String()
	for _, want := range []string{`"name":"idle","count":1`, `"message":"shutting down"`, `"message":"stopped"`} {
		if !strings.Contains(log, want) {
			t.Errorf("log lacks %s after shutdown:\n%s", want, log)
		}
	}
	if _, err := net.DialTimeout("tcp", r.addr, time.Second); err == nil {
		t.Error("still accepting connections after Run returned")
	}
}

// TestDefaultTimeouts: the public listener's limits are the README's.
func TestDefaultTimeouts(t *testing.T) {
	want := Timeouts{ReadHeader: 5 * time.Second, Read: 5 * time.Second, Write: 10 * time.Second, Idle: time.Minute, MaxHeaderBytes: 16 << 10}
	if DefaultTimeouts != want {
		t.Errorf("DefaultTimeouts = %+v, want %+v", DefaultTimeouts, want)
	}
}
