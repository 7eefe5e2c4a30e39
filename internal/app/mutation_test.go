package app

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"visitors/internal/flightrec"
	"visitors/internal/store"
	"visitors/internal/store/boltstore"
	"visitors/internal/unique"
)

// TestMetricsAndFlightRecorderApart: -metrics and -flight-recorder do
// not need each other. With metrics on and the recorder off, /metrics
// counts requests and slow requests; with the recorder on and metrics
// off, a slow request still writes a snapshot (both learn of a request
// from the same timing of it) and there is no /metrics.
func TestMetricsAndFlightRecorderApart(t *testing.T) {
	for _, tt := range []struct {
		name                    string
		metrics, flightRecorder bool
	}{
		{"metrics without the flight recorder", true, false},
		{"the flight recorder without metrics", false, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			data := t.TempDir()
			addr, admin, out := mustRunConfig(t, Config{
				LogLevel: zerolog.InfoLevel, ShutdownTimeout: 5 * time.Second, Store: StoreMemory, Data: data,
				Metrics: tt.metrics, FlightRecorder: tt.flightRecorder,
				FlightRecorderWindow: 10 * time.Second, FlightRecorderBytes: 32 << 20,
				// Every request here is a slow /hi.
				SlowRequest: 200 * time.Millisecond, TraceEvery: time.Minute, TraceKeep: 10,
				Test: &TestHooks{WrapStore: func(s store.Store) store.Store { return sleepyStore{s, 300 * time.Millisecond} }},
			})
			if code, body := mustGetBody(t, "http://"+addr+"/hi"); code != 200 {
				t.Fatalf("GET /hi = %d %s", code, body)
			}

			code, metrics := mustGetBody(t, "http://"+admin+"/metrics")
			if !tt.metrics {
				if code != 404 {
					t.Errorf("GET /metrics with -metrics=false = %d, want 404", code)
				}
			} else {
				if code != 200 {
					t.Fatalf("GET /metrics = %d, want 200", code)
				}
				for _, want := range []string{
					`visitors_http_requests_total{code="200",route="hi"} 1` + "\n",
					"visitors_http_slow_requests_total 1\n",
				} {
					if !strings.Contains(metrics, want) {
						t.Errorf("/metrics has no %q", want)
					}
				}
			}

			pattern := filepath.Join(data, "traces", flightrec.Prefix+"*-slow-hi.trace")
			var files []string
			if tt.flightRecorder {
				for deadline := time.Now().Add(10 * time.Second); len(files) == 0 && time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
					files, _ = filepath.Glob(pattern)
				}
				if len(files) != 1 {
					t.Errorf("snapshots %s: %v, want one\nlog:\n%s", pattern, files, out.String())
				}
			} else {
				if code, _ := mustGetBody(t, "http://"+admin+"/debug/flightrecorder"); code != 409 {
					t.Errorf("GET /debug/flightrecorder with -flight-recorder=false, not armed = %d, want 409", code)
				}
				if m, _ := filepath.Glob(filepath.Join(data, "traces")); len(m) != 0 {
					t.Errorf("-trace-dir created with the flight recorder off")
				}
			}
		})
	}
}

// TestAdminWriteTimeoutCutsStalledReader: a client of the admin listener
// that sends requests but never reads the responses holds a connection,
// and a goroutine, only until the admin listener's write deadline,
// Timeouts.AdminWrite (its own: the public one is a minute here).
func TestAdminWriteTimeoutCutsStalledReader(t *testing.T) {
	to := longTimeouts()
	to.AdminWrite = 200 * time.Millisecond
	r := mustStart(t, testConfig(), to, io.Discard)
	// n responses of /debug/vars (some KiB each, with the runtime's
	// memstats) are well over the server's send buffer.
	expectStalledReaderCut(t, r.adminAddr, "/debug/vars", to.AdminWrite)
}

