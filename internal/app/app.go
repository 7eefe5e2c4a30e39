// Package app assembles visitors from its parts: it reads the
// configuration, opens the store and the log, starts the public and admin
// listeners, and shuts them down in order when its context ends.
package app

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"runtime"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"

	"visitors/internal/admin"
	"visitors/internal/api"
	"visitors/internal/buildinfo"
	"visitors/internal/coarse"
	"visitors/internal/flightrec"
	"visitors/internal/logsink"
	"visitors/internal/metrics"
	"visitors/internal/store"
	"visitors/internal/store/boltstore"
	"visitors/internal/store/memstore"
	"visitors/internal/store/redisstore"
	"visitors/internal/web"
)

// Timeouts of the public listener: a slow client cannot hold a
// connection, or a goroutine, for longer than these. The admin listener
// shares ReadHeader, Idle and MaxHeaderBytes, and has a write deadline
// of its own, AdminWrite.
type Timeouts struct {
	ReadHeader, Read, Write, Idle time.Duration
	MaxHeaderBytes                int
	AdminWrite                    time.Duration // long enough for a CPU profile or trace
}

// DefaultTimeouts are the public listener's limits. Read equals
// ReadHeader: every endpoint is a GET without a body, and when the two
// deadlines are equal net/http sets the read deadline once per request
// instead of twice (a runtime timer update each; see docs/performance.md).
var DefaultTimeouts = Timeouts{
	ReadHeader:     5 * time.Second,
	Read:           5 * time.Second,
	Write:          10 * time.Second,
	Idle:           60 * time.Second,
	MaxHeaderBytes: 16 << 10,
	AdminWrite:     5 * time.Minute,
}

// Main parses args, then runs the service until ctx is done; with
// -version, it prints what the binary was built from and returns; with
// export, import or check, it runs that subcommand. Logs go to stdout as
// JSON lines, and so does the usage asked for with -h (then Main returns
// flag.ErrHelp). A command line it refuses is a [UsageError]: one line,
// for stderr.
func Main(ctx context.Context, args []string, getenv func(string) string, stdin io.Reader, stdout io.Writer) error {
	if len(args) > 0 {
		switch args[0] {
		case "export":
			return Export(args[1:], getenv, stdout)
		case "import":
			return Import(args[1:], getenv, stdin, stdout)
		case "check":
			return Check(args[1:], getenv, stdout)
		case "-version", "--version":
			if len(args) > 1 {
				return &UsageError{Err: fmt.Errorf("%s takes no argument, not %q", args[0], args[1]), Help: "visitors"}
			}
			_, err := fmt.Fprintln(stdout, buildinfo.Read())
			return err
		}
	}
	cfg, err := ParseFlags(args, getenv, stdout)
	if err != nil {
		return err
	}
	return Run(ctx, cfg, DefaultTimeouts, stdout)
}

