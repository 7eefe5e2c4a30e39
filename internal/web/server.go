package web

import (
	"fmt"
	"io"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/rs/zerolog"

	"visitors/internal/client"
	"visitors/internal/compat"
	"visitors/internal/httperr"
	"visitors/internal/live"
	"visitors/internal/metrics"
	"visitors/internal/store"
	"visitors/internal/store/tally"
	"visitors/internal/top"
	"visitors/internal/unique"
	"visitors/internal/visit"
)

// Limits on user input. Longer values get 400.
const (
	MaxColorBytes = 64                // the color parameter, after unescaping
	MaxNameBytes  = store.MaxKeyBytes // the name parameter, after unescaping
)

// Messages sent to clients with a 4xx or 5xx status. Those that quote a
// limit take it from its constant.
var msgName = fmt.Sprintf("Name must be at most %d bytes of valid UTF-8", MaxNameBytes)

// msgNameRoute is the answer to a name /counter/ could not address:
// /hello's names and /counter/'s keys are one namespace.
const msgNameRoute = "Name's last segment (after its last /) must not be daily, graph or stream: names and /counter/ keys are one namespace, and /counter/ns/graph.svg is the graph of ns"

// Messages sent to clients with a 4xx or 5xx status.
const (
	msgColor        = "Optional color is invalid"
	msgNameEscape   = "Name is not valid URL encoding"
	msgFormat       = "Optional format must be text or json"
	msgTooManyKeys  = "Too many distinct names: a new name cannot be counted now; names already seen still count"
	msgStore        = "The counter store is unavailable; the visit was not counted"
	msgHiExhausted  = "The /hi counter has handed out every number it may (2^62); no number was given"
	msgStoreUnknown = "The counter store did not answer in time; the visit may have counted"
	msgNotFound     = "404 page not found"
	msgMethod       = "Method not allowed: use GET or HEAD"
)

// Header values, shared by every response so that setting a header is a
// map assignment and not an allocation. They are never mutated.
var (
	ctHTML       = []string{"text/html; charset=utf-8"}
	ctJS         = []string{"text/javascript; charset=utf-8"}
	ctText       = []string{"text/plain; charset=utf-8"}
	ctJSON       = []string{"application/json"}
	nosniff      = []string{"nosniff"}
	allowGetHead = []string{"GET, HEAD"}
)

// Config holds what a [Server] depends on.
type Config struct {
	// Store counts the visits. Required.
	Store store.Counter
	// Log receives one line per /hello visit and the causes of 5xx
	// responses. The zero Logger logs nothing.
	Log zerolog.Logger
	// Hostname is reported by /whoami. Look it up once, at start.
	Hostname string
	// Now is the clock /whoami measures latency with; nil means time.Now.
	Now func() time.Time
	// Requests, if set, is told of every request (its route, status and
	// duration) and of every visit counted or not. nil costs nothing.
	Requests *metrics.Requests
	// Rules decide which visits to the keyed counters count.
	Rules Rules
	// MaxStreams is the most live streams open at once, and
	// StreamsPerClient the most from one client address; 0 means
	// DefaultMaxStreams and DefaultStreamsPerClient.
	MaxStreams, StreamsPerClient int
	// StreamMaxAge is how long a live stream lasts before the server
	// ends it, telling the client to reconnect; 0 means
	// DefaultStreamMaxAge.
	StreamMaxAge time.Duration
	// PublicTop serves /top.json, the most visited counters. Off by
	// default: keys may be private.
	PublicTop bool
	// API, if set, serves every path under /api/ (the owner API, whatever
	// the method); nil leaves /api/ to the 404 of any unknown path.
	API http.Handler
	// Compat, if set, answers the URLs of the closed counter services it
	// was made with (HITS, CountAPI, visitor-badge, the profile views
	// counter), counting through this server's one counting path; nil
	// leaves their paths to the 404 of any unknown path.
	Compat *compat.Handler
	// Dashboard, if set, serves /dashboard and every path under
	// /dashboard/ (the owners' dashboard, whatever the method); nil
	// leaves them to the 404 of any unknown path.
	Dashboard http.Handler

	streamTimes *streamTimes // tests shorten the streams' timing
}

