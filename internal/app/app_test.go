package app

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"visitors/internal/camo"
	"visitors/internal/certs"
	"visitors/internal/client"
	"visitors/internal/compat"
	"visitors/internal/servertest"
	"visitors/internal/store"
	"visitors/internal/store/boltstore"
	"visitors/internal/unique"
	"visitors/internal/webtest"
)

// testRoot is the tests' root token of the owner API.
const testRoot = "app-test-root-token-0123456789"

// defFair are the default fairness rules.
var defFair = func() Fair {
	f := Fair{ClientRate: client.Rate{Events: 10, Per: time.Second}, ClientBurst: 20,
		ClientNewKeys: client.Rate{Events: 100, Per: time.Hour}, Unique: true, MaxConns: 10000, MaxConnsPerClient: 100,
		CamoKeyRate: client.Rate{Events: 600, Per: time.Minute}, RepeatWindow: 30 * time.Minute} // refreshes are not counted
	if err := f.CamoRanges.Set(camo.DefaultRanges()); err != nil {
		panic(err)
	}
	return f
}()

func TestParseFlags(t *testing.T) {
	tokenFile := filepath.Join(t.TempDir(), "root")
	if err := os.WriteFile(tokenFile, []byte(testRoot+"\r\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	rootHash := sha256.Sum256([]byte(testRoot))
	def := Config{Addr: ":8080", AdminAddr: "127.0.0.1:6060", LogLevel: zerolog.InfoLevel, MaxKeys: 1_000_000, ShutdownTimeout: 10 * time.Second,
		Store: StoreEmbedded, Data: "./data", Durability: store.Batch, FlushInterval: 100 * time.Millisecond,
		Metrics: true, FlightRecorder: false, FlightRecorderWindow: 10 * time.Second, FlightRecorderBytes: 32 << 20,
		SlowRequest: 250 * time.Millisecond, TraceEvery: time.Minute, TraceKeep: 10, Fair: defFair, MaxStreams: 2500, MaxStreamAge: 30 * time.Minute, Compat: compat.AllServices,
		Redis: RedisConfig{URL: "redis://127.0.0.1:6379/0", Prefix: "visitors:"},
		API:   APIConfig{ImportMaxBytes: 256 << 20, AuthFailures: client.Rate{Events: 5, Per: time.Minute}},
		TLS:   TLSConfig{HTTPAddr: ":80", CA: certs.LetsEncrypt}}
	with := func(f func(*Config)) Config { c := def; f(&c); return c }
	tests := []struct {
		name string
		args []string
		env  map[string]string
		want Config
	}{
		{"defaults", nil, nil, def},
		{"compat services", []string{"-compat", "ghpvc,countapi"}, nil, with(func(c *Config) { c.Compat = 1<<compat.CountAPI | 1<<compat.GHPVC })},
		{"compat none from env", nil, map[string]string{"VISITORS_COMPAT": "none"}, with(func(c *Config) { c.Compat = 0 })},
		{"flags", []string{"-addr", ":9", "-admin-addr", "", "-log-level", "off", "-max-keys", "5", "-shutdown-timeout", "1s", "-block-profile-rate", "100", "-mutex-profile-fraction", "10",
			"-store", "memory", "-data", "/var/lib/v", "-durability", "sync", "-flush-interval", "1s"}, nil,
			with(func(c *Config) {
				*c = Config{Addr: ":9", AdminAddr: "", LogLevel: zerolog.Disabled, MaxKeys: 5, ShutdownTimeout: time.Second, BlockProfileRate: 100, MutexProfileFraction: 10,
					Store: StoreMemory, Data: "/var/lib/v", Durability: store.Sync, FlushInterval: time.Second,
					Metrics: true, FlightRecorder: false, FlightRecorderWindow: 10 * time.Second, FlightRecorderBytes: 32 << 20, SlowRequest: 250 * time.Millisecond, TraceEvery: time.Minute, TraceKeep: 10, Fair: defFair, MaxStreams: 2500, MaxStreamAge: 30 * time.Minute, Compat: compat.AllServices,
					Redis: def.Redis, API: def.API, TLS: def.TLS}
			})},
		{"redis flags", []string{"-store", "redis", "-redis-url", "rediss://u@r:6380/2", "-redis-cluster", "a:1, b:2,", "-redis-prefix", "p:"}, nil,
			with(func(c *Config) {
				c.Store, c.Redis = StoreRedis, RedisConfig{URL: "rediss://u@r:6380/2", Cluster: []string{"a:1", "b:2"}, Prefix: "p:"}
			})},
		{"redis env", nil, map[string]string{"VISITORS_STORE": "redis", "VISITORS_REDIS_URL": "redis://h:1/0", "VISITORS_REDIS_CLUSTER": "c:3", "VISITORS_REDIS_PREFIX": "q:", "VISITORS_REDIS_PASSWORD": "s3cret"},
			with(func(c *Config) {
				c.Store, c.Redis = StoreRedis, RedisConfig{URL: "redis://h:1/0", Cluster: []string{"c:3"}, Prefix: "q:", Password: "s3cret"}
			})},
		{"fair flags", []string{"-trusted-proxies", "10.0.0.0/8, 2001:db8::/32,192.0.2.1", "-client-rate", "5/m", "-client-burst", "3", "-client-new-keys", "0",
			"-repeat-window", "30m", "-unique=false", "-max-conns", "7", "-count-bots", "-camo-ranges", "127.0.0.0/8,::1", "-camo-key-rate", "5/s", "-max-conns-per-client", "0"}, nil,
			with(func(c *Config) {
				c.Fair = Fair{ClientRate: client.Rate{Events: 5, Per: time.Minute}, ClientBurst: 3, RepeatWindow: 30 * time.Minute, MaxConns: 7, CountBots: true,
					CamoKeyRate: client.Rate{Events: 5, Per: time.Second}}
				c.MaxStreams = 3 // half of -max-conns 7
				c.Fair.TrustedProxies.Set("10.0.0.0/8,2001:db8::/32,192.0.2.1/32")
				c.Fair.CamoRanges.Set("127.0.0.0/8,::1/128")
			})},
		{"fair env", nil, map[string]string{"VISITORS_CLIENT_RATE": "0", "VISITORS_CLIENT_NEW_KEYS": "2.5/d", "VISITORS_TRUSTED_PROXIES": "127.0.0.1"},
			with(func(c *Config) {
				c.Fair.ClientRate, c.Fair.ClientNewKeys = client.Rate{}, client.Rate{Events: 2.5, Per: 24 * time.Hour}
				c.Fair.TrustedProxies.Set("127.0.0.1")
			})},
		{"observability flags", []string{"-metrics=false", "-flight-recorder", "-flight-recorder-window", "3s", "-flight-recorder-max-bytes", "1048576",
			"-slow-request", "1s", "-trace-dir", "/t", "-trace-every", "5s", "-trace-keep", "2"}, nil,
			with(func(c *Config) {
				c.Metrics, c.FlightRecorder, c.FlightRecorderWindow, c.FlightRecorderBytes = false, true, 3*time.Second, 1<<20
				c.SlowRequest, c.TraceDir, c.TraceEvery, c.TraceKeep = time.Second, "/t", 5*time.Second, 2
			})},
		{"observability env", nil, map[string]string{"VISITORS_METRICS": "false", "VISITORS_SLOW_REQUEST": "100ms", "VISITORS_TRACE_DIR": "/e"},
			with(func(c *Config) { c.Metrics, c.SlowRequest, c.TraceDir = false, 100*time.Millisecond, "/e" })},
		{"env", nil, map[string]string{"VISITORS_ADDR": ":7", "VISITORS_MAX_KEYS": "3", "VISITORS_SHUTDOWN_TIMEOUT": "2s", "VISITORS_LOG_LEVEL": "warn", "VISITORS_DATA": "/d", "VISITORS_DURABILITY": "sync"},
			with(func(c *Config) {
				c.Addr, c.MaxKeys, c.ShutdownTimeout, c.LogLevel, c.Data, c.Durability = ":7", 3, 2*time.Second, zerolog.WarnLevel, "/d", store.Sync
			})},
		{"api flags", []string{"-admin-token-file", tokenFile, "-import-max-bytes", "1024", "-api-auth-failures", "3/h", "-admin-allow-remote"}, nil,
			with(func(c *Config) {
				c.API = APIConfig{TokenFile: tokenFile, RootHash: &rootHash, ImportMaxBytes: 1024, AuthFailures: client.Rate{Events: 3, Per: time.Hour}}
				c.AdminAllowRemote = true
			})},
		{"api env", nil, map[string]string{"VISITORS_ADMIN_TOKEN": testRoot + "\n", "VISITORS_IMPORT_MAX_BYTES": "7", "VISITORS_API_AUTH_FAILURES": "0", "VISITORS_ADMIN_ALLOW_REMOTE": "true"},
			with(func(c *Config) {
				c.API = APIConfig{RootHash: &rootHash, ImportMaxBytes: 7}
				c.AdminAllowRemote = true
			})},
		{"token file from env", nil, map[string]string{"VISITORS_ADMIN_TOKEN_FILE": tokenFile},
			with(func(c *Config) { c.API.TokenFile, c.API.RootHash = tokenFile, &rootHash })},
		{"flag beats env", []string{"-addr", ":6"}, map[string]string{"VISITORS_ADDR": ":7"}, with(func(c *Config) { c.Addr = ":6" })},
		{"no wait at shutdown", []string{"-shutdown-timeout", "0s"}, nil, with(func(c *Config) { c.ShutdownTimeout = 0 })},
		{"zero is no limit or off", []string{"-max-keys", "0", "-max-conns", "0", "-block-profile-rate", "0", "-mutex-profile-fraction", "0", "-repeat-window", "0", "-client-rate", "0", "-camo-key-rate", "0"},
			map[string]string{"VISITORS_MAX_CONNS_PER_CLIENT": "0", "VISITORS_API_AUTH_FAILURES": "0"},
			with(func(c *Config) {
				c.MaxKeys, c.Fair.MaxConns, c.Fair.MaxConnsPerClient, c.Fair.ClientRate, c.Fair.CamoKeyRate, c.API.AuthFailures = 0, 0, 0, client.Rate{}, client.Rate{}, client.Rate{}
				c.Fair.RepeatWindow = 0
			})},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseFlags(tt.args, func(k string) string { return tt.env[k] }, io.Discard)
			if err != nil || !reflect.DeepEqual(got, tt.want) {
				t.Errorf("ParseFlags(%q, %v) = %+v, %v; want %+v", tt.args, tt.env, got, err, tt.want)
			}
		})
	}
}

