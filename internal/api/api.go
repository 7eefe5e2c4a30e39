// Package api serves the owner API of visitors, /api/v1/ on the public
// listener: counter owners read, set, reset, lock, delete and list their
// counters, and the root token makes and revokes scoped tokens and
// exports and imports the whole store while it serves.
//
// Every call is authenticated with a Bearer token. The root token is
// configured at start (its SHA-256 only is kept; it is never stored);
// the tokens it makes are shown once and kept in the store as the
// SHA-256 of their secret ([store.Token]), read on every call by the id
// the secret names, so that a token revoked through one instance is
// refused by every instance at once. A token acts only on keys that
// start with its prefix; the empty prefix, every key, is the root
// token's alone. A backup token (scope "backup") acts on no key: it may
// only export, and every other call is a 403.
//
// With Config.OpenCreate anyone may create a counter that does not
// exist, without a token (POST /api/v1/counters/{key}), and gets an
// exact token: one that acts on that key alone, and goes when the key is
// deleted. Any token may add to a key in its scope (POST
// /api/v1/counters/{key}/add).
//
// Every answer is JSON; every refusal is {"error":"…"} with a 4xx (a
// store that fails is a 503; export and import on a store that cannot
// do them online a 501). A refused call changes nothing. Every change
// writes one audit line to the log: the token's name, the call, the key,
// the counts before and after; never a secret.
package api

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/netip"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"visitors/internal/client"
	"visitors/internal/httperr"
	"visitors/internal/store"
	"visitors/internal/visit"
)

// Limits and defaults of the API.
const (
	// Prefix starts every path the API serves.
	Prefix = "/api/v1/"
	// MinRootBytes is the shortest root token accepted at start.
	MinRootBytes = 16
	// MaxBodyBytes bounds a JSON body; an import is bounded by
	// Config.ImportMaxBytes instead.
	MaxBodyBytes = 1 << 20
	// DefaultImportMaxBytes is the largest import body by default.
	DefaultImportMaxBytes = 256 << 20
	// DefaultLimit and MaxLimit are a list's page size by default and
	// at most.
	DefaultLimit = 100
	MaxLimit     = store.MaxList
	// MaxTokens is the most tokens the store holds; every call reads
	// them all.
	MaxTokens = 1000
	// MaxNameBytes bounds a token's name.
	MaxNameBytes = 64
	// MaxTotal is the largest total PUT sets and add makes: room is
	// left for 2^62 more visits, as an import leaves.
	MaxTotal = store.MaxTotal
	// TokenPrefix starts every token the API makes.
	TokenPrefix = "vt_"
	// transferTimeout is how long an authenticated export or import may
	// take to stream, past the public listener's read and write
	// timeouts, which are made for requests without a body.
	transferTimeout = 30 * time.Minute
)

// DefaultFailures is how many failed authentications a client may make:
// five at once, then one every 12 seconds.
var DefaultFailures = client.Rate{Events: 5, Per: time.Minute}

// Uniques tells today's unique visitors of a key, and forgets those of
// a deleted one: the web layer's *unique.Counter.
type Uniques interface {
	Today(key []byte, now time.Time) uint64
	// Held returns the keys with unique visitors today in memory.
	Held() [][]byte
	// Forget drops today's unique visitors of keys the store deleted.
	Forget(keys [][]byte) error
}

// Store is what the owner API asks of a store: the owners' edits and the
// tokens.
type Store interface {
	store.Editor
	store.TokenStore
}

// Config holds what a [Handler] depends on.
type Config struct {
	// Store holds the counters and the tokens. Required. If it
	// implements store.Backup, export and import are served.
	Store Store
	// RootHash is the SHA-256 of the root token. Required: without a
	// root token there is no API (the caller answers 404).
	RootHash [32]byte
	// Log receives the causes of 5xx answers, and the audit lines unless
	// Audit is set.
	Log zerolog.Logger
	// Audit, if set, receives the audit lines: one per change. It should
	// write them through a writer that never drops a line (the service's
	// is logsink.Writer.Waiting), where Log may drop lines under load.
	Audit *zerolog.Logger
	// Uniques, if set, adds unique_today to a counter's answer.
	Uniques Uniques
	// Trusted are the reverse proxies whose forwarding headers name the
	// client, for the limit on failed attempts.
	Trusted *client.Proxies
	// Failures is how many failed authentications a client may make;
	// the zero Rate means DefaultFailures. Past it, 429.
	Failures client.Rate
	// NoFailureLimit turns the limit on failed authentications off.
	NoFailureLimit bool
	// ImportMaxBytes bounds an import's body; <= 0 means
	// DefaultImportMaxBytes. Past it, 413.
	ImportMaxBytes int64
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// Rand makes token secrets and ids; nil means crypto/rand.
	Rand io.Reader
	// OpenCreate lets anyone create a counter that does not exist, with
	// POST /api/v1/counters/{key} and no token: the answer holds a token
	// for that key alone.
	OpenCreate bool
	// NewKeys limits the counters a client creates with OpenCreate: the
	// visit rules' budget (visit.Rules.Budget), so that badges and the
	// API share one budget per client. The zero Budget limits nothing.
	NewKeys visit.Budget
}