// Server serves the public listener: /hi, /hello, /whoami, the landing
// page, the counters under /counter/ (badges, JSON, daily counts, graphs
// and live streams), /top.json and, if Config.API is set, hands /api/ to
// the owner API. It is safe for concurrent use.
type Server struct {
	visits   *visit.Recorder // decides and counts; holds the store, the rules and the unique visitors
	log      zerolog.Logger
	hostname string
	now      func() time.Time
	req      *metrics.Requests // nil: not observed
	scratch  sync.Pool         // of *scratch
	hub      *live.Hub         // the live streams
	times    streamTimes
	top      *top.Board      // nil unless PublicTop
	api      http.Handler    // nil: no /api/
	compat   *compat.Handler // nil: no URLs of closed services
	dash     http.Handler    // nil: no /dashboard
	cal      *tally.Calendar // top's calendar, or nil

	untrusted     atomic.Uint64              // requests with forwarding headers from an untrusted peer
	untrustedPeer atomic.Pointer[netip.Addr] // the first such peer; set once
}

// scratch holds the buffers one request needs, reused through a pool.
type scratch struct {
	body       []byte
	name       []byte
	color      []byte
	label      []byte // counter API
	labelColor []byte
	logoColor  []byte
	value      []byte
	memo       badgeMemo // the last counter badge drawn
}

// New returns a Server for c. Without c.Rules.Uniques it counts unique
// visitors in memory, with a flusher of its own that runs until the
// process ends. A server that may hold live streams must be told of
// shutdown with [Server.Shutdown].
func New(c Config) *Server {
	s := &Server{log: c.Log, hostname: c.Hostname, now: c.Now, req: c.Requests, api: c.API, compat: c.Compat, dash: c.Dashboard}
	s.hub, s.times = newHub(c)
	s.top, s.cal = newBoard(c)
	if s.now == nil {
		s.now = time.Now
	}
	uniques := c.Rules.Uniques
	if uniques == nil {
		u, err := unique.New(unique.Options{Now: s.now, Log: c.Log})
		if err != nil { // only a seed file fails, and there is none
			panic(err)
		}
		uniques = u
	}
	s.visits = &visit.Recorder{Store: c.Store, Rules: c.Rules, Uniques: uniques, Now: s.now, Log: c.Log}
	if s.top != nil {
		s.visits.Observe = s.observe
	}
	s.scratch.New = func() any {
		return &scratch{
			body:  make([]byte, 0, 512),
			name:  make([]byte, 0, MaxNameBytes),
			color: make([]byte, 0, MaxColorBytes),
			label: make([]byte, 0, 4*MaxLabelRunes),
			value: make([]byte, 0, 24),
		}
	}
	return s
}

// handler serves one request and returns the status it answered with,
// plus [metrics.Visit] if it counted a visit.
type handler func(*Server, http.ResponseWriter, *http.Request) int

