package app

import (
	"crypto/sha256"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/rs/zerolog"

	"visitors/internal/api"
	"visitors/internal/client"
	"visitors/internal/compat"
	"visitors/internal/store"
	"visitors/internal/store/redisstore"
	"visitors/internal/web"
)

// EnvPrefix starts the name of the environment variable behind each flag:
// -admin-addr is VISITORS_ADMIN_ADDR. A flag on the command line wins
// over its variable.
const EnvPrefix = "VISITORS_"

// Config is everything the service can be told at start.
type Config struct {
	Addr                 string           // public listener
	AdminAddr            string           // pprof, health and vars; "" disables it
	LogLevel             zerolog.Level    // -log-level: debug, info, warn, error or off (zerolog.Disabled)
	MaxKeys              int              // distinct names held; <= 0 means no limit
	ShutdownTimeout      time.Duration    // how long in-flight requests get at shutdown
	BlockProfileRate     int              // runtime.SetBlockProfileRate; 0 is off
	MutexProfileFraction int              // runtime.SetMutexProfileFraction; 0 is off
	Store                StoreKind        // where counts live: embedded, redis or memory
	Redis                RedisConfig      // where the redis store's counts live
	Data                 string           // the embedded store's directory
	Durability           store.Durability // when a visit is durable: batch or sync
	FlushInterval        time.Duration    // batch: how often counts reach disk
	Metrics              bool             // /metrics on the admin listener, and requests observed
	FlightRecorder       bool             // keep the flight recorder armed for good (else it is armed on demand)
	FlightRecorderWindow time.Duration    // how much execution the flight recorder keeps
	FlightRecorderBytes  uint64           // the most memory the flight recorder's window takes
	SlowRequest          time.Duration    // a request this long is slow: a snapshot is written
	TraceDir             string           // where snapshots go; "" means Data/traces
	TraceEvery           time.Duration    // at most one slow-request snapshot per this long
	TraceKeep            int              // snapshots kept in TraceDir, the newest
	Fair                 Fair             // the fairness rules of the keyed counters
	MaxStreams           int              // live streams open at once; at most half of Fair.MaxConns (see check)
	MaxStreamAge         time.Duration    // how long a live stream lasts before the server ends it
	PublicTop            bool             // serve /top.json, the most visited counters
	Compat               compat.Services  // the closed services whose URLs are answered
	AdminAllowRemote     bool             // let -admin-addr listen on an address that is not loopback
	API                  APIConfig        // the owner API
	TLS                  TLSConfig        // HTTPS on the public listener

	// Test holds hooks for tests. No flag sets it; it is nil in the
	// binary.
	Test *TestHooks
}

// RedisConfig says how to reach Redis for -store redis.
type RedisConfig struct {
	URL      string   // redis://[user:pass@]host:port/db or rediss://
	Cluster  []string // Redis Cluster seeds; nil: the server at URL
	Prefix   string   // starts every Redis name
	Password string   // from VISITORS_REDIS_PASSWORD; replaces the URL's
}

// storeFlags defines on fs the flags that say which store holds the
// counts, the same for the service and for export, import and check:
// -store into kind, with storeHelp; -data into data, with dataHelp; and
// the Redis flags into r. The password has no flag, so that it never
// shows in a process list: it comes from the URL or from the environment
// variable VISITORS_REDIS_PASSWORD.
func storeFlags(fs *flag.FlagSet, kind *StoreKind, data *string, r *RedisConfig, getenv func(string) string, storeHelp, dataHelp string) {
	*kind = StoreEmbedded
	fs.Var(kind, "store", storeHelp)
	fs.StringVar(data, "data", "./data", dataHelp)
	fs.StringVar(&r.URL, "redis-url", redisstore.DefaultURL, "-store redis: `URL` redis://[user:pass@]host:port/db, or rediss:// for TLS (the password may instead come from "+EnvPrefix+"REDIS_PASSWORD)")
	fs.Func("redis-cluster", "-store redis: `host:port[,host:port...]` of a Redis Cluster (user, password and TLS still come from -redis-url)", func(v string) error {
		r.Cluster = nil
		for _, a := range strings.Split(v, ",") {
			if a = strings.TrimSpace(a); a != "" {
				r.Cluster = append(r.Cluster, a)
			}
		}
		return nil
	})
	fs.StringVar(&r.Prefix, "redis-prefix", redisstore.DefaultPrefix, "-store redis: `prefix` of every Redis key, so several services can share one Redis")
	r.Password = getenv(EnvPrefix + "REDIS_PASSWORD")
}

