// Package app assembles visitors from its parts: it reads the
// configuration, opens the store and the log, starts the public and admin
// listeners, and shuts them down in order when its context ends.
package app

import (
	"context"
	"crypto/tls"
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
	"visitors/internal/compat"
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
// connection, or a goroutine, for longer than these. ReadHeader bounds
// a request's header from its first byte, Read a body from its
// handler's start, Write a write that waits for the client to read,
// and Idle the time between requests (see publicServer for who keeps
// each). The admin listener shares ReadHeader, Idle and MaxHeaderBytes,
// and has a write deadline of its own, AdminWrite.
type Timeouts struct {
	ReadHeader, Read, Write, Idle time.Duration
	MaxHeaderBytes                int
	AdminWrite                    time.Duration // long enough for a CPU profile or trace
}

// DefaultTimeouts are the public listener's limits.
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
// export, import, check, health or token, it runs that subcommand. Logs go to
// stdout as JSON lines, and so does the usage asked for with -h (then
// Main returns flag.ErrHelp). A command line it refuses is a
// [UsageError]: one line, for stderr.
func Main(ctx context.Context, args []string, getenv func(string) string, stdin io.Reader, stdout io.Writer) error {
	if len(args) > 0 {
		switch args[0] {
		case "export":
			return Export(args[1:], getenv, stdout)
		case "import":
			return Import(args[1:], getenv, stdin, stdout)
		case "check":
			return Check(args[1:], getenv, stdout)
		case "health":
			return Health(ctx, args[1:], getenv, stdout)
		case "token":
			return Token(args[1:], getenv, stdout)
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
	defer func() {
		if err := sink.Close(); err != nil {
			fmt.Fprintf(os.Stderr, "visitors: flush log: %v\n", err)
		}
	}()
	s := &service{cfg: cfg, to: to, sink: sink, log: zerolog.New(sink).Level(cfg.LogLevel).With().Timestamp().Logger()}
	defer s.close()
	if err := s.start(); err != nil {
		return err
	}
	return s.serve(ctx)
}

// service is the running visitors of one [Run]: what its steps open,
// and what they leave to undo. Only Run's goroutine uses it.
type service struct {
	cfg  Config
	to   Timeouts
	log  zerolog.Logger
	sink *logsink.Writer

	st       store.Store
	rules    web.Rules
	clock    *coarse.Clock       // times requests, bounds writes; asleep while unread
	fr       *flightrec.Recorder // nil when the flight recorder is off
	requests *metrics.Requests   // nil when nothing observes requests
	conns    *connGate
	public   *web.Server

	servers   []*http.Server
	listeners []net.Listener // listeners[i] is servers[i]'s
	opened    []net.Listener // every listener; until serving, close closes them
	serving   bool           // the servers own the listeners
	undo      []func()       // what close undoes, in reverse
	served    chan error     // what each server's Serve returned (see drain)
}

// start opens everything the service needs, in the order that stops a
// bad start soonest: the TLS files and the admin address, which log
// nothing, then the store, the observers and the servers.
func (s *service) start() error {
	tlsConf, redirect, stopCerts, err := s.cfg.TLS.setup(s.cfg.Data, s.log) // before the store: a bad file stops the start at once
	if err != nil {
		return err
	}
	if stopCerts != nil {
		s.undo = append(s.undo, stopCerts)
	}
	adm, err := listenAdmin(s.cfg) // before the store too: a refused address stops the start before anything is opened or logged
	if err != nil {
		return err
	}
	if adm != nil {
		s.opened = append(s.opened, adm)
	}
	s.clock = coarse.Start(time.Millisecond) // the resolution MinSlowRequest quotes
	s.undo = append(s.undo, s.clock.Stop)
	if err := s.openStore(); err != nil {
		return err
	}
	if err := s.observe(); err != nil {
		return err
	}
	if err := s.firstToken(); err != nil {
		return err
	}
	if err := s.addPublic(tlsConf); err != nil {
		return err
	}
	if adm != nil {
		if err := s.addAdmin(adm); err != nil {
			return err
		}
	}
	if redirect != nil && s.cfg.TLS.HTTPAddr != "" {
		return s.addRedirect(redirect, s.cfg.TLS.HTTPSPort)
	}
	return nil
}

// close undoes what start did, the last first: the flight recorder, the
// unique visitors, the store, then the clock.
func (s *service) close() {
	if !s.serving {
		for _, l := range s.opened {
			l.Close()
		}
	}
	for i := len(s.undo) - 1; i >= 0; i-- {
		s.undo[i]()
	}
}

// openStore opens the store and the fairness rules on it, which are
// closed after the listeners stop and before the store closes.
func (s *service) openStore() error {
	st, err := openStore(s.cfg, s.log)
	if err != nil {
		return err
	}
	s.undo = append(s.undo, func() {
		if err := st.Close(); err != nil {
			s.log.Error().Err(err).Msg("close the store: counts not yet on disk are lost")
		}
	})
	rules, closeRules, err := fairRules(s.cfg, st, s.log)
	if err != nil {
		return err
	}
	s.undo = append(s.undo, func() {
		if err := closeRules(); err != nil {
			s.log.Error().Err(err).Msg("write unique visitors: the last second's may be counted again")
		}
	})
	if s.cfg.Test != nil && s.cfg.Test.WrapStore != nil {
		st = s.cfg.Test.WrapStore(st)
	}
	s.st, s.rules = st, rules
	return nil
}

// observe makes the flight recorder, armed for good with
// -flight-recorder, else disarmed until the admin listener arms it (it
// is left out with no admin listener to arm it, or no directory for its
// snapshots), and the observer of requests that /metrics and the flight
// recorder read.
func (s *service) observe() error {
	cfg := s.cfg
	if cfg.FlightRecorder || cfg.AdminAddr != "" && (cfg.TraceDir != "" || cfg.Data != "") {
		fr, err := flightrec.Start(flightrec.Options{
			Dir:      cfg.TraceDirOrDefault(),
			Window:   cfg.FlightRecorderWindow,
			MaxBytes: cfg.FlightRecorderBytes,
			Every:    cfg.TraceEvery,
			Keep:     cfg.TraceKeep,
			Log:      s.log,
			Always:   cfg.FlightRecorder,
		})
		if err != nil {
			return fmt.Errorf("%w (-flight-recorder=false turns it off)", err)
		}
		s.fr = fr
		s.undo = append(s.undo, func() { fr.Close() })
	}
	if cfg.Metrics && cfg.AdminAddr != "" || s.fr != nil {
		o := metrics.RequestsOptions{Clock: s.clock, SlowRequest: cfg.SlowRequest}
		if s.fr != nil {
			o.OnSlow = s.fr.Slow
		}
		s.requests = metrics.NewRequests(o)
	}
	return nil
}

// addPublic listens on -addr, behind the gate of -max-conns, and adds
// the public server: the counters, and the owner API if a root token is
// set.
func (s *service) addPublic(tlsConf *tls.Config) error {
	cfg := s.cfg
	pub, err := Listen(cfg.Addr)
	if err != nil {
		return fmt.Errorf("listen on -addr %s: %w", cfg.Addr, err)
	}
	s.conns = newGate(pub, cfg.Fair.MaxConns, cfg.Fair.MaxConnsPerClient, &cfg.Fair.TrustedProxies)
	s.opened = append(s.opened, s.conns) // closing the gate closes pub, and ends its watch
	wc := web.Config{Store: s.st, Log: s.log, Hostname: hostname(), Requests: s.requests, Rules: s.rules, MaxStreams: cfg.MaxStreams, StreamMaxAge: cfg.MaxStreamAge, PublicTop: cfg.PublicTop}
	if cfg.API.RootHash != nil {
		a := s.ownerAPI()
		wc.API, wc.Dashboard = a, s.dashboard(a)
	}
	if cfg.Compat != 0 {
		wc.Compat = compat.New(cfg.Compat)
	}
	s.public = web.New(wc)
	srv := publicServer(s.public, s.conns, s.to, tlsConf, s.clock)
	srv.ErrorLog = zerologStd(s.log)
	srv.RegisterOnShutdown(s.public.Shutdown) // live streams end, so Shutdown need not wait them out
	s.add(srv, s.conns)
	s.log.Info().Str("addr", pub.Addr().String()).Bool("https", tlsConf != nil).Msg("listening")
	return nil
}

// publicServer returns the public listener's server for h behind g,
// without its ErrorLog, and sets g to bound what to bounds.
//
// Over plain HTTP (HTTP/1.1 only) the gate does it: it watches each
// connection's header and idle times (connGate.watch) and bounds every
// Write (gateConn.Write), and a request with a body gets a read
// deadline of to.Read when its handler starts (bodyDeadline). The
// http.Server then has no deadlines of its own: its ReadHeaderTimeout,
// ReadTimeout, WriteTimeout and IdleTimeout would set and clear runtime
// timers on every request, which cost /hi a tenth of its CPU over bare
// net/http (docs/performance.md, issue 26).
//
// With tlsConf, the http.Server has all four, as before: the gate sees
// connections, not HTTP/2's streams (a client can starve one stream of
// flow-control credit, or keep an idle connection busy with PINGs,
// without a phase the gate could tell). HTTP/2's streams are bounded
// per connection (MaxStreamsPerConn) and, with the gate's numbers, per
// client and in all (streamBound).
func publicServer(h http.Handler, g *connGate, to Timeouts, tlsConf *tls.Config, clock *coarse.Clock) *http.Server {
	srv := &http.Server{
		Handler:        h,
		MaxHeaderBytes: to.MaxHeaderBytes,
		ConnState:      g.connState,
		TLSConfig:      tlsConf,
	}
	if tlsConf != nil {
		srv.ReadHeaderTimeout, srv.ReadTimeout, srv.WriteTimeout, srv.IdleTimeout = to.ReadHeader, to.Read, to.Write, to.Idle
		// HTTP/2: at most MaxStreamsPerConn streams a connection, the
		// gate's bounds on the requests in flight (streamBound), at most
		// MaxReceivePerConn of request bodies buffered a connection, and
		// a connection that takes no byte for to.Write is closed.
		srv.HTTP2 = &http.HTTP2Config{
			MaxConcurrentStreams:          MaxStreamsPerConn,
			MaxReceiveBufferPerConnection: MaxReceivePerConn,
			MaxReceiveBufferPerStream:     MaxReceivePerConn,
			WriteByteTimeout:              to.Write,
		}
		srv.Handler = newStreamBound(h, g.max, g.perClient, g.trusted)
		return srv
	}
	g.write = to.Write
	g.watch(to.ReadHeader, to.Idle, watchTick(to), clock)
	if to.Read > 0 {
		srv.Handler = bodyDeadline{h, to.Read}
	}
	return srv
}

// watchTick is how often the gate looks for connections past to's
// bounds: a quarter of the shortest, so that a cut comes at most a
// quarter late; at least 10ms.
func watchTick(to Timeouts) time.Duration {
	d := CrowdedIdle
	for _, b := range []time.Duration{to.ReadHeader, to.Idle} {
		if b > 0 && b < d {
			d = b
		}
	}
	return max(d/4, 10*time.Millisecond)
}

// bodyDeadline gives a request with a body (a Content-Length, or
// chunked) read it until a read deadline of d, from its handler's start:
// what http.Server's ReadTimeout did, for the requests that need it.
// Without it a client could hold a connection by sending a body slowly,
// to a handler that reads it or to net/http, which reads what a handler
// left of a body before it answers. A handler may set a longer deadline
// of its own (an import does). The common request, a GET, has no body
// and pays a comparison.
type bodyDeadline struct {
	h http.Handler
	d time.Duration
}

func (b bodyDeadline) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.ContentLength != 0 {
		http.NewResponseController(w).SetReadDeadline(time.Now().Add(b.d))
	}
	b.h.ServeHTTP(w, r)
}

// hostname returns the machine's name for /whoami, once: it is a
// syscall.
func hostname() string {
	h, err := os.Hostname()
	if err != nil {
		return "unknown"
	}
	return h
}

// ownerAPI returns the owner API's handler, which shares the new-key
// budget of the public counters.
func (s *service) ownerAPI() *api.Handler {
	cfg := s.cfg
	// Audit lines wait for room in the log's ring where other lines
	// would be dropped: a flood of /hello lines never costs one.
	audit := zerolog.New(s.sink.Waiting()).Level(cfg.LogLevel).With().Timestamp().Logger()
	ac := api.Config{
		Store:          s.st,
		RootHash:       *cfg.API.RootHash,
		Log:            s.log,
		Audit:          &audit,
		Trusted:        &cfg.Fair.TrustedProxies,
		Failures:       cfg.API.AuthFailures,
		NoFailureLimit: cfg.API.AuthFailures.Off(),
		ImportMaxBytes: cfg.API.ImportMaxBytes,
		OpenCreate:     cfg.API.OpenCreate,
		NewKeys:        s.rules.Budget(), // one budget of new counters per client, badges and API alike
	}
	if cfg.Fair.Unique {
		ac.Uniques = s.rules.Uniques
	}
	s.log.Info().Str("api", api.Prefix).Bool("open_create", cfg.API.OpenCreate).Msg("owner API on")
	return api.New(ac)
}

// addAdmin adds the admin server on adm: health, /debug/vars, pprof,
// and /metrics and the flight recorder when they are on.
func (s *service) addAdmin(adm net.Listener) error {
	if remote := notLoopback(adm.Addr()); remote != "" { // and -admin-allow-remote, or listenAdmin refused it
		s.log.Warn().Str("admin_addr", remote).Msg("the admin listener is not on loopback (-admin-allow-remote): keep it behind a firewall, its profiles show keys, names and flags")
	}
	st, public, sink := s.st, s.public, s.sink
	ao := admin.Options{
		Health: func() error {
			if err := st.Health(); err != nil {
				return err
			}
			return public.HiExhausted()
		},
		Warnings: func() []string { return warnings(public, st, s.cfg) },
		Stats: func() map[string]any {
			vars := map[string]any{"log_lines_written": sink.Written(), "log_lines_dropped": sink.Dropped(), "keys": st.Keys()}
			if b, ok := st.(backend); ok {
				vars["store"] = b.Vars()
			}
			return vars
		},
	}
	if s.requests != nil && s.cfg.Metrics {
		reg, err := registry(s.cfg, s.requests, st, sink, s.fr, s.conns, public)
		if err != nil {
			return err
		}
		ao.Metrics = metrics.Handler(reg)
	}
	if s.fr != nil {
		ao.FlightRecorder = s.fr
	}
	g := newGate(adm, 0, 0, nil) // no bound: it only tells drain which connections have sent nothing
	s.add(&http.Server{
		Handler:           admin.Handler(ao),
		ConnState:         g.connState,
		ReadHeaderTimeout: s.to.ReadHeader,
		WriteTimeout:      s.to.AdminWrite,
		IdleTimeout:       s.to.Idle,
		MaxHeaderBytes:    s.to.MaxHeaderBytes,
		ErrorLog:          zerologStd(s.log),
	}, g)
	s.log.Info().Str("admin_addr", adm.Addr().String()).Msg("admin listening")
	return nil
}

// addRedirect listens on -http-addr and adds the plain-HTTP server of
// HTTPS: its redirects, to port (0: the public listener's), and the ACME
// HTTP-01 challenges. Its listener has a gate of its own with the
// public listener's bounds, -max-conns and -max-conns-per-client: a
// client cannot hold the process's file descriptors through it.
func (s *service) addRedirect(redirect func(port int) http.Handler, port int) error {
	cfg := s.cfg
	l, err := Listen(cfg.TLS.HTTPAddr)
	if err != nil {
		return fmt.Errorf("listen on -http-addr %s: %w", cfg.TLS.HTTPAddr, err)
	}
	hl := newGate(l, cfg.Fair.MaxConns, cfg.Fair.MaxConnsPerClient, &cfg.Fair.TrustedProxies)
	s.opened = append(s.opened, hl)
	if port == 0 {
		if a, ok := s.conns.Addr().(*net.TCPAddr); ok {
			port = a.Port
		}
	}
	s.add(&http.Server{
		Handler:           redirect(port),
		ConnState:         hl.connState,
		ReadHeaderTimeout: s.to.ReadHeader,
		ReadTimeout:       s.to.Read,
		WriteTimeout:      s.to.Write,
		IdleTimeout:       s.to.Idle,
		MaxHeaderBytes:    s.to.MaxHeaderBytes,
		ErrorLog:          zerologStd(s.log),
	}, hl)
	s.log.Info().Str("http_addr", hl.Addr().String()).Bool("acme_http_01", len(cfg.TLS.Domains) > 0).Int("https_port", port).Msg("plain HTTP listening: redirects to HTTPS")
	return nil
}

// add adds srv, to serve on l.
func (s *service) add(srv *http.Server, l net.Listener) {
	s.servers = append(s.servers, srv)
	s.listeners = append(s.listeners, l)
}

// serve serves every server until ctx is done or one fails, then shuts
// them all down within -shutdown-timeout.
func (s *service) serve(ctx context.Context) error {
	errc := make(chan error, len(s.servers))
	s.served, s.serving = errc, true
	for i, srv := range s.servers {
		go func() { errc <- serve(srv, s.listeners[i]) }()
	}
	select {
	case <-ctx.Done():
		s.log.Info().Msg("shutting down")
	case err := <-errc:
		// A listener failed; stop the others and report it.
		shutdown(s.servers, s.cfg.ShutdownTimeout)
		return fmt.Errorf("serve: %w", err)
	}
	if err := s.drain(s.cfg.ShutdownTimeout); err != nil {
		s.log.Error().Err(err).Msg("in-flight requests did not finish in time")
	}
	s.log.Info().Msg("stopped")
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
		cs = append(cs, metrics.FlightRecorder(fr.Snapshots, fr.Armed)...)
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
		if err := <-errc; err != nil && !errors.Is(err, http.ErrServerClosed) && !errors.Is(err, net.ErrClosed) { // drain closed the listener
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