// Handler serves the owner API. It is safe for concurrent use.
type Handler struct {
	c        Config
	backup   store.Backup // nil: export and import answer 501
	failures *client.Limiter
	mux      *http.ServeMux // finds a request's route: newMux
	legacy   struct {       // legacyTokens' copy
		mu     sync.Mutex
		ok     bool
		read   time.Time
		tokens []store.Token
	}
}

// New returns a Handler for c.
func New(c Config) *Handler {
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.Rand == nil {
		c.Rand = rand.Reader
	}
	if c.ImportMaxBytes <= 0 {
		c.ImportMaxBytes = DefaultImportMaxBytes
	}
	if c.Failures.Off() {
		c.Failures = DefaultFailures
	}
	h := &Handler{c: c}
	h.backup, _ = c.Store.(store.Backup)
	h.mux = h.newMux()
	if !c.NoFailureLimit {
		// A failure takes a token from the new-key bucket, whose burst
		// is its count per period: five failures at once, then one per
		// 12 s; the visit bucket is off.
		h.failures = client.NewLimiter(client.LimiterOptions{NewKeys: c.Failures})
	}
	return h
}

// CheckRoot reports why secret cannot be the root token: it must be at
// least [MinRootBytes] bytes of printable ASCII without spaces, which
// an Authorization header carries as it is.
func CheckRoot(secret string) error {
	if secret == "" {
		return errors.New("the root token is empty")
	}
	if len(secret) < MinRootBytes {
		return fmt.Errorf("the root token is %d bytes; want at least %d (e.g. openssl rand -hex 32)", len(secret), MinRootBytes)
	}
	for i := 0; i < len(secret); i++ {
		if c := secret[i]; c <= ' ' || c > '~' {
			return fmt.Errorf("the root token holds byte %#x at %d; want printable ASCII without spaces", c, i)
		}
	}
	return nil
}

// principal is who made a call: the root token or a stored one.
type principal struct {
	id     string // "" for root
	name   string
	prefix string
	exact  bool // the key prefix alone
	backup bool // may only export
	root   bool
}

// may reports whether p may act on key.
func (p *principal) may(key string) bool {
	t := store.Token{Prefix: p.prefix, Exact: p.exact}
	return t.Covers(key)
}

// route is one endpoint: a handler per method, reached through the
// ServeMux patterns of its paths (see newMux).
type route struct {
	name    string   // for the audit log and errors: "counters/{key}"
	paths   []string // its ServeMux patterns' paths; none for routeAdd
	param   string   // the escaped path's start before its parameter ("" for none)
	key     bool     // the parameter is a key (unescapeKey), not a token id
	methods map[string]func(*Handler, *call) error
}

// call is one authenticated request.
type call struct {
	w     http.ResponseWriter
	r     *http.Request
	who   *principal
	param string // the path's parameter: a key or a token id, unescaped
	query map[string][]string
}

// ServeHTTP answers an /api/v1/ request: the ServeMux of New finds its
// route (or the 404) by the path as written, and serve answers it.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	hd := w.Header()
	hd["Cache-Control"] = []string{"no-store"}
	hd["X-Content-Type-Options"] = []string{"nosniff"}
	p := r.URL.EscapedPath()
	if !strings.HasPrefix(p, Prefix) {
		h.fail(w, r, errNotFound)
		return
	}
	next, _ := h.mux.Handler(&http.Request{Method: r.Method, URL: &url.URL{Path: asWritten(p)}})
	next.ServeHTTP(w, r)
}