// APIConfig configures the owner API (/api/v1/).
type APIConfig struct {
	// TokenFile is -admin-token-file: the file that holds the root
	// token, read at start.
	TokenFile string
	// RootHash is the SHA-256 of the root token, from TokenFile or
	// VISITORS_ADMIN_TOKEN; nil: no root token, and no API (/api/ is
	// 404). The token itself is not kept.
	RootHash *[32]byte
	// ImportMaxBytes bounds the body of POST /api/v1/import.
	ImportMaxBytes int64
	// AuthFailures is how many failed authentications a client may
	// make; 0 is no limit.
	AuthFailures client.Rate
	// OpenCreate is -open-create: anyone may create a counter that does
	// not exist, and gets a token for it alone.
	OpenCreate bool
}

// maxTokenFileBytes bounds -admin-token-file: a token, not a document.
const maxTokenFileBytes = 4096

// rootToken returns the SHA-256 of the root token, from file or the
// environment variable VISITORS_ADMIN_TOKEN (never a flag's value, which
// ps and /debug/pprof/cmdline show), with a trailing newline trimmed;
// nil if neither names one. A root token that is empty, short or holds
// spaces or control characters is refused, as are both sources at once.
func rootToken(file string, getenv func(string) string) (*[32]byte, error) {
	env := getenv(EnvPrefix + "ADMIN_TOKEN")
	var secret, from string
	switch {
	case file != "" && env != "":
		return nil, errors.New("the root token comes from " + EnvPrefix + "ADMIN_TOKEN or -admin-token-file, not both")
	case file != "":
		f, err := os.Open(file)
		if err != nil {
			return nil, fmt.Errorf("-admin-token-file: %w", err)
		}
		defer f.Close()
		b, err := io.ReadAll(io.LimitReader(f, maxTokenFileBytes+1))
		if err != nil {
			return nil, fmt.Errorf("-admin-token-file: %w", err)
		}
		if len(b) > maxTokenFileBytes {
			return nil, fmt.Errorf("-admin-token-file %s: longer than %d bytes; it must hold the root token alone", file, maxTokenFileBytes)
		}
		secret, from = string(b), "-admin-token-file "+file
	case env != "":
		secret, from = env, EnvPrefix+"ADMIN_TOKEN"
	default:
		return nil, nil
	}
	secret = strings.TrimSuffix(strings.TrimSuffix(secret, "\n"), "\r")
	if err := api.CheckRoot(secret); err != nil {
		return nil, fmt.Errorf("%s: %w", from, err)
	}
	sum := sha256.Sum256([]byte(secret))
	return &sum, nil
}

// TestHooks change the service in ways only a test wants.
type TestHooks struct {
	// WrapStore, if set, wraps the store the service counts with: to make
	// a request slow, say.
	WrapStore func(store.Store) store.Store
}

// streamRoom returns the most live streams -max-conns maxConns leaves
// room for: half of it, at least 1; 0 if maxConns is 0, no limit.
func streamRoom(maxConns int) int {
	if maxConns <= 0 {
		return 0
	}
	return max(1, maxConns/2)
}

// MinSlowRequest is the least -slow-request: the resolution of the clock
// that times requests.
const MinSlowRequest = time.Millisecond

// TraceDirOrDefault returns where flight-recorder snapshots go.
func (c Config) TraceDirOrDefault() string {
	if c.TraceDir != "" {
		return c.TraceDir
	}
	return filepath.Join(c.Data, "traces")
}

// envName returns the environment variable behind flag name.
func envName(name string) string {
	return EnvPrefix + strings.ToUpper(strings.ReplaceAll(name, "-", "_"))
}

// serveUsage is what visitors -h prints before the flags.
const serveUsage = `Usage:
  visitors [flags]                  serve
  visitors export [-data dir | -store redis ...]
                                    write every count as JSON to stdout
  visitors import [-data dir | -store redis ...] [-replace] [file]
                                    read counts from a JSON export (stdin if no file)
  visitors check [-data dir]        verify the embedded store without changing it
  visitors health [-admin-addr a]   ask the running service's /healthz (a container's health check)
  visitors token -name N -prefix P  make an owner token for the keys under P (or -backup), for /dashboard
  visitors -version                 print the version and the VCS revision
  visitors COMMAND -h               the flags of export, import, check, health or token

visitors counts visitors. Each flag can also be set by the environment
variable named beside it.

Flags:
`