// Run serves cfg until ctx is done, then stops accepting, lets in-flight
// requests finish for up to cfg.ShutdownTimeout, flushes the log and
// returns nil. It returns an error if the service cannot start or a
// listener fails.
func Run(ctx context.Context, cfg Config, to Timeouts, stdout io.Writer) error {
	runtime.SetBlockProfileRate(cfg.BlockProfileRate)
	runtime.SetMutexProfileFraction(cfg.MutexProfileFraction)

	sink := logsink.New(stdout, logsink.Options{})
	log := zerolog.New(sink).Level(cfg.LogLevel).With().Timestamp().Logger()
	defer func() {
		if err := sink.Close(); err != nil {
			fmt.Fprintf(os.Stderr, "visitors: flush log: %v\n", err)
		}
	}()

	tlsConf, httpHandler, err := cfg.TLS.setup(cfg.Data, log) // before the store: a bad file stops the start at once
	if err != nil {
		return err
	}
	adm, err := listenAdmin(cfg) // before the store too: a refused address stops the start before anything is opened or logged
	if err != nil {
		return err
	}
	serving := false // from then on the servers own the listeners
	defer func() {
		if adm != nil && !serving {
			adm.Close()
		}
	}()

	hostname, err := os.Hostname() // once: it is a syscall
	if err != nil {
		hostname = "unknown"
	}
	st, err := openStore(cfg, log)
	if err != nil {
		return err
	}
	defer func() {
		if err := st.Close(); err != nil {
			log.Error().Err(err).Msg("close the store: counts not yet on disk are lost")
		}
	}()
	rules, closeRules, err := fairRules(cfg, st, log)
	if err != nil {
		return err
	}
	defer func() { // after the listeners stop, before the store closes
		if err := closeRules(); err != nil {
			log.Error().Err(err).Msg("write unique visitors: the last second's may be counted again")
		}
	}()
	if cfg.Test != nil && cfg.Test.WrapStore != nil {
		st = cfg.Test.WrapStore(st)
	}

	var fr *flightrec.Recorder
	if cfg.FlightRecorder {
		fr, err = flightrec.Start(flightrec.Options{
			Dir:      cfg.TraceDirOrDefault(),
			Window:   cfg.FlightRecorderWindow,
			MaxBytes: cfg.FlightRecorderBytes,
			Every:    cfg.TraceEvery,
			Keep:     cfg.TraceKeep,
			Log:      log,
		})
		if err != nil {
			return fmt.Errorf("%w (-flight-recorder=false turns it off)", err)
		}
		defer fr.Close()
	}
	var requests *metrics.Requests
	if cfg.Metrics && cfg.AdminAddr != "" || fr != nil {
		clock := coarse.Start(time.Millisecond) // the resolution MinSlowRequest quotes
		defer clock.Stop()
		o := metrics.RequestsOptions{Clock: clock, SlowRequest: cfg.SlowRequest}
		if fr != nil {
			o.OnSlow = fr.Slow
		}
		requests = metrics.NewRequests(o)
	}

	pub, err := Listen(cfg.Addr)
	if err != nil {
		return fmt.Errorf("listen on -addr %s: %w", cfg.Addr, err)
	}
	conns := newGate(pub, cfg.Fair.MaxConns, cfg.Fair.MaxConnsPerClient, &cfg.Fair.TrustedProxies)
	pub = conns
	wc := web.Config{Store: st, Log: log, Hostname: hostname, Requests: requests, Rules: rules, MaxStreams: cfg.MaxStreams, PublicTop: cfg.PublicTop}
	if cfg.API.RootHash != nil {
		ac := api.Config{
			Store:          st,
			RootHash:       *cfg.API.RootHash,
			Log:            log,
			Trusted:        &cfg.Fair.TrustedProxies,
			Failures:       cfg.API.AuthFailures,
			NoFailureLimit: cfg.API.AuthFailures.Off(),
			ImportMaxBytes: cfg.API.ImportMaxBytes,
			OpenCreate:     cfg.API.OpenCreate,
			NewKeys:        rules.Limiter, // one budget of new counters per client, badges and API alike
			NewKeysRate:    cfg.Fair.ClientNewKeys,
		}
		if cfg.Fair.Unique {
			ac.Uniques = rules.Uniques
		}
		wc.API = api.New(ac)
		log.Info().Str("api", api.Prefix).Bool("open_create", cfg.API.OpenCreate).Msg("owner API on")
	}
	public := web.New(wc)
	srv := &http.Server{
		Handler:           public,
		ReadHeaderTimeout: to.ReadHeader,
		ReadTimeout:       to.Read,
		WriteTimeout:      to.Write,
		IdleTimeout:       to.Idle,
		MaxHeaderBytes:    to.MaxHeaderBytes,
		ErrorLog:          zerologStd(log),
		ConnState:         conns.connState,
		TLSConfig:         tlsConf,
	}
	srv.RegisterOnShutdown(public.Shutdown) // live streams end, so Shutdown need not wait them out
	servers := []*http.Server{srv}
	listeners := []net.Listener{pub}
	log.Info().Str("addr", pub.Addr().String()).Bool("https", tlsConf != nil).Msg("listening")

	if adm != nil {
		if remote := notLoopback(adm.Addr()); remote != "" { // and -admin-allow-remote, or listenAdmin refused it
			log.Warn().Str("admin_addr", remote).Msg("the admin listener is not on loopback (-admin-allow-remote): keep it behind a firewall, its profiles show keys, names and flags")
		}
		ao := admin.Options{
			Health: func() error {
				if err := st.Health(); err != nil {
					return err
				}
				return public.HiExhausted()
			},
			Warnings: func() []string { return warnings(public, st, cfg) },
			Stats: func() map[string]any {
				vars := map[string]any{"log_lines_written": sink.Written(), "log_lines_dropped": sink.Dropped(), "keys": st.Keys()}
				if b, ok := st.(backend); ok {
					vars["store"] = b.Vars()
				}
				return vars
			},
		}
		if requests != nil && cfg.Metrics {
			reg, err := registry(cfg, requests, st, sink, fr, conns, public)
			if err != nil {
				pub.Close()
				return err
			}
			ao.Metrics = metrics.Handler(reg)
		}
		if fr != nil {
			ao.FlightRecorder = fr
		}
		asrv := &http.Server{
			Handler:           admin.Handler(ao),
			ReadHeaderTimeout: to.ReadHeader,
			WriteTimeout:      to.AdminWrite,
			IdleTimeout:       to.Idle,
			MaxHeaderBytes:    to.MaxHeaderBytes,
			ErrorLog:          zerologStd(log),
		}
		servers = append(servers, asrv)
		listeners = append(listeners, adm)
		log.Info().Str("admin_addr", adm.Addr().String()).Msg("admin listening")
	}

	if httpHandler != nil && cfg.TLS.HTTPAddr != "" {
		hl, err := Listen(cfg.TLS.HTTPAddr)
		if err != nil {
			pub.Close() // and adm, when Run returns
			return fmt.Errorf("listen on -http-addr %s: %w", cfg.TLS.HTTPAddr, err)
		}
		servers = append(servers, &http.Server{
			Handler:           httpHandler,
			ReadHeaderTimeout: to.ReadHeader,
			ReadTimeout:       to.Read,
			WriteTimeout:      to.Write,
			IdleTimeout:       to.Idle,
			MaxHeaderBytes:    to.MaxHeaderBytes,
			ErrorLog:          zerologStd(log),
		})
		listeners = append(listeners, hl)
		log.Info().Str("http_addr", hl.Addr().String()).Bool("acme_http_01", len(cfg.TLS.Domains) > 0).Msg("plain HTTP listening: redirects to HTTPS")
	}

	errc := make(chan error, len(servers))
	serving = true
	for i, s := range servers {
		go func() { errc <- serve(s, listeners[i]) }()
	}

	select {
	case <-ctx.Done():
		log.Info().Msg("shutting down")
	case err := <-errc:
		// A listener failed; stop the others and report it.
		shutdown(servers, cfg.ShutdownTimeout)
		return fmt.Errorf("serve: %w", err)
	}
	if err := shutdown(servers, cfg.ShutdownTimeout); err != nil {
		log.Error().Err(err).Msg("in-flight requests did not finish in time")
	}
	log.Info().Msg("stopped")
	return nil
}