// asWritten returns the path the ServeMux matches for escaped path p:
// p itself as the unescaped path, so that a percent-encoded byte is
// never the path's own (c%6Funters is no path, a%2Fadd one segment),
// with each empty or dot segment, which the mux would clean away with a
// redirect, as "%", a segment no literal matches. The route's handler
// reads its parameter from the request's own path.
func asWritten(p string) string {
	if !strings.Contains(p, "//") && !strings.Contains(p, "/.") {
		return p
	}
	segs := strings.Split(p[1:], "/")
	for i, s := range segs {
		if s == "." || s == ".." || s == "" && i < len(segs)-1 {
			segs[i] = "%"
		}
	}
	return "/" + strings.Join(segs, "/")
}

// newMux returns the ServeMux of h's routes. Each path gets a pattern
// per method it takes, and a HEAD pattern and a pattern without a
// method that answer 405 with the path's own Allow (a GET pattern would
// answer HEAD, and the mux's 405 is not JSON); the rest of /api/v1/ is
// a 404.
func (h *Handler) newMux() *http.ServeMux {
	mux := http.NewServeMux()
	mux.HandleFunc(Prefix, func(w http.ResponseWriter, r *http.Request) { h.fail(w, r, errNotFound) })
	for _, rt := range routes {
		serve := func(fn func(*Handler, *call) error) http.HandlerFunc {
			return func(w http.ResponseWriter, r *http.Request) { h.serve(w, r, rt, escapedParam(r, rt), fn) }
		}
		for _, path := range rt.paths {
			for m, fn := range rt.methods {
				next := serve(fn)
				if rt == &routeCounter && m == http.MethodPost {
					next = h.postCounter
				}
				mux.Handle(m+" "+path, next)
			}
			mux.Handle(http.MethodHead+" "+path, serve(nil))
			mux.Handle(path, serve(nil))
		}
	}
	return mux
}

// escapedParam returns the escaped parameter of rt in r's path.
func escapedParam(r *http.Request, rt *route) string {
	return strings.TrimPrefix(r.URL.EscapedPath(), rt.param)
}

// postCounter serves POST /api/v1/counters/{key...}: an add if the path
// as written ends in /add (a key that ends in "/add" is created with its
// slash percent-encoded, %2Fadd), else open creation (405 without
// Config.OpenCreate).
func (h *Handler) postCounter(w http.ResponseWriter, r *http.Request) {
	p := escapedParam(r, &routeCounter)
	if k, ok := strings.CutSuffix(p, addSuffix); ok {
		h.serve(w, r, &routeAdd, k, (*Handler).addCounter)
		return
	}
	h.serve(w, r, &routeCounter, p, h.method(&routeCounter, http.MethodPost))
}

// serve answers r on rt, whose parameter is escaped in param, with fn:
// 400 for a parameter that is not one, 405 if fn is nil, 429 for a
// client past its failed attempts, 401 without a valid token, then the
// call.
func (h *Handler) serve(w http.ResponseWriter, r *http.Request, rt *route, param string, fn func(*Handler, *call) error) {
	var err error
	switch {
	case rt.key:
		param, err = unescapeKey(param)
	case rt.param != "":
		param, err = unescape(param)
	}
	if err != nil {
		h.fail(w, r, err)
		return
	}
	if fn == nil {
		allow := make([]string, 0, len(rt.methods))
		for _, m := range []string{http.MethodGet, http.MethodPut, http.MethodPost, http.MethodDelete} {
			if h.method(rt, m) != nil {
				allow = append(allow, m)
			}
		}
		w.Header()["Allow"] = []string{strings.Join(allow, ", ")}
		h.fail(w, r, &httperr.HTTPError{Code: http.StatusMethodNotAllowed, Msg: fmt.Sprintf("%s takes %s", rt.name, strings.Join(allow, ", "))})
		return
	}
	var who *principal
	if rt != &routeCounter || r.Method != http.MethodPost { // open creation takes no token
		if who, err = h.authenticate(r); err != nil {
			h.fail(w, r, err)
			return
		}
		if who.backup && rt != &routeExport {
			h.fail(w, r, errBackupOnly)
			return
		}
	}
	q, err := parseQuery(r.URL.RawQuery)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	if err := fn(h, &call{w: w, r: r, who: who, param: param, query: q}); err != nil {
		h.fail(w, r, err)
	}
}

// method returns rt's handler of method m, or nil: POST on a counter,
// open creation, is there only with Config.OpenCreate.
func (h *Handler) method(rt *route, m string) func(*Handler, *call) error {
	if rt == &routeCounter && m == http.MethodPost && !h.c.OpenCreate {
		return nil
	}
	return rt.methods[m]
}

// addSuffix ends the path of POST /api/v1/counters/{key}/add.
const addSuffix = "/add"