// TestStoreKinds: -store embedded keeps the counts in a file in -data,
// where `visitors export` finds them after the service stops; -store
// memory keeps them nowhere and writes no file there. (A Redis may be
// listening on this machine: the embedded store must not be it.)
func TestStoreKinds(t *testing.T) {
	for _, tt := range []struct {
		store StoreKind
		file  bool
	}{
		{StoreEmbedded, true},
		{StoreMemory, false},
	} {
		t.Run(tt.store.String(), func(t *testing.T) {
			cfg := testConfig()
			cfg.Store, cfg.Data, cfg.FlushInterval = tt.store, t.TempDir(), 20*time.Millisecond
			r := mustStart(t, cfg, DefaultTimeouts, io.Discard)
			if code, body := mustGetBody(t, "http://"+r.addr+"/hello?name=kinds"); code != 200 {
				t.Fatalf("GET /hello = %d %s", code, body)
			}
			if err := r.stop(); err != nil {
				t.Fatal(err)
			}
			_, err := os.Stat(filepath.Join(cfg.Data, boltstore.FileName))
			if got := err == nil; got != tt.file {
				t.Fatalf("-store %s: %s in -data: %v, want %v (stat: %v)", tt.store, boltstore.FileName, got, tt.file, err)
			}
			if !tt.file {
				return
			}
			var dump bytes.Buffer
			if err := boltstore.Export(cfg.Data, &dump); err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(dump.String(), `{"key":"kinds","total":1,`) {
				t.Errorf("the export of -data has no count of 1 for the visited key:\n%s", dump.String())
			}
		})
	}
}