// ServeHTTP routes a request to its handler, and reports it to the
// Requests of the Config, if any.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if peer, ok := client.ForwardedUntrusted(r.RemoteAddr, r.Header, s.visits.Rules.Trusted); ok {
		s.forwardedUntrusted(peer)
	}
	var h handler
	var route metrics.Route
	switch r.URL.Path {
	case "/hi":
		h, route = (*Server).handleHi, metrics.Hi
	case "/hello":
		h, route = (*Server).handleHello, metrics.Hello
	case "/whoami":
		h, route = (*Server).handleWhoami, metrics.Whoami
	case "/", "/landing.js":
		h, route = (*Server).handleLanding, metrics.Landing
	case "/top.json":
		h, route = (*Server).handleTop, metrics.Top
	default:
		route = metrics.Other // and h nil: 404 whatever the method
		switch {
		case strings.HasPrefix(r.URL.Path, "/counter/") && strings.HasSuffix(r.URL.Path, "/stream"):
			h, route = (*Server).handleStream, metrics.Stream
		case strings.HasPrefix(r.URL.Path, "/counter/"):
			h, route = (*Server).handleCounter, counterRoute(r.URL.Path)
		case s.compat != nil && s.compat.Match(r.URL.Path): // before /api/: HITS's paths are under it
			h, route = (*Server).handleCompat, metrics.Compat
		case s.api != nil && strings.HasPrefix(r.URL.Path, "/api/"):
			h, route = (*Server).handleAPI, metrics.API
		case s.dash != nil && (r.URL.Path == "/dashboard" || strings.HasPrefix(r.URL.Path, "/dashboard/")):
			h, route = (*Server).handleDashboard, metrics.Dashboard
		}
	}
	var start int64
	if s.req != nil {
		start = s.req.Start()
	}
	var code int
	svg := strings.HasSuffix(r.URL.Path, ".svg") && strings.HasPrefix(r.URL.Path, "/counter/")
	switch {
	case h == nil:
		code = s.fail(w, r, svg, errNotFound) // whatever the method
	case r.Method != http.MethodGet && r.Method != http.MethodHead && route != metrics.API && route != metrics.Dashboard:
		w.Header()["Allow"] = allowGetHead
		code = s.fail(w, r, svg, errMethod)
	default:
		code = h(s, w, r)
	}
	if s.req == nil {
		return
	}
	if route == metrics.Stream {
		start = s.req.Start() // a stream lasts as long as its client: counted, not timed
	}
	if !s.req.Count(route, code, start) {
		s.req.Done(route, code, start, r)
	}
	if code >= 400 && code < 500 && code != http.StatusTooManyRequests && counts(route) && r.Method != http.MethodHead {
		s.notCounted(visit.Invalid) // a 429 was reported by the counting path
	}
}

// forwardedUntrusted counts a request whose forwarding headers were
// ignored because peer is not a trusted proxy, and logs a warning the
// first time: behind a reverse proxy not listed in -trusted-proxies,
// every visitor is one client, and nothing else would say so.
func (s *Server) forwardedUntrusted(peer netip.Addr) {
	s.untrusted.Add(1)
	if s.untrustedPeer.Load() != nil { // warned already: no allocation
		return
	}
	first := new(netip.Addr)
	*first = peer
	if s.untrustedPeer.CompareAndSwap(nil, first) {
		s.log.Warn().Str("peer", peer.String()).Msg(msgUntrustedForwarded)
	}
}

// msgUntrustedForwarded is the warning of [Server.forwardedUntrusted].
const msgUntrustedForwarded = "a request carried X-Forwarded-For or Forwarded from a peer not in -trusted-proxies, so the header was ignored: if the peer is your reverse proxy, list it there, or every visitor behind it counts as one client"

// UntrustedForwarded returns how many requests carried X-Forwarded-For
// or Forwarded from a peer not in the rules' trusted proxies, and the
// first such peer (the zero Addr if none).
func (s *Server) UntrustedForwarded() (n uint64, first netip.Addr) {
	if p := s.untrustedPeer.Load(); p != nil {
		first = *p
	}
	return s.untrusted.Load(), first
}

// handleAPI serves the owner API and returns the status it answered.
func (s *Server) handleAPI(w http.ResponseWriter, r *http.Request) int {
	sw := &statusWriter{ResponseWriter: w, code: http.StatusOK}
	s.api.ServeHTTP(sw, r)
	return sw.code
}

// handleDashboard serves the owners' dashboard and returns the status
// it answered.
func (s *Server) handleDashboard(w http.ResponseWriter, r *http.Request) int {
	sw := &statusWriter{ResponseWriter: w, code: http.StatusOK}
	s.dash.ServeHTTP(sw, r)
	return sw.code
}

// statusWriter records the status a handler answers with.
type statusWriter struct {
	http.ResponseWriter
	code  int
	wrote bool
}

// WriteHeader records code and sends it.
func (w *statusWriter) WriteHeader(code int) {
	if !w.wrote {
		w.code, w.wrote = code, true
	}
	w.ResponseWriter.WriteHeader(code)
}

// Write sends p, with a 200 if no status was sent.
func (w *statusWriter) Write(p []byte) (int, error) {
	w.wrote = true
	return w.ResponseWriter.Write(p)
}