// The routes. A token id is one segment, the empty one included; a key
// is the rest of the path.
var (
	routeCounters = route{name: "/api/v1/counters", paths: []string{"/api/v1/counters"},
		methods: map[string]func(*Handler, *call) error{http.MethodGet: (*Handler).listCounters}}
	routeCounter = route{name: "/api/v1/counters/{key}", paths: []string{"/api/v1/counters/{key...}"}, param: "/api/v1/counters/", key: true,
		methods: map[string]func(*Handler, *call) error{
			http.MethodGet: (*Handler).getCounter, http.MethodPut: (*Handler).putCounter, http.MethodDelete: (*Handler).deleteCounter,
			http.MethodPost: (*Handler).createCounter}}
	routeAdd = route{name: "/api/v1/counters/{key}/add", param: "/api/v1/counters/", key: true,
		methods: map[string]func(*Handler, *call) error{http.MethodPost: (*Handler).addCounter}}
	routeTokens = route{name: "/api/v1/tokens", paths: []string{"/api/v1/tokens"}, methods: map[string]func(*Handler, *call) error{
		http.MethodGet: (*Handler).listTokens, http.MethodPost: (*Handler).createToken}}
	routeToken = route{name: "/api/v1/tokens/{id}", paths: []string{"/api/v1/tokens/{id}", "/api/v1/tokens/{$}"}, param: "/api/v1/tokens/",
		methods: map[string]func(*Handler, *call) error{http.MethodDelete: (*Handler).deleteToken}}
	routeExport = route{name: "/api/v1/export", paths: []string{"/api/v1/export"},
		methods: map[string]func(*Handler, *call) error{http.MethodGet: (*Handler).export}}
	routeImport = route{name: "/api/v1/import", paths: []string{"/api/v1/import"},
		methods: map[string]func(*Handler, *call) error{http.MethodPost: (*Handler).importDump}}
	routes = []*route{&routeCounters, &routeCounter, &routeTokens, &routeToken, &routeExport, &routeImport}
)

// Authentication answers.
var (
	errNoToken = &httperr.HTTPError{Code: http.StatusUnauthorized, Msg: "missing token: send Authorization: Bearer TOKEN",
		Header: http.Header{"Www-Authenticate": {`Bearer realm="visitors"`}}}
	errBadToken = &httperr.HTTPError{Code: http.StatusUnauthorized, Msg: "invalid or revoked token",
		Header: http.Header{"Www-Authenticate": {`Bearer realm="visitors", error="invalid_token"`}}}
	errRootOnly   = &httperr.HTTPError{Code: http.StatusForbidden, Msg: "only the root token may do this"}
	errBackupOnly = &httperr.HTTPError{Code: http.StatusForbidden, Msg: "a backup token may only export: GET /api/v1/export"}
)

// authenticate returns who sent r, or the error to answer: 429 for a
// client past its failed attempts (before its token is looked at, so
// that the answer tells nothing of it), 401 for a missing token, and
// for a wrong or revoked one, which counts as a failed attempt.
func (h *Handler) authenticate(r *http.Request) (*principal, error) {
	id, now, err := h.admit(r)
	if err != nil {
		return nil, err
	}
	auth := r.Header.Get("Authorization")
	if auth == "" {
		return nil, errNoToken
	}
	scheme, secret, _ := strings.Cut(auth, " ")
	secret = strings.TrimSpace(secret)
	if !strings.EqualFold(scheme, "Bearer") || secret == "" {
		return nil, errNoToken
	}
	return h.verify(r, id, now, secret)
}

// admit returns r's client and the time, or the 429 of a client past
// its failed attempts.
func (h *Handler) admit(r *http.Request) (netip.Addr, time.Time, error) {
	now := h.c.Now()
	var id netip.Addr
	if h.failures != nil {
		id = client.Identify(r.RemoteAddr, r.Header, h.c.Trusted)
		if _, ok := h.failures.Visit(id, now, true); !ok {
			return id, now, tooManyFailures(h.failures.CreateRefused(id, now))
		}
	}
	return id, now, nil
}

// verify returns who secret, sent by client id at now, is, or the 401
// of a wrong or revoked one, which counts as a failed attempt.
func (h *Handler) verify(r *http.Request, id netip.Addr, now time.Time, secret string) (*principal, error) {
	sum := sha256.Sum256([]byte(secret))
	who, err := h.lookupToken(r.Context(), secret, &sum)
	if err != nil {
		return nil, err
	}
	if who != nil {
		return who, nil
	}
	if h.failures != nil {
		if ok, retry := h.failures.Created(id, now); !ok {
			return nil, tooManyFailures(retry)
		}
	}
	return nil, errBadToken
}