// listenAdmin listens on cfg.AdminAddr, or returns nil if it is empty.
// An address that is not loopback is a [UsageError] unless
// cfg.AdminAllowRemote: pprof, /debug/vars and the flight recorder show
// keys, names and flags to whoever reaches it.
func listenAdmin(cfg Config) (net.Listener, error) {
	if cfg.AdminAddr == "" {
		return nil, nil
	}
	adm, err := Listen(cfg.AdminAddr)
	if err != nil {
		return nil, fmt.Errorf("listen on -admin-addr %s: %w", cfg.AdminAddr, err)
	}
	if remote := notLoopback(adm.Addr()); remote != "" && !cfg.AdminAllowRemote {
		adm.Close()
		return nil, usage(fmt.Errorf("-admin-addr %s listens on %s, which is not loopback: pprof, /debug/vars and the flight recorder show keys, names and flags to whoever reaches it; listen on 127.0.0.1 or [::1], or add -admin-allow-remote to mean it", cfg.AdminAddr, remote))
	}
	return adm, nil
}

// backend is what a store offers beyond [store.Store] for an operator
// to read: its own Prometheus collectors, and its counters for
// /debug/vars. The embedded and Redis stores offer it; the memory store
// has nothing of its own to report.
type backend interface {
	Collectors() []prometheus.Collector
	Vars() any
}

var (
	_ backend = (*boltstore.Store)(nil)
	_ backend = (*redisstore.Store)(nil)
)