func TestParseFlagsErrors(t *testing.T) {
	dir := t.TempDir()
	file := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	empty, newline, short, spaced, big := file("empty", ""), file("newline", "\n"), file("short", "0123456789abcde\n"), file("spaced", "0123456789 abcdef"), file("big", strings.Repeat("x", 5000))
	tests := []struct {
		name string
		args []string
		env  map[string]string
		want string
	}{
		{"help", []string{"-h"}, nil, flag.ErrHelp.Error()},
		{"level", []string{"-log-level", "verbose"}, nil, "-log-level verbose: want debug, info, warn, error or off; see visitors -h"},
		{"env level", nil, map[string]string{"VISITORS_LOG_LEVEL": "loud"}, "VISITORS_LOG_LEVEL=loud: want debug"},
		{"env int", nil, map[string]string{"VISITORS_MAX_KEYS": "lots"}, "VISITORS_MAX_KEYS=lots: want a whole number, 0 or more (0: no limit)"},
		{"negative timeout", []string{"-shutdown-timeout", "-1s"}, nil, "-shutdown-timeout -1s: want a duration such as 10s or 1m, 0 or more"},
		{"unknown flag", []string{"-port", "80"}, nil, "unknown flag -port; see visitors -h"},
		{"argument", []string{"extra"}, nil, `unexpected argument "extra"; see visitors -h`},
		{"store", []string{"-store", "etcd"}, nil, "-store etcd: want embedded, redis or memory"},
		{"redis prefix", []string{"-store", "redis", "-redis-prefix", "a{b}"}, nil, `-redis-prefix "a{b}"`},
		{"durability", []string{"-durability", "often"}, nil, "-durability often: want batch or sync"},
		{"flush interval", []string{"-flush-interval", "0s"}, nil, "-flush-interval 0s: want a positive duration"},
		{"no data dir", []string{"-data", ""}, nil, "-data must name a directory"},
		{"slow request under the clock's tick", []string{"-slow-request", "500us"}, nil, "-slow-request 500us: want a duration of at least 1ms"},
		{"window", []string{"-flight-recorder-window", "0s"}, nil, "-flight-recorder-window 0s: want a positive duration"},
		{"trace every", []string{"-trace-every", "0s"}, nil, "-trace-every 0s: want a positive duration"},
		{"trace keep", []string{"-trace-keep", "0"}, nil, "-trace-keep 0: want a whole number, at least 1"},
		{"no trace dir", []string{"-store", "memory", "-data", "", "-flight-recorder"}, nil, "-trace-dir or -data must name a directory"},
		{"proxy range", []string{"-trusted-proxies", "10.0.0.0/33"}, nil, `-trusted-proxies 10.0.0.0/33: "10.0.0.0/33": want a CIDR range`},
		{"proxy name", []string{"-trusted-proxies", "proxy.local"}, nil, `-trusted-proxies proxy.local: "proxy.local": want a CIDR range`},
		{"rate unit", []string{"-client-rate", "10/week"}, nil, "-client-rate 10/week: want N/s, N/m, N/h or N/d"},
		{"rate negative", []string{"-client-rate", "-1/s"}, nil, "-client-rate -1/s: want"},
		{"rate NaN", []string{"-client-new-keys", "NaN/h"}, nil, "-client-new-keys NaN/h: want"},
		{"burst", []string{"-client-burst", "0"}, nil, "-client-burst 0: want a whole number, at least 1"},
		{"repeat window", []string{"-repeat-window", "-1s"}, nil, "-repeat-window -1s: want a duration such as 30m or 24h, 0 or more"},
		{"max conns", []string{"-max-conns", "-1"}, nil, "-max-conns -1: want a whole number, 0 or more (0: no limit)"},
		{"max conns per client", []string{"-max-conns-per-client", "-1"}, nil, "-max-conns-per-client -1: want a whole number, 0 or more (0: no limit)"},
		{"max keys", []string{"-max-keys", "-5"}, nil, "-max-keys -5: want a whole number, 0 or more (0: no limit)"},
		{"block profile rate", []string{"-block-profile-rate", "-1"}, nil, "-block-profile-rate -1: want a whole number of nanoseconds, 0 or more (0: off)"},
		{"mutex profile fraction", []string{"-mutex-profile-fraction", "-1"}, nil, "-mutex-profile-fraction -1: want a whole number, 0 or more (0: off)"},
		{"flight recorder bytes", []string{"-flight-recorder-max-bytes", "0"}, nil, "-flight-recorder-max-bytes 0: want a number of bytes, at least 1"},
		{"max streams", []string{"-max-streams", "0"}, nil, "-max-streams 0: want a whole number, at least 1"},
		{"env negative", nil, map[string]string{"VISITORS_MAX_CONNS": "-1"}, "VISITORS_MAX_CONNS=-1: want a whole number, 0 or more (0: no limit); see visitors -h"},
		{"no value", []string{"-addr"}, nil, "-addr needs a value; see visitors -h"},
		{"bool", []string{"-unique=perhaps"}, nil, "-unique perhaps: want true or false; see visitors -h"},
		{"env quoted", nil, map[string]string{"VISITORS_STORE": "two words"}, `VISITORS_STORE="two words": want embedded`},
		{"token file missing", []string{"-admin-token-file", filepath.Join(dir, "nope")}, nil, "-admin-token-file: open"},
		{"token file empty", []string{"-admin-token-file", empty}, nil, "-admin-token-file " + empty + ": the root token is empty"},
		{"token file a newline", []string{"-admin-token-file", newline}, nil, "the root token is empty"},
		{"token short", []string{"-admin-token-file", short}, nil, "the root token is 15 bytes; want at least 16"},
		{"token with a space", []string{"-admin-token-file", spaced}, nil, "want printable ASCII without spaces"},
		{"token file too big", []string{"-admin-token-file", big}, nil, "longer than 4096 bytes"},
		{"token env short", nil, map[string]string{"VISITORS_ADMIN_TOKEN": "short"}, "VISITORS_ADMIN_TOKEN: the root token is 5 bytes"},
		{"token twice", []string{"-admin-token-file", short}, map[string]string{"VISITORS_ADMIN_TOKEN": testRoot}, "not both"},
		{"import max bytes", []string{"-import-max-bytes", "0"}, nil, "-import-max-bytes 0: want a number of bytes, at least 1"},
		{"auth failures", []string{"-api-auth-failures", "5"}, nil, "-api-auth-failures 5: want N/s"},
		{"https port", []string{"-tls-cert", "c.pem", "-tls-key", "k.pem", "-https-port", "65536"}, nil, "-https-port 65536: want a port number, 0 to 65535"},
		{"https port without https", []string{"-https-port", "8443"}, nil, "-https-port needs -tls-domains or -tls-cert"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseFlags(tt.args, func(k string) string { return tt.env[k] }, io.Discard)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("ParseFlags(%q, %v) error = %v, want one containing %q", tt.args, tt.env, err, tt.want)
			}
			if ue := (*UsageError)(nil); err != flag.ErrHelp && !errors.As(err, &ue) {
				t.Errorf("ParseFlags(%q, %v) error = %T, want a *UsageError (exit status 2)", tt.args, tt.env, err)
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
	resp, err := webtest.Client.Do(req)
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
	resp, err := webtest.Client.Get("http://" + r.addr + "/hello?name=idle") // leaves a keep-alive connection
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

// TestDefaultTimeouts: the public listener's limits are those
// docs/configuration.md gives; the admin listener's write deadline is
// five minutes, long enough for a CPU profile or trace.
func TestDefaultTimeouts(t *testing.T) {
	want := Timeouts{ReadHeader: 5 * time.Second, Read: 5 * time.Second, Write: 10 * time.Second, Idle: time.Minute, MaxHeaderBytes: 16 << 10, AdminWrite: 5 * time.Minute}
	if DefaultTimeouts != want {
		t.Errorf("DefaultTimeouts = %+v, want %+v", DefaultTimeouts, want)
	}
}

// TestDocsFlagsTable: the table of flags in docs/configuration.md (its
// "## Flags" section, which go run ./scripts/gendocs makes from
// visitors -h) has a row for every flag visitors -h lists, and none for
// a flag that does not exist.
func TestDocsFlagsTable(t *testing.T) {
	var usage strings.Builder
	if _, err := ParseFlags([]string{"-h"}, func(string) string { return "" }, &usage); err != flag.ErrHelp {
		t.Fatalf("ParseFlags(-h) = %v, want flag.ErrHelp", err)
	}
	want := map[string]bool{}
	for line := range strings.Lines(usage.String()) {
		if name, ok := strings.CutPrefix(line, "  -"); ok {
			name, _, _ = strings.Cut(strings.TrimSpace(name), " ")
			want[name] = true
		}
	}
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "configuration.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(doc), "\n## Flags\n")
	if !ok {
		t.Fatal("docs/configuration.md has no ## Flags section")
	}
	section, _, _ = strings.Cut(section, "\n## ")
	got := map[string]bool{}
	for line := range strings.Lines(section) {
		if name, ok := strings.CutPrefix(line, "| `-"); ok {
			name, _, _ = strings.Cut(name, "`")
			got[name] = true
		}
	}
	for name := range want {
		if !got[name] {
			t.Errorf("docs/configuration.md's flags table lacks -%s", name)
		}
	}
	for name := range got {
		if !want[name] {
			t.Errorf("docs/configuration.md's flags table has -%s, which visitors -h does not list", name)
		}
	}
	if len(want) < 30 {
		t.Errorf("visitors -h lists %d flags: the usage was not parsed", len(want))
	}
}

// TestFlagDefaultsTakeTheirForms: every flag visitors -h lists takes its
// own default when given it: a form stricter than the default, or one
// that expects a value of another type than its flag's, fails here
// rather than in an operator's hands.
func TestFlagDefaultsTakeTheirForms(t *testing.T) {
	var usage strings.Builder
	if _, err := ParseFlags([]string{"-h"}, func(string) string { return "" }, &usage); err != flag.ErrHelp {
		t.Fatalf("ParseFlags(-h) = %v, want flag.ErrHelp", err)
	}
	var args []string
	var name string
	for line := range strings.Lines(usage.String()) {
		if n, ok := strings.CutPrefix(line, "  -"); ok {
			name, _, _ = strings.Cut(strings.TrimSpace(n), " ")
			continue
		}
		i := strings.LastIndex(line, "(default ")
		if i < 0 || name == "" || name == "tls-domains" { // "" is a list of no names, refused when given
			continue
		}
		def := line[i+len("(default "):]
		q, err := strconv.QuotedPrefix(def)
		if err != nil {
			t.Fatalf("-%s: default %s: %v", name, def, err)
		}
		v, _ := strconv.Unquote(q)
		args = append(args, "-"+name+"="+v)
	}
	if len(args) < 30 {
		t.Fatalf("visitors -h gave %d defaults: the usage was not parsed", len(args))
	}
	for _, a := range args {
		if _, err := ParseFlags([]string{a}, func(string) string { return "" }, io.Discard); err != nil {
			t.Errorf("ParseFlags(%q) = %v, want its default taken", a, err)
		}
	}
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
			if err := (boltstore.Offline{Dir: cfg.Data}).Export(&dump); err != nil {
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
			cfg := uniqueConfig(t, st)
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

// mainDeadline bounds a Main that should return at once: a subcommand,
// a refused command line, a failed start.
const mainDeadline = 10 * time.Second

// mainReturns runs Main with a context that ends at mainDeadline, and
// fails the test if Main was still running then: one that serves where
// it should return stops there, with a message, instead of serving until
// go test's timeout (mutation app.go:86:9, ParseFlags' error negated,
// ran a refused configuration).
func mainReturns(t *testing.T, args []string, getenv func(string) string, stdin io.Reader, stdout io.Writer) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), mainDeadline)
	defer cancel()
	err := Main(ctx, args, getenv, stdin, stdout)
	if ctx.Err() != nil {
		t.Errorf("Main(%q) = %v after its context ended at %v: it served, want it to return at once", args, err, mainDeadline)
	}
	return err
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
		err := mainReturns(t, args, func(k string) string { return env[k] }, strings.NewReader(stdin), &out)
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

// TestMainWithoutArguments: with no argument at all, Main runs the
// service with its configuration from the environment alone (here one
// it refuses, so that no server starts).
func TestMainWithoutArguments(t *testing.T) {
	t.Chdir(t.TempDir()) // where the default -data, ./data, would be
	env := map[string]string{"VISITORS_STORE": "etcd"}
	var out bytes.Buffer
	err := mainReturns(t, nil, func(k string) string { return env[k] }, strings.NewReader(""), &out)
	var ue *UsageError
	if !errors.As(err, &ue) || err.Error() != "VISITORS_STORE=etcd: want embedded, redis or memory; see visitors -h" {
		t.Errorf("Main() with VISITORS_STORE=etcd = %v, want a usage error naming it", err)
	}
}

// TestFailedStartClosesTheAdminListener: a start that fails after the
// admin address was taken (here the store, whose -data is a file) gives
// the address back: nothing is left listening.
func TestFailedStartClosesTheAdminListener(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	admin := l.Addr().String()
	l.Close()
	data := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(data, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	err = mainReturns(t, []string{"-addr", "127.0.0.1:0", "-admin-addr", admin, "-data", data}, func(string) string { return "" }, strings.NewReader(""), &out)
	if err == nil {
		t.Fatal("Main with -data a file started")
	}
	again, lerr := net.Listen("tcp", admin)
	if lerr != nil {
		t.Fatalf("after a failed start (%v), the admin address %s is still taken: %v", err, admin, lerr)
	}
	again.Close()
}

// ailingStore is a store whose Health fails while sick is set, and
// whose /hi answers that every number is handed out while exhausted is.
type ailingStore struct {
	store.Store
	sick, exhausted *atomic.Bool
}

func (s ailingStore) Health() error {
	if s.sick.Load() {
		return errors.New("the disk is on fire")
	}
	return s.Store.Health()
}

func (s ailingStore) Hit(ctx context.Context) (uint64, error) {
	if s.exhausted.Load() {
		return 0, store.ErrHiExhausted
	}
	return s.Store.Hit(ctx)
}

// TestHealthzSeesTheStoreAndHi: the admin listener's /healthz answers
// 503 with the cause while the store says it is unhealthy, and while
// /hi's last answer was that its numbers are exhausted; 200 otherwise.
// It catches a health check that asks only one of the two, or reads
// the store's answer the wrong way round.
func TestHealthzSeesTheStoreAndHi(t *testing.T) {
	var sick, exhausted atomic.Bool
	cfg := testConfig()
	cfg.Test = &TestHooks{WrapStore: func(s store.Store) store.Store { return ailingStore{s, &sick, &exhausted} }}
	r := mustStart(t, cfg, DefaultTimeouts, io.Discard)
	healthz := func(step string, want int, wantBody string) {
		t.Helper()
		code, body := mustGetBody(t, "http://"+r.adminAddr+"/healthz")
		if code != want || !strings.Contains(body, wantBody) {
			t.Errorf("%s: GET /healthz = %d %q, want %d with %q", step, code, body, want, wantBody)
		}
	}
	healthz("healthy", 200, "ok")
	sick.Store(true)
	healthz("the store unhealthy", 503, "the disk is on fire")
	sick.Store(false)
	healthz("the store healthy again", 200, "ok")
	exhausted.Store(true)
	if code, body := mustGetBody(t, "http://"+r.addr+"/hi"); code != 503 {
		t.Fatalf("GET /hi with its numbers exhausted = %d %q, want 503", code, body)
	}
	healthz("/hi exhausted", 503, "")
}

// TestHealthzWarnings: /healthz stays 200 and adds a line when the store
// holds -max-keys keys (not one before, and never with no limit), one
// when -max-streams streams are open (likewise), and one when a peer not in -trusted-proxies sent X-Forwarded-For (not
// before). It catches each warning's bound one off or read the wrong
// way round.
func TestHealthzWarnings(t *testing.T) {
	count := func(t *testing.T, addr, name string, header ...string) {
		t.Helper()
		req, _ := http.NewRequest("GET", "http://"+addr+"/counter/"+name+".svg", nil)
		if len(header) == 2 {
			req.Header.Set(header[0], header[1])
		}
		resp, err := webtest.Client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("GET /counter/%s.svg = %d", name, resp.StatusCode)
		}
	}
	healthz := func(t *testing.T, admin, step string, want ...string) {
		t.Helper()
		code, body := mustGetBody(t, "http://"+admin+"/healthz")
		lines := strings.Count(body, "\n")
		if code != 200 || lines != 1+len(want) {
			t.Errorf("%s: GET /healthz = %d %q, want 200 with %d warnings", step, code, body, len(want))
		}
		for _, w := range want {
			if !strings.Contains(body, w) {
				t.Errorf("%s: /healthz %q has no %q", step, body, w)
			}
		}
	}
	stream := func(t *testing.T, addr string) {
		t.Helper()
		resp, err := webtest.Client.Get("http://" + addr + "/counter/s/stream")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { resp.Body.Close() }) // before the server stops
		if resp.StatusCode != 200 {
			t.Fatalf("GET /counter/s/stream = %d", resp.StatusCode)
		}
		webtest.NextJSON[struct{ Total uint64 }](t, webtest.NewEventReader(resp.Body)) // it is open
	}
	t.Run("no limits", func(t *testing.T) {
		r := mustStart(t, testConfig(), DefaultTimeouts, io.Discard)
		count(t, r.addr, "a")
		stream(t, r.addr)
		healthz(t, r.adminAddr, "a key and a stream, no limit")
	})
	t.Run("-max-streams 2", func(t *testing.T) {
		cfg := testConfig()
		cfg.MaxStreams = 2
		r := mustStart(t, cfg, DefaultTimeouts, io.Discard)
		stream(t, r.addr)
		healthz(t, r.adminAddr, "one stream of two")
		stream(t, r.addr)
		healthz(t, r.adminAddr, "two streams of two", "-max-streams 2")
	})
	t.Run("-max-keys 2", func(t *testing.T) {
		cfg := testConfig()
		cfg.MaxKeys = 2
		r := mustStart(t, cfg, DefaultTimeouts, io.Discard)
		count(t, r.addr, "a")
		healthz(t, r.adminAddr, "one key of two")
		count(t, r.addr, "b")
		healthz(t, r.adminAddr, "two keys of two", "-max-keys 2")
		count(t, r.addr, "a", "X-Forwarded-For", "203.0.113.9")
		healthz(t, r.adminAddr, "X-Forwarded-For from an untrusted peer", "-max-keys 2", "X-Forwarded-For")
	})
}

// TestKindAndLevelNames: a store kind names its -store value, and one
// out of range says so rather than panicking; a log level names its
// -log-level value (what -h shows as the default). It catches the
// kind's bound one off and the level's lookup read the wrong way round.
func TestKindAndLevelNames(t *testing.T) {
	if got := StoreMemory.String(); got != "memory" {
		t.Errorf("StoreMemory.String() = %q, want memory", got)
	}
	if got := StoreKind(len(storeNames)).String(); got != "StoreKind(?)" {
		t.Errorf("StoreKind(%d).String() = %q, want StoreKind(?)", len(storeNames), got)
	}
	for _, n := range levelNames {
		l := logLevel(n.level)
		if got := l.String(); got != n.name {
			t.Errorf("logLevel(%v).String() = %q, want %q", n.level, got, n.name)
		}
	}
}

// TestHelpNamesTheStoreKindsArgument: -h names -store's argument
// "string", as the flag package names any string flag, though its Value
// is the service's own StoreKind, which flag.UnquoteUsage would name
// "value"; a flag whose usage names its argument in backquotes keeps that
// name. Mutation survivor flags.go:238:61: with the test of the name
// negated, -h read "-store value".
func TestHelpNamesTheStoreKindsArgument(t *testing.T) {
	var usage strings.Builder
	if _, err := ParseFlags([]string{"-h"}, func(string) string { return "" }, &usage); err != flag.ErrHelp {
		t.Fatalf("ParseFlags(-h) = %v, want flag.ErrHelp", err)
	}
	if !strings.Contains(usage.String(), "\n  -store string\n") {
		t.Errorf("-h does not name -store's argument \"string\":\n%s", usage.String())
	}
}
