package loadtest

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/http/pprof"
	"os"
	"sync/atomic"
	"time"

	"visitors/internal/app"
	"visitors/internal/badge"
	"visitors/lab/greeting"
	"visitors/lab/hello"
)

// bareBody is what the bare server answers: about 60 bytes, like /hi's.
var bareBody = []byte("<h1 style='color: red'>Welcome!</h1>You are visitor number!")

// bareHandler is the ceiling for net/http: one atomic increment and a
// fixed body.
type bareHandler struct{ n atomic.Int64 }

func (h *bareHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h.n.Add(1)
	w.Write(bareBody)
}

// bareBadge is the ceiling for a badge: net/http answering, with no
// work at all, what visitors answers for /counter/{key}.svg: the same
// SVG (a flat "visitors | 123456" badge, about 1 KB) and the same
// headers.
type bareBadge struct {
	n   atomic.Int64
	svg []byte
}

var (
	badgeCacheControl = []string{"no-cache, no-store, must-revalidate"}
	badgeContentType  = []string{"image/svg+xml; charset=utf-8"}
	badgeExpires      = []string{"0"}
	badgeNoSniff      = []string{"nosniff"}
	badgeCSP          = []string{"default-src 'none'; style-src 'unsafe-inline'"}
)

func newBareBadge() *bareBadge {
	svg := badge.AppendSVG(nil, &badge.Badge{Label: []byte("visitors"), Value: []byte("123456"), Color: []byte("#4c1"), LabelColor: []byte("#555")})
	return &bareBadge{svg: svg}
}

func (h *bareBadge) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h.n.Add(1)
	hd := w.Header()
	hd["Cache-Control"] = badgeCacheControl
	hd["Content-Type"] = badgeContentType
	hd["Expires"] = badgeExpires
	hd["X-Content-Type-Options"] = badgeNoSniff
	hd["Content-Security-Policy"] = badgeCSP
	w.Write(h.svg)
}

// bareBadgeSet is bareBadge with its headers set as a handler usually
// sets them, by Header().Set, which canonicalises each name and makes a
// slice for each value: what the twin of a badge costs written the
// plain way.
type bareBadgeSet struct{ bareBadge }

func (h *bareBadgeSet) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h.n.Add(1)
	hd := w.Header()
	hd.Set("Cache-Control", badgeCacheControl[0])
	hd.Set("Content-Type", badgeContentType[0])
	hd.Set("Expires", badgeExpires[0])
	hd.Set("X-Content-Type-Options", badgeNoSniff[0])
	hd.Set("Content-Security-Policy", badgeCSP[0])
	w.Write(h.svg)
}

// bareJSON is the ceiling for the JSON API: net/http answering what
// visitors answers for /counter/{key}.json, the same body (the key's
// counts with numbers of the size a load test reaches) and the same five
// headers, with no work at all.
type bareJSON struct{ n atomic.Int64 }

var (
	bareJSONBody    = []byte(`{"key":"load","total":1234567,"today":1234567,"unique_today":123456}` + "\n")
	jsonContentType = []string{"application/json"}
	corsAny         = []string{"*"}
)

func (h *bareJSON) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h.n.Add(1)
	hd := w.Header()
	hd["Access-Control-Allow-Origin"] = corsAny
	hd["Cache-Control"] = badgeCacheControl
	hd["Content-Type"] = jsonContentType
	hd["Expires"] = badgeExpires
	hd["X-Content-Type-Options"] = badgeNoSniff
	w.Write(bareJSONBody)
}

// Serve runs "loadtest serve": the classic unoptimised server (the lab's
// greeting and hello steps 0 behind net/http's ServeMux, at /hi and
// /hello) or the bare net/http server, until ctx is done. Like visitors
// it serves net/http/pprof on -admin-addr, so that internal/servertest
// can start it.
func Serve(ctx context.Context, args []string, stderr io.Writer) error {
	fs := flag.NewFlagSet("loadtest serve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	kind := fs.String("kind", "classic", "classic, bare, bare-badge, bare-badge-set or bare-json")
	addr := fs.String("addr", "127.0.0.1:0", "address to listen on")
	adminAddr := fs.String("admin-addr", "", "address to serve net/http/pprof on; empty: none")
	if err := fs.Parse(args); err != nil {
		return err
	}
	var h http.Handler
	switch *kind {
	case "classic":
		mux := http.NewServeMux()
		mux.Handle("/hi", greeting.Step0())
		mux.Handle("/hello", hello.Step0(os.Stdout)) // logrus, to the log file
		h = mux
	case "bare":
		h = new(bareHandler)
	case "bare-badge":
		h = newBareBadge()
	case "bare-badge-set":
		h = &bareBadgeSet{bareBadge{svg: newBareBadge().svg}}
	case "bare-json":
		h = new(bareJSON)
	default:
		return fmt.Errorf("serve: -kind %q: want classic, bare, bare-badge, bare-badge-set or bare-json", *kind)
	}
	l, err := app.Listen(*addr) // fd:N from servertest, or an address
	if err != nil {
		return fmt.Errorf("serve: %w", err)
	}
	if *adminAddr != "" {
		al, err := app.Listen(*adminAddr)
		if err != nil {
			l.Close()
			return fmt.Errorf("serve: admin: %w", err)
		}
		mux := http.NewServeMux()
		mux.HandleFunc("/debug/pprof/", pprof.Index)
		mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
		admin := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
		go admin.Serve(al)
		defer admin.Close()
	}
	// No timeouts: the classic server was a plain ListenAndServe, and the
	// ceiling is net/http with nothing added.
	srv := &http.Server{Handler: h} //nolint:gosec // loopback-only benchmark server
	go func() {
		<-ctx.Done()
		srv.Close()
	}()
	if err := srv.Serve(l); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("serve: %w", err)
	}
	return nil
}