// registry returns the Prometheus registry of /metrics: the requests,
// the store (what every store reports, and the backend's own
// collectors), the log, the flight recorder if fr is not nil, the public
// connections, what the public server noticed, and the Go runtime and
// process.
func registry(cfg Config, requests *metrics.Requests, st store.Store, sink *logsink.Writer, fr *flightrec.Recorder, conns *connGate, public *web.Server) (*prometheus.Registry, error) {
	cs := []prometheus.Collector{requests}
	cs = append(cs, metrics.Store(metrics.StoreSource{MaxKeys: cfg.MaxKeys, Keys: st.Keys, Health: st.Health})...)
	if b, ok := st.(backend); ok {
		cs = append(cs, b.Collectors()...)
	}
	cs = append(cs, metrics.Log(sink.Written, sink.Dropped)...)
	if fr != nil {
		cs = append(cs, metrics.FlightRecorder(fr.Snapshots)...)
	}
	cs = append(cs, metrics.Connections(func() float64 { return float64(conns.Open()) }, conns.Refused)...)
	cs = append(cs, metrics.UntrustedForwarded(func() uint64 { n, _ := public.UntrustedForwarded(); return n }))
	return metrics.NewRegistry(cs...)
}

// warnings returns the lines /healthz adds to its status: what the
// operator should know and fix that does not make the service unhealthy.
//
// A 503 that concerns one request (a new name past -max-keys, a stream
// past -max-streams) is a warning, not unhealthy: a load balancer would
// take away an instance that serves every other request.
func warnings(public *web.Server, st store.Store, cfg Config) []string {
	var ws []string
	if cfg.MaxKeys > 0 && st.Keys() >= cfg.MaxKeys {
		ws = append(ws, fmt.Sprintf("the store holds %d keys, -max-keys %d: every new name is answered 503 until an owner deletes keys or the limit is raised", st.Keys(), cfg.MaxKeys))
	}
	if n := public.Streams(); cfg.MaxStreams > 0 && n >= cfg.MaxStreams {
		ws = append(ws, fmt.Sprintf("%d live streams are open, -max-streams %d: a new stream is answered 503 until one ends or the limit is raised", n, cfg.MaxStreams))
	}
	if n, peer := public.UntrustedForwarded(); n > 0 {
		ws = append(ws, fmt.Sprintf("requests with X-Forwarded-For or Forwarded from a peer not in -trusted-proxies: %d, the first from %s; the header was ignored: if that is your reverse proxy, list it in -trusted-proxies, or every visitor behind it counts as one client", n, peer))
	}
	return ws
}

// openStore opens the store cfg names.
func openStore(cfg Config, log zerolog.Logger) (store.Store, error) {
	switch cfg.Store {
	case StoreMemory:
		return memstore.New(memstore.Options{MaxKeys: cfg.MaxKeys}), nil
	case StoreRedis:
		st, err := redisstore.Open(redisOptions(cfg.Redis, redisstore.Options{
			Durability:    cfg.Durability,
			FlushInterval: cfg.FlushInterval,
			MaxKeys:       cfg.MaxKeys,
			Log:           log,
		}))
		if err != nil {
			return nil, err
		}
		log.Info().Str("redis", redisWhere(cfg.Redis)).Str("prefix", cfg.Redis.Prefix).Str("durability", cfg.Durability.String()).Int("keys", st.Keys()).Msg("store opened")
		return st, nil
	}
	st, err := boltstore.Open(boltstore.Options{
		Dir:           cfg.Data,
		Durability:    cfg.Durability,
		FlushInterval: cfg.FlushInterval,
		MaxKeys:       cfg.MaxKeys,
		Log:           log,
	})
	if err != nil {
		return nil, err
	}
	log.Info().Str("data", cfg.Data).Str("durability", cfg.Durability.String()).Int("keys", st.Keys()).Msg("store opened")
	for _, l := range boltstore.LooseModes(cfg.Data) {
		log.Warn().Msg(l) // not chmod-ed behind the operator's back
	}
	return st, nil
}

// redisOptions adds r's connection settings to o.
func redisOptions(r RedisConfig, o redisstore.Options) redisstore.Options {
	o.URL, o.Cluster, o.Prefix, o.Password = r.URL, r.Cluster, r.Prefix, r.Password
	return o
}

// redisWhere names the Redis of r for the log, without a password.
func redisWhere(r RedisConfig) string {
	if len(r.Cluster) > 0 {
		return "cluster " + strings.Join(r.Cluster, ",")
	}
	if u, err := url.Parse(r.URL); err == nil {
		return u.Redacted()
	}
	return "(an unparsable -redis-url)"
}

// shutdown stops every server gracefully, together, within timeout.
func shutdown(servers []*http.Server, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	errc := make(chan error, len(servers))
	for _, s := range servers {
		go func() { errc <- s.Shutdown(ctx) }()
	}
	var errs []error
	for range servers {
		if err := <-errc; err != nil && !errors.Is(err, http.ErrServerClosed) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