// serveForms are the values the service's flags take, where their type
// takes more: a negative limit has no meaning, nor does a zero
// interval. Fair's are [fairForms].
var serveForms = map[string]form{
	"log-level":                 {"debug, info, warn, error or off", nil},
	"max-keys":                  wholeNoLimit,
	"shutdown-timeout":          {"a duration such as 10s or 1m, 0 or more (0: do not wait)", atLeast(time.Duration(0))},
	"block-profile-rate":        {"a whole number of nanoseconds, 0 or more (0: off)", atLeast(0)},
	"mutex-profile-fraction":    {"a whole number, 0 or more (0: off)", atLeast(0)},
	"store":                     {"embedded, redis or memory", nil},
	"durability":                {"batch or sync", nil},
	"flush-interval":            positiveDur,
	"flight-recorder-window":    positiveDur,
	"flight-recorder-max-bytes": {"a number of bytes, at least 1", atLeast(uint64(1))},
	"slow-request":              {"a duration of at least " + MinSlowRequest.String() + ", the resolution of the request clock, such as 250ms or 2s", atLeast(MinSlowRequest)},
	"trace-every":               positiveDur,
	"trace-keep":                wholeAtLeast1,
	"max-streams":               wholeAtLeast1,
	"max-stream-age":            positiveDur,
	"import-max-bytes":          bytesAtLeast1,
	"api-auth-failures":         rateForm,
	"https-port":                {"a port number, 0 to 65535 (0: -addr's)", func(v any) bool { return v.(int) >= 0 && v.(int) <= 65535 }},
}

// ParseFlags parses the command-line args, with getenv supplying the
// defaults each VISITORS_* variable sets. When asked for help it writes
// the usage to stdout and returns flag.ErrHelp. A value or a
// combination it refuses is a [UsageError].
func ParseFlags(args []string, getenv func(string) string, stdout io.Writer) (Config, error) {
	var c Config
	cl := newCommandLine("visitors", serveUsage, func(string) bool { return true })
	fs := cl.fs
	fs.StringVar(&c.Addr, "addr", ":8080", "public `address` to listen on, or fd:N for a listening socket passed as file descriptor N; "+DefaultTLSAddr+" instead of :8080 when -tls-domains or -tls-cert is set")
	fs.StringVar(&c.AdminAddr, "admin-addr", "127.0.0.1:6060", "admin `address` for /debug/pprof/, /debug/vars and /healthz, or fd:N; empty disables it")
	c.LogLevel = zerolog.InfoLevel
	fs.Var((*logLevel)(&c.LogLevel), "log-level", "log `level`: debug, info, warn, error or off")
	fs.IntVar(&c.MaxKeys, "max-keys", 1_000_000, "most distinct names held; a new name past it gets 503 (0: no limit)")
	fs.DurationVar(&c.ShutdownTimeout, "shutdown-timeout", 10*time.Second, "how long in-flight requests may take to finish at shutdown (0: do not wait)")
	fs.IntVar(&c.BlockProfileRate, "block-profile-rate", 0, "runtime.SetBlockProfileRate `rate` in ns for the block profile (0: off)")
	fs.IntVar(&c.MutexProfileFraction, "mutex-profile-fraction", 0, "runtime.SetMutexProfileFraction `fraction` for the mutex profile (0: off)")
	storeFlags(fs, &c.Store, &c.Data, &c.Redis, getenv,
		"where counts live: embedded (a durable file in -data), redis (shared by instances; see -redis-url) or memory (kept nowhere)",
		"data `directory` of the embedded store, created if missing")
	fs.Var(&c.Durability, "durability", "batch: counts reach disk (or Redis) every -flush-interval; sync: a visit is answered only once it is on disk (or confirmed by Redis)")
	fs.DurationVar(&c.FlushInterval, "flush-interval", 100*time.Millisecond, "batch durability: how often counts are written (a crash loses the visits answered since the last written pass began: at most this plus one pass, visitors_store_flush_duration_seconds; while the data file is checked after a start, every visit since the start)")
	fs.BoolVar(&c.Metrics, "metrics", true, "serve Prometheus metrics at /metrics on the admin listener")
	fs.BoolVar(&c.FlightRecorder, "flight-recorder", false, "keep the flight recorder armed for good: the last -flight-recorder-window of execution trace in memory, written to -trace-dir after a slow request (off: disarmed until POST /debug/flightrecorder/arm?for=30m on the admin listener)")
	fs.DurationVar(&c.FlightRecorderWindow, "flight-recorder-window", 10*time.Second, "how much recent execution the flight recorder keeps")
	fs.Uint64Var(&c.FlightRecorderBytes, "flight-recorder-max-bytes", 32<<20, "the most memory, in `bytes`, the flight recorder's window may take; past it the window is shorter")
	fs.DurationVar(&c.SlowRequest, "slow-request", 250*time.Millisecond, "a request that takes this long is slow: counted, and a flight-recorder snapshot is written (at least 1ms)")
	fs.StringVar(&c.TraceDir, "trace-dir", "", "`directory` for flight-recorder snapshots (default: <-data>/traces)")
	fs.DurationVar(&c.TraceEvery, "trace-every", time.Minute, "at most one slow-request snapshot per this long")
	fs.IntVar(&c.TraceKeep, "trace-keep", 10, "how many snapshots to keep in -trace-dir, the newest")
	c.Fair.flags(fs)
	fs.BoolVar(&c.PublicTop, "public-top", false, "serve /top.json and the landing page's most visited counters (off: keys may be private)")
	c.Compat = compat.AllServices
	fs.Var(&c.Compat, "compat", "the URLs of closed counter services to answer, counting into keys of their own (docs/migrate.md): all, none, or a comma-separated `list` of hits, countapi, visitor-badge and ghpvc")
	fs.IntVar(&c.MaxStreams, "max-streams", web.DefaultMaxStreams, "most live streams (/counter/{key}/stream) open at once, at most half of -max-conns (lowered to it by default); past it 503")
	fs.DurationVar(&c.MaxStreamAge, "max-stream-age", web.DefaultStreamMaxAge, "how long a live stream lasts (less up to a tenth) before the server ends it, and the browser reconnects")
	fs.BoolVar(&c.AdminAllowRemote, "admin-allow-remote", false, "let -admin-addr listen on an address that is not loopback (pprof and /debug/vars show keys, names and flags; a warning is logged)")
	fs.StringVar(&c.API.TokenFile, "admin-token-file", "", "`file` holding the owner API's and /dashboard's root token (or set "+EnvPrefix+"ADMIN_TOKEN); without one the embedded store uses -data's root-token, made at its first start, and the others serve no /api/ (404)")
	fs.Int64Var(&c.API.ImportMaxBytes, "import-max-bytes", api.DefaultImportMaxBytes, "largest body of POST /api/v1/import, in `bytes`; past it 413")
	c.API.AuthFailures = api.DefaultFailures
	fs.Var(&c.API.AuthFailures, "api-auth-failures", "failed owner-API authentications per client, as N/s, N/m, N/h or N/d; past it 429 (0: no limit)")
	c.TLS.flags(fs)
	fs.BoolVar(&c.API.OpenCreate, "open-create", false, "let anyone create a counter that does not exist, with POST /api/v1/counters/{key} and no token, and get a token for that key alone (within -client-new-keys and -max-keys; needs the owner API)")

	forms := maps.Clone(serveForms)
	maps.Copy(forms, fairForms)
	if err := cl.parseNone(args, forms, getenv, stdout); err != nil {
		return c, err
	}
	streamsSet := setOnCommandLine(fs, "max-streams") || getenv(envName("max-streams")) != ""
	if err := c.check(getenv, setOnCommandLine(fs, "tls-domains"), setOnCommandLine(fs, "addr"), streamsSet); err != nil {
		return c, usage(err)
	}
	return c, nil
}