// TestTokenFileBound: -admin-token-file may hold up to 4096 bytes, the
// trailing newline included; one byte more is refused as not a token.
func TestTokenFileBound(t *testing.T) {
	dir := t.TempDir()
	for _, tt := range []struct {
		bytes int // of the file, with its newline
		ok    bool
	}{
		{maxTokenFileBytes, true},
		{maxTokenFileBytes + 1, false},
	} {
		secret := strings.Repeat("x", tt.bytes-1)
		file := filepath.Join(dir, fmt.Sprint(tt.bytes))
		if err := os.WriteFile(file, []byte(secret+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		c, err := ParseFlags([]string{"-admin-token-file", file}, func(string) string { return "" }, io.Discard)
		switch {
		case !tt.ok:
			if err == nil || !strings.Contains(err.Error(), "longer than 4096 bytes") {
				t.Errorf("a token file of %d bytes: error %v, want one saying it is longer than 4096 bytes", tt.bytes, err)
			}
		case err != nil:
			t.Errorf("a token file of %d bytes: %v", tt.bytes, err)
		case c.API.RootHash == nil || *c.API.RootHash != sha256.Sum256([]byte(secret)):
			t.Errorf("a token file of %d bytes: the root hash is not the SHA-256 of its %d-byte token", tt.bytes, len(secret))
		}
	}
}

// TestParseFlagsTakesTheLeast: each lower bound of the flags is
// inclusive (the least value is taken, one below it refused, in
// TestParseFlagsErrors), -store memory needs no -data, the embedded
// store does even with the flight recorder off, and -open-create is
// taken with a root token and refused without one.
func TestParseFlagsTakesTheLeast(t *testing.T) {
	withRoot := map[string]string{"VISITORS_ADMIN_TOKEN": testRoot}
	tests := []struct {
		name  string
		args  []string
		env   map[string]string
		want  string // "" for no error
		check func(Config) bool
	}{
		{"slow request at the clock's tick", []string{"-slow-request", "1ms"}, nil, "", func(c Config) bool { return c.SlowRequest == MinSlowRequest }},
		{"one stream", []string{"-max-streams", "1"}, nil, "", func(c Config) bool { return c.MaxStreams == 1 }},
		{"one snapshot kept", []string{"-trace-keep", "1"}, nil, "", func(c Config) bool { return c.TraceKeep == 1 }},
		{"an import of one byte", []string{"-import-max-bytes", "1"}, nil, "", func(c Config) bool { return c.API.ImportMaxBytes == 1 }},
		{"memory without -data", []string{"-store", "memory", "-data", "", "-flight-recorder=false"}, nil, "", func(c Config) bool { return c.Store == StoreMemory && c.Data == "" }},
		{"embedded without -data", []string{"-data", "", "-flight-recorder=false"}, nil, "-data must name a directory for the embedded store", nil},
		{"open create with a root token", []string{"-open-create"}, withRoot, "", func(c Config) bool { return c.API.OpenCreate && c.API.RootHash != nil }},
		{"open create without a root token", []string{"-open-create"}, nil, "-open-create needs the owner API", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := ParseFlags(tt.args, func(k string) string { return tt.env[k] }, io.Discard)
			switch {
			case tt.want != "":
				if err == nil || !strings.Contains(err.Error(), tt.want) {
					t.Errorf("ParseFlags(%q) error = %v, want one containing %q", tt.args, err, tt.want)
				}
			case err != nil:
				t.Errorf("ParseFlags(%q) = %v, want no error", tt.args, err)
			case !tt.check(c):
				t.Errorf("ParseFlags(%q) = %+v: not what the flags say", tt.args, c)
			}
		})
	}
}

// counterTotal reads /counter/{key}.json's total without counting.
func counterTotal(t *testing.T, addr, key string) uint64 {
	t.Helper()
	code, body := mustGetBody(t, "http://"+addr+"/counter/"+key+".json?count=false")
	var c struct {
		Total *uint64 `json:"total"`
	}
	if code != 200 || json.Unmarshal([]byte(body), &c) != nil || c.Total == nil {
		t.Fatalf("GET /counter/%s.json = %d %s", key, code, body)
	}
	return *c.Total
}

// TestRepeatWindowIsWired: with -repeat-window, a visitor's second view
// of a counter within the window does not count; with 0, it does.
func TestRepeatWindowIsWired(t *testing.T) {
	for _, tt := range []struct {
		window time.Duration
		want   uint64
	}{
		{0, 2},
		{time.Hour, 1},
	} {
		t.Run(tt.window.String(), func(t *testing.T) {
			cfg := testConfig()
			cfg.Fair.RepeatWindow = tt.window
			r := mustStart(t, cfg, DefaultTimeouts, io.Discard)
			for range 2 {
				if code, body := mustGetBody(t, "http://"+r.addr+"/counter/again.json"); code != 200 {
					t.Fatalf("GET /counter/again.json = %d %s", code, body)
				}
			}
			if got := counterTotal(t, r.addr, "again"); got != tt.want {
				t.Errorf("-repeat-window %v: two views by one visitor count %d, want %d", tt.window, got, tt.want)
			}
		})
	}
}

// TestUniqueSeedLivesWithTheEmbeddedStore: with the embedded store, the
// day's seed of unique visitors is kept in -data, so a visitor seen
// before a restart is not counted again after it; the memory store,
// which keeps nothing, writes no seed there.
func TestUniqueSeedLivesWithTheEmbeddedStore(t *testing.T) {
	for _, st := range []StoreKind{StoreEmbedded, StoreMemory} {
		t.Run(st.String(), func(t *testing.T) {
			cfg := testConfig()
			cfg.Store, cfg.Data, cfg.FlushInterval = st, t.TempDir(), 20*time.Millisecond
			cfg.Fair = Fair{Unique: true}
			if err := cfg.Fair.TrustedProxies.Set("127.0.0.0/8,::1/128"); err != nil {
				t.Fatal(err)
			}
			r := mustStart(t, cfg, DefaultTimeouts, io.Discard)
			if n := uniqueToday(t, r.addr, "seen", "192.0.2.1", true); n != 1 {
				t.Fatalf("unique_today = %d after one visitor, want 1", n)
			}
			if err := r.stop(); err != nil {
				t.Fatal(err)
			}
			_, err := os.Stat(filepath.Join(cfg.Data, unique.SeedFile))
			if got, want := err == nil, st == StoreEmbedded; got != want {
				t.Fatalf("-store %s: %s in -data: %v, want %v", st, unique.SeedFile, got, want)
			}
			if st != StoreEmbedded {
				return
			}
			r = mustStart(t, cfg, DefaultTimeouts, io.Discard)
			if n := uniqueToday(t, r.addr, "seen", "192.0.2.1", true); n != 1 {
				t.Errorf("the same visitor after a restart: unique_today = %d, want 1", n)
			}
		})
	}
}

// TestBackupCommands: `visitors import`, `export` and `check` are
// reached through Main, take -data from the flag or from VISITORS_DATA
// (the flag wins), read the dump from a named file or stdin, and refuse
// an argument too many or a store they do not know.
func TestBackupCommands(t *testing.T) {
	t.Chdir(t.TempDir()) // where the default -data, ./data, would be
	dir, other := t.TempDir(), t.TempDir()
	dumpFile := filepath.Join(t.TempDir(), "dump.json")
	dump := `{"format":"visitors-export-1","hits":7,"keys":[` + "\n" + `{"key":"from-file","total":3}` + "\n]}\n"
	if err := os.WriteFile(dumpFile, []byte(dump), 0o600); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"VISITORS_DATA": dir}
	main := func(stdin string, args ...string) (string, error) {
		var out bytes.Buffer
		err := Main(t.Context(), args, func(k string) string { return env[k] }, strings.NewReader(stdin), &out)
		return out.String(), err
	}

	if _, err := main("", "import", dumpFile); err != nil { // into VISITORS_DATA
		t.Fatalf("import %s: %v", dumpFile, err)
	}
	stdinDump := strings.Replace(dump, "from-file", "from-stdin", 1)
	if _, err := main(stdinDump, "import", "-data", other); err != nil { // the flag, not VISITORS_DATA
		t.Fatalf("import -data %s from stdin: %v", other, err)
	}
	for _, tt := range []struct {
		args       []string
		want, lack string
	}{
		{[]string{"export"}, `{"key":"from-file","total":3}`, "from-stdin"},
		{[]string{"export", "-data", other}, `{"key":"from-stdin","total":3}`, "from-file"},
	} {
		out, err := main("", tt.args...)
		if err != nil || !strings.Contains(out, tt.want) || strings.Contains(out, tt.lack) || !strings.Contains(out, `"hits":7`) {
			t.Errorf("%q = %v, wrote:\n%s\nwant %s and the hits, and not %s", tt.args, err, out, tt.want, tt.lack)
		}
	}
	if out, err := main("", "check"); err != nil || out == "" {
		t.Errorf("check = %v, wrote %q; want a report and no error", err, out)
	}

	for _, tt := range []struct {
		args []string
		env  map[string]string
		want string
	}{
		{[]string{"export", "extra"}, nil, `export: unexpected argument "extra"`},
		{[]string{"import", dumpFile, "extra"}, nil, `import: unexpected argument "extra"`},
		{[]string{"check", "extra"}, nil, `check: unexpected argument "extra"`},
		{[]string{"import", filepath.Join(dir, "missing.json")}, nil, "import: open"},
		{[]string{"export", "-store", "etcd"}, nil, "export: -store etcd: want embedded or redis; see visitors export -h"},
		{[]string{"import", "-store", "etcd"}, nil, "import: -store etcd: want embedded or redis; see visitors import -h"},
		{[]string{"export"}, map[string]string{"VISITORS_STORE": "etcd"}, "export: VISITORS_STORE=etcd: want embedded or redis"},
		{[]string{"check"}, map[string]string{"VISITORS_DATA": filepath.Join(dir, "nowhere")}, "nowhere"},
		{[]string{"export", "-nope"}, nil, "export: unknown flag -nope; see visitors export -h"},
		{[]string{"import", "-nope"}, nil, "import: unknown flag -nope; see visitors import -h"},
		{[]string{"check", "-nope"}, nil, "check: unknown flag -nope; see visitors check -h"},
		{[]string{"import", "-max-keys", "-1"}, nil, "import: -max-keys -1: want a whole number, 0 or more (0: no limit); see visitors import -h"},
		{[]string{"import"}, map[string]string{"VISITORS_MAX_KEYS": "-1"}, "import: VISITORS_MAX_KEYS=-1: want a whole number, 0 or more"},
	} {
		env = tt.env
		if _, err := main("", tt.args...); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%q with %v = %v, want an error containing %q", tt.args, tt.env, err, tt.want)
		}
	}
}