// Unwrap returns the ResponseWriter beneath, for http.ResponseController:
// an export and an import extend their deadlines through it.
func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// counts reports whether a request to route is a visit to count.
func counts(route metrics.Route) bool {
	return route == metrics.Hi || route == metrics.Hello || route == metrics.CounterSVG || route == metrics.CounterJSON || route == metrics.Compat
}

// handleHi serves /hi?color=C: the global visitor number.
func (s *Server) handleHi(w http.ResponseWriter, r *http.Request) int {
	sc := s.scratch.Get().(*scratch)
	defer s.scratch.Put(sc)
	color, ok := parseColor(sc.color[:0], r.URL.RawQuery)
	sc.color = color
	if !ok {
		return s.fail(w, r, false, errColor)
	}
	if r.Method == http.MethodHead { // a HEAD is not a visit
		setHTML(w)
		return http.StatusOK
	}
	v := countReq{Visit: visit.Visit{Global: true, Count: true}, r: r}
	o, herr := s.record(&v)
	if herr != nil {
		return s.fail(w, r, false, herr)
	}
	b := append(sc.body[:0], "<h1 style='color: "...)
	b = append(b, color...)
	b = append(b, "'>Welcome!</h1>You are visitor number "...)
	b = strconv.AppendUint(b, o.Number, 10)
	b = append(b, '!')
	sc.body = b
	w.Write(b) // net/http sniffs text/html; charset=utf-8: see setHTML
	return http.StatusOK | counted(&o)
}

// handleHello serves /hello?name=X&color=C: a counter per name.
func (s *Server) handleHello(w http.ResponseWriter, r *http.Request) int {
	sc := s.scratch.Get().(*scratch)
	defer s.scratch.Put(sc)
	color, ok := parseColor(sc.color[:0], r.URL.RawQuery)
	sc.color = color
	if !ok {
		return s.fail(w, r, false, errColor)
	}
	name, herr := parseName(sc.name[:0], r.URL.RawQuery)
	sc.name = name
	if herr != nil {
		return s.fail(w, r, false, herr)
	}
	if r.Method == http.MethodHead {
		setHTML(w)
		return http.StatusOK
	}
	v := countReq{Visit: visit.Visit{Key: name, Count: true}, r: r}
	o, herr := s.record(&v)
	if herr != nil {
		return s.fail(w, r, false, herr)
	}
	if o.Refused {
		markRefused(w.Header())
	}
	n := o.Counts.Total
	s.log.Info().Bytes("name", name).Uint64("count", n).Bool("counted", o.Counted).Msg("visited")
	b := append(sc.body[:0], "<h1 style='color: "...)
	b = append(b, color...)
	b = append(b, "'>Welcome!</h1> <p>Name: "...)
	b = appendHTML(b, name)
	b = append(b, "</p> <p>Count: "...)
	b = strconv.AppendUint(b, n, 10)
	b = append(b, "</p>"...)
	sc.body = b
	w.Write(b) // net/http sniffs text/html; charset=utf-8: see setHTML
	return http.StatusOK | counted(&o)
}

// handleWhoami serves /whoami: the caller's User-Agent, this server's host
// name and the time spent on the request, as text or, with ?format=json or
// Accept: application/json, as JSON.
func (s *Server) handleWhoami(w http.ResponseWriter, r *http.Request) int {
	start := s.now()
	asJSON := strings.Contains(r.Header.Get("Accept"), "application/json")
	switch f, _ := queryValue(r.URL.RawQuery, "format"); f {
	case "":
	case "json":
		asJSON = true
	case "text":
		asJSON = false
	default:
		return s.fail(w, r, false, errFormat)
	}
	sc := s.scratch.Get().(*scratch)
	defer s.scratch.Put(sc)
	ua := headerValue(r.Header, "User-Agent")
	b := sc.body[:0]
	if asJSON {
		b = append(b, `{"user_agent":`...)
		b = appendJSON(b, ua)
		b = append(b, `,"hostname":`...)
		b = appendJSON(b, s.hostname)
		b = append(b, `,"client":"`...)
		b = appendClient(b, r, s.visits.Rules.Trusted)
		b = append(b, '"')
		lat := s.now().Sub(start)
		b = append(b, `,"latency":"`...)
		b = appendDuration(b, lat)
		b = append(b, `","latency_ns":`...)
		b = strconv.AppendInt(b, int64(lat), 10)
		b = append(b, "}\n"...)
		setContentType(w, ctJSON)
	} else {
		b = append(b, "User-Agent: "...)
		b = append(b, ua...)
		b = append(b, "\nHostname: "...)
		b = append(b, s.hostname...)
		b = append(b, "\nLatency: "...)
		b = appendDuration(b, s.now().Sub(start))
		b = append(b, '\n')
		setContentType(w, ctText)
	}
	sc.body = b
	w.Write(b)
	return http.StatusOK
}

