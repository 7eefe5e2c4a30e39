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
	"os"
	"runtime"
	"time"

	"github.com/rs/zerolog"

	"visitors/internal/admin"
	"visitors/internal/logsink"
	"visitors/internal/store"
	"visitors/internal/store/boltstore"
	"visitors/internal/store/memstore"
	"visitors/internal/web"
)

// Timeouts of the public listener: a slow client cannot hold a
// connection, or a goroutine, for longer than these.
type Timeouts struct {
	ReadHeader, Read, Write, Idle time.Duration
	MaxHeaderBytes                int
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
}

// Main parses args, then runs the service until ctx is done. Logs go to
// stdout as JSON lines; usage and fatal errors to stderr.
func Main(ctx context.Context, args []string, getenv func(string) string, stdin io.Reader, stdout, stderr io.Writer) error {
	if len(args) > 0 {
		switch args[0] {
		case "export":
			return Export(args[1:], getenv, stdout, stderr)
		case "import":
			return Import(args[1:], getenv, stdin, stderr)
		}
	}
	cfg, err := ParseFlags(args, getenv, stderr)
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
	level, err := parseLevel(cfg.LogLevel)
	if err != nil {
		return err
	}
	runtime.SetBlockProfileRate(cfg.BlockProfileRate)
	runtime.SetMutexProfileFraction(cfg.MutexProfileFraction)

	sink := logsink.New(stdout, logsink.Options{})
	log := zerolog.New(sink).Level(level).With().Timestamp().Logger()
	defer func() {
		if err := sink.Close(); err != nil {
			fmt.Fprintf(os.Stderr, "visitors: flush log: %v\n", err)
		}
	}()

	hostname, err := os.Hostname() // once: it is a syscall
	if err != nil {
		hostname = "unknown"
	}
	st, health, err := openStore(cfg, log)
	if err != nil {
		return err
	}
	defer func() {
		if err := st.Close(); err != nil {
			log.Error().Err(err).Msg("close the store: counts not yet on disk are lost")
		}
	}()

	pub, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		return fmt.Errorf("listen on -addr %s: %w", cfg.Addr, err)
	}
	srv := &http.Server{
		Handler:           web.New(web.Config{Store: st, Log: log, Hostname: hostname}),
		ReadHeaderTimeout: to.ReadHeader,
		ReadTimeout:       to.Read,
		WriteTimeout:      to.Write,
		IdleTimeout:       to.Idle,
		MaxHeaderBytes:    to.MaxHeaderBytes,
		ErrorLog:          zerologStd(log),
	}
	servers := []*http.Server{srv}
	listeners := []net.Listener{pub}
	log.Info().Str("addr", pub.Addr().String()).Msg("listening")

	if cfg.AdminAddr != "" {
		adm, err := net.Listen("tcp", cfg.AdminAddr)
		if err != nil {
			pub.Close()
			return fmt.Errorf("listen on -admin-addr %s: %w", cfg.AdminAddr, err)
		}
		asrv := &http.Server{
			Handler: admin.Handler(admin.Options{
				Health: health,
				Stats: func() map[string]any {
					return map[string]any{"log_lines_dropped": sink.Dropped(), "keys": st.Keys()}
				},
			}),
			ReadHeaderTimeout: to.ReadHeader,
			WriteTimeout:      5 * time.Minute, // long enough for a CPU profile or trace
			IdleTimeout:       to.Idle,
			MaxHeaderBytes:    to.MaxHeaderBytes,
			ErrorLog:          zerologStd(log),
		}
		servers = append(servers, asrv)
		listeners = append(listeners, adm)
		log.Info().Str("admin_addr", adm.Addr().String()).Msg("admin listening")
	}

	errc := make(chan error, len(servers))
	for i, s := range servers {
		go func() { errc <- s.Serve(listeners[i]) }()
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

// openStore opens the store cfg names and returns it with its health
// check for /healthz.
func openStore(cfg Config, log zerolog.Logger) (store.Store, func() error, error) {
	if cfg.Store == "memory" {
		return memstore.New(memstore.Options{MaxKeys: cfg.MaxKeys}), nil, nil
	}
	d, err := boltstore.ParseDurability(cfg.Durability)
	if err != nil {
		return nil, nil, err
	}
	st, err := boltstore.Open(boltstore.Options{
		Dir:           cfg.Data,
		Durability:    d,
		FlushInterval: cfg.FlushInterval,
		MaxKeys:       cfg.MaxKeys,
		Log:           log,
	})
	if err != nil {
		return nil, nil, err
	}
	log.Info().Str("data", cfg.Data).Str("durability", d.String()).Int("keys", st.Keys()).Msg("store opened")
	return st, st.Health, nil
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