// lookupToken returns who secret, whose SHA-256 is sum, is, or nil. The
// root token is compared first. A secret the API made since tokens name
// their id (vt_ID.SECRET) is looked up by that id, at a cost that does
// not grow with the tokens stored (open creation makes one per counter);
// only one without an id, from before, is compared with the root's
// tokens (legacyTokens), and confirmed by its id.
func (h *Handler) lookupToken(ctx context.Context, secret string, sum *[32]byte) (*principal, error) {
	if subtle.ConstantTimeCompare(sum[:], h.c.RootHash[:]) == 1 {
		return &principal{name: "root", root: true}, nil
	}
	if id, ok := secretID(secret); ok {
		t, found, err := h.c.Store.Token(ctx, id)
		if err != nil {
			return nil, h.storeError(err, "read the token")
		}
		if found && subtle.ConstantTimeCompare(sum[:], t.Hash[:]) == 1 {
			return principalOf(&t), nil
		}
		return nil, nil
	}
	tokens, err := h.legacyTokens(ctx)
	if err != nil {
		return nil, h.storeError(err, "read the tokens")
	}
	var match *store.Token
	for i := range tokens { // every one, whatever matched
		if subtle.ConstantTimeCompare(sum[:], tokens[i].Hash[:]) == 1 && match == nil {
			match = &tokens[i]
		}
	}
	if match == nil {
		return nil, nil
	}
	// Read again by id: a token revoked since is refused at once.
	t, found, err := h.c.Store.Token(ctx, match.ID)
	if err != nil {
		return nil, h.storeError(err, "read the token")
	}
	if found && subtle.ConstantTimeCompare(sum[:], t.Hash[:]) == 1 {
		return principalOf(&t), nil
	}
	return nil, nil
}

// legacyRefresh is how long the tokens a secret without an id is
// compared with are kept between two reads of every token.
const legacyRefresh = 10 * time.Second

// legacyTokens returns the tokens a secret without an id may be: those
// not made by open creation (made by the root, at most MaxTokens), read
// at most once per legacyRefresh. Every token is one per counter with
// open creation: reading them on each failed attempt cost a store read
// of up to -max-keys tokens per call. The API makes no secret without
// an id any more, so a token from before that this misses can only be
// one an older visitors made within legacyRefresh.
func (h *Handler) legacyTokens(ctx context.Context) ([]store.Token, error) {
	l := &h.legacy
	l.mu.Lock()
	defer l.mu.Unlock()
	now := h.c.Now()
	if l.ok && now.Sub(l.read) < legacyRefresh && now.Sub(l.read) >= 0 {
		return l.tokens, nil
	}
	tokens, err := h.c.Store.Tokens(ctx)
	if err != nil {
		return nil, err
	}
	l.tokens = slices.DeleteFunc(tokens, func(t store.Token) bool { return t.Exact })
	l.read, l.ok = now, true
	return l.tokens, nil
}

// principalOf returns the principal of stored token t.
func principalOf(t *store.Token) *principal {
	return &principal{id: t.ID, name: t.Name, prefix: t.Prefix, exact: t.Exact, backup: t.Backup()}
}

// secretID returns the token id a secret made by newSecret names.
func secretID(secret string) (string, bool) {
	rest, ok := strings.CutPrefix(secret, TokenPrefix)
	if !ok {
		return "", false
	}
	id, _, ok := strings.Cut(rest, ".")
	return id, ok && id != ""
}

// tooManyFailures is the 429 of a client past its failed attempts.
func tooManyFailures(retry time.Duration) *httperr.HTTPError {
	return &httperr.HTTPError{Code: http.StatusTooManyRequests, Msg: "too many failed attempts from your address; try again later", Header: httperr.RetryAfter(max(retry, time.Second))}
}

// newSecret is [NewSecret] with the Handler's source of randomness.
func (h *Handler) newSecret(id string) (secret, _ string, err error) {
	return NewSecret(h.c.Rand, id)
}

// storeError is the 503 of a store's failure; the cause goes to the log.
func (h *Handler) storeError(err error, what string) error {
	if errors.Is(err, context.Canceled) {
		return &httperr.HTTPError{Code: 499, Msg: "request canceled", Err: err}
	}
	return &httperr.HTTPError{Code: http.StatusServiceUnavailable, Msg: "the counter store is unavailable; try again", Err: fmt.Errorf("%s: %w", what, err)}
}