// appendClient appends the address of r's client as the service sees
// it: the peer, or the client a trusted proxy names in X-Forwarded-For
// (the address the fairness rules read, before an IPv6 one is grouped by
// its /64); "unknown" if the peer's address does not parse.
func appendClient(b []byte, r *http.Request, trusted *client.Proxies) []byte {
	a := client.Address(r.RemoteAddr, r.Header, trusted)
	if !a.IsValid() {
		return append(b, "unknown"...)
	}
	return a.AppendTo(b)
}

// parseColor unescapes the optional color parameter of query q into dst
// and reports whether it is valid: at most [MaxColorBytes] ASCII letters,
// digits and underscores, the anchored ^\w*$ rule.
func parseColor(dst []byte, q string) ([]byte, bool) {
	v, _ := queryValue(q, "color")
	if len(v) > 3*MaxColorBytes {
		return dst, false
	}
	dst, err := appendUnescape(dst, v) // a copy of up to 64 bytes; cheaper than branching on escapes
	if err != nil || len(dst) > MaxColorBytes {
		return dst, false
	}
	for _, c := range dst {
		if !isWord(c) {
			return dst, false
		}
	}
	return dst, true
}

func isWord(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_'
}

// parseName unescapes the name parameter of query q into dst. A missing
// name is the empty name. It returns the client's error when the name is
// invalid.
func parseName(dst []byte, q string) ([]byte, *httperr.HTTPError) {
	v, _ := queryValue(q, "name")
	if len(v) > 3*MaxNameBytes {
		return dst, errName
	}
	dst, err := appendUnescape(dst, v)
	if err != nil {
		return dst, errNameEscape
	}
	if len(dst) > MaxNameBytes || !utf8.Valid(dst) {
		return dst, errName
	}
	if store.KeyIsRoute(dst) {
		return dst, errNameRoute
	}
	return dst, nil
}

// setHTML marks a response without a body, such as a HEAD's, as HTML.
// Responses with a body leave the header to net/http: every page starts
// with "<h1", which http.DetectContentType names "text/html;
// charset=utf-8", and a handler that never calls w.Header() spares
// net/http a clone of the header map on every response (see
// docs/performance.md; the e2e test checks the header on the wire).
func setHTML(w http.ResponseWriter) {
	w.Header()["Content-Type"] = ctHTML
}

// setContentType sets the Content-Type header to ct and adds
// X-Content-Type-Options: nosniff, so that no browser renders a reflected
// User-Agent or message as HTML.
func setContentType(w http.ResponseWriter, ct []string) {
	h := w.Header()
	h["Content-Type"] = ct
	h["X-Content-Type-Options"] = nosniff
}

// writeError writes msg as a plain-text response with status code, and
// returns code.
func writeError(w http.ResponseWriter, code int, msg string) int {
	setContentType(w, ctText)
	w.WriteHeader(code)
	io.WriteString(w, msg)
	return code
}

// HiExhausted returns store.ErrHiExhausted while /hi answers 503
// because its counter has handed out store.MaxHits (the last /hi was
// refused so, and none has counted since), and nil otherwise. /healthz
// reports the error.
func (s *Server) HiExhausted() error { return s.visits.HiExhausted() }