// check refuses flags that contradict each other or name what cannot
// be read, and completes c: the -addr of HTTPS unless addrSet, the root
// token's hash, -max-streams within -max-conns's room unless
// streamsSet. Each flag's own range is its form's (serveForms).
func (c *Config) check(getenv func(string) string, domainsSet, addrSet, streamsSet bool) error {
	if err := c.TLS.check(c.Data, domainsSet); err != nil {
		return err
	}
	if room := streamRoom(c.Fair.MaxConns); room > 0 && c.MaxStreams > room {
		if streamsSet {
			return fmt.Errorf("-max-streams %d: at most half of -max-conns %d (%d): each live stream holds a connection, and the other half is left to ordinary requests", c.MaxStreams, c.Fair.MaxConns, room)
		}
		c.MaxStreams = room
	}
	if c.TLS.On() && getenv(envName("addr")) == "" && !addrSet {
		c.Addr = DefaultTLSAddr
	}
	if c.Store == StoreRedis && strings.ContainsAny(c.Redis.Prefix, "{}") {
		return fmt.Errorf("-redis-prefix %q: it may not hold { or }, which would move keys between cluster slots", c.Redis.Prefix)
	}
	if c.FlightRecorder && c.TraceDir == "" && c.Data == "" {
		return errors.New("-trace-dir or -data must name a directory for flight-recorder snapshots")
	}
	if c.Store == StoreEmbedded && c.Data == "" {
		return errors.New("-data must name a directory for the embedded store")
	}
	root, err := rootToken(c.API.TokenFile, getenv)
	if err != nil {
		return err
	}
	c.API.RootHash = root
	if c.API.OpenCreate && root == nil {
		return errors.New("-open-create needs the owner API: give a root token with -admin-token-file or " + EnvPrefix + "ADMIN_TOKEN")
	}
	return nil
}
