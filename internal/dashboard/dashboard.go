// Package dashboard serves the owners' dashboard, /dashboard on the
// public listener: server-rendered pages (html/template) where an owner
// signs in with a token of the owner API, sees the counters the token
// may see, and steers them (a start value, add, lock, reset, delete, a
// read-only share link); the root token also makes and revokes tokens,
// exports and imports.
//
// The dashboard is a front end of internal/api, not a second owner of
// its rules: a sign-in goes through the API's token checks and its
// limit on failed attempts ([api.Handler.SignIn]); every request checks
// the session's token again ([api.Handler.Lookup]), so a revoked token
// ends its sessions at once; every change is a call of the API itself,
// in process, with the session's token (callAPI), so that scopes, checks
// and audit lines are the API's. What the API has no call for reads or
// writes the store's roles directly, under the scope [api.Principal]
// says, and audits through [api.Handler.Audit]: the overview (sorting by
// count, sparklines) reads the Editor role; share links, exact tokens
// whose secret the API never takes, are kept through the TokenStore
// role.
//
// Sessions are held in memory ([DefaultMaxSessions]): a restart signs
// everyone out, and each instance has its own. The session id is 32
// bytes of crypto/rand in an HttpOnly, SameSite=Strict cookie for
// /dashboard alone (Secure under TLS), new at every sign-in, ending
// after [DefaultIdle] unused and [DefaultMaxAge] in all. Every state
// change carries the session's CSRF token; every answer carries a
// strict Content-Security-Policy: the pages run no inline script or
// style. A POST from another site (Sec-Fetch-Site, or Origin) is refused
// before anything else, the sign-in's too (http.CrossOriginProtection):
// no site signs a browser in to a session of its choosing.
package dashboard

import (
	"context"
	"crypto/rand"
	"embed"
	"errors"
	"html/template"
	"io"
	"io/fs"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"time"

	"visitors/internal/api"
	"visitors/internal/client"
	"visitors/internal/httperr"
	"visitors/internal/store"
)

//go:embed templates/*.html
var templateFS embed.FS

//go:embed static
var staticFS embed.FS

// Store is what the dashboard reads and what its share links keep: the
// owner's Editor role and the tokens.
type Store interface {
	store.Editor
	store.TokenStore
}

// Uniques tells a key's unique visitors: the web layer's
// *unique.Counter.
type Uniques interface {
	Today(key []byte, now time.Time) uint64
	Days(key []byte, now time.Time, n int) ([]uint64, error)
}

// Config holds what a [Handler] depends on.
type Config struct {
	// API is the owner API the dashboard signs in with and acts
	// through. Required.
	API *api.Handler
	// Store is the store the API serves. Required.
	Store Store
	// Uniques, if set, adds unique visitors to the pages.
	Uniques Uniques
	// Idle and MaxAge bound a session; zero means DefaultIdle and
	// DefaultMaxAge.
	Idle, MaxAge time.Duration
	// MaxSessions is the most sessions held; zero means
	// DefaultMaxSessions.
	MaxSessions int
	// RankTTL is how long a ranking by count is reused; zero means
	// DefaultRankTTL, < 0 none.
	RankTTL time.Duration
	// Rand makes session ids, CSRF tokens and share links; nil means
	// crypto/rand.
	Rand io.Reader
	// Trusted are the reverse proxies (-trusted-proxies) whose
	// X-Forwarded-Proto: https tells that the browser speaks HTTPS to
	// them: the session cookie is then Secure, as under TLS.
	Trusted *client.Proxies
}

// Handler serves /dashboard. It is safe for concurrent use.
type Handler struct {
	c        Config
	sessions *sessions
	pages    *template.Template
	static   http.Handler
	rankings *rankings
	cross    *http.CrossOriginProtection // refuses a cross-site POST, the sign-in's too
}

// New returns a Handler for c.
func New(c Config) *Handler {
	if c.Idle <= 0 {
		c.Idle = DefaultIdle
	}
	if c.MaxAge <= 0 {
		c.MaxAge = DefaultMaxAge
	}
	if c.MaxSessions <= 0 {
		c.MaxSessions = DefaultMaxSessions
	}
	if c.Rand == nil {
		c.Rand = rand.Reader
	}
	if c.RankTTL == 0 {
		c.RankTTL = DefaultRankTTL
	}
	sub, _ := fs.Sub(staticFS, "static")
	return &Handler{
		c:        c,
		sessions: newSessions(c.Rand, c.Idle, c.MaxAge, c.MaxSessions),
		pages:    template.Must(template.New("").Funcs(funcs).ParseFS(templateFS, "templates/*.html")),
		static:   http.StripPrefix("/dashboard/static/", http.FileServerFS(sub)),
		rankings: &rankings{ttl: c.RankTTL, m: make(map[rankKey]*ranking)},
		cross:    http.NewCrossOriginProtection(),
	}
}

// CSP is the Content-Security-Policy of every page: the dashboard's own
// scripts, styles and images only, no inline script or style, no
// framing.
const CSP = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; " +
	"form-action 'self'; frame-ancestors 'none'; base-uri 'none'; object-src 'none'"

// svgCSP is the policy of the graphs, SVG images: their own dark-mode
// style element and nothing else.
const svgCSP = "default-src 'none'; style-src 'unsafe-inline'; frame-ancestors 'none'"

// securityHeaders sets the headers every answer carries.
func securityHeaders(h http.Header) {
	h.Set("Content-Security-Policy", CSP)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Cache-Control", "no-store")
}

// ServeHTTP answers a request for /dashboard or below.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	securityHeaders(w.Header())
	if err := h.cross.Check(r); err != nil { // a form posted from another site: before any session or token is looked at
		h.fail(w, r, nil, &httperr.HTTPError{Code: http.StatusForbidden, Msg: "a form from another site may not post here"})
		return
	}
	p := r.URL.EscapedPath()
	switch {
	case strings.HasPrefix(p, "/dashboard/static/"):
		if !h.methods(w, r, http.MethodGet) {
			return
		}
		w.Header().Set("Cache-Control", "public, max-age=3600")
		h.static.ServeHTTP(w, r)
		return
	case strings.HasPrefix(p, "/dashboard/share/"):
		if h.methods(w, r, http.MethodGet) {
			h.share(w, r, strings.TrimPrefix(p, "/dashboard/share/"))
		}
		return
	case p == "/dashboard/login":
		if h.methods(w, r, http.MethodPost) {
			h.login(w, r)
		}
		return
	}
	rq := h.request(w, r)
	if rq == nil {
		return
	}
	switch {
	case p == "/dashboard" || p == "/dashboard/":
		if h.methods(w, r, http.MethodGet) {
			h.overview(rq)
		}
	case p == "/dashboard/logout":
		if h.post(rq) {
			h.logout(rq)
		}
	case p == "/dashboard/counter" || strings.HasPrefix(p, "/dashboard/counter/"):
		if h.methods(w, r, http.MethodGet) {
			h.counter(rq, p)
		}
	case p == "/dashboard/graph.svg":
		if h.methods(w, r, http.MethodGet) {
			h.graph(rq)
		}
	case p == "/dashboard/delete":
		if h.methods(w, r, http.MethodGet) {
			h.confirmDelete(rq)
		}
	case p == "/dashboard/action":
		if h.post(rq) {
			h.action(rq)
		}
	case p == "/dashboard/tokens":
		switch r.Method {
		case http.MethodGet:
			h.tokens(rq)
		case http.MethodPost:
			if h.post(rq) {
				h.createToken(rq)
			}
		default:
			h.methods(w, r, http.MethodGet, http.MethodPost)
		}
	case p == "/dashboard/tokens/revoke":
		if h.post(rq) {
			h.revokeToken(rq)
		}
	case p == "/dashboard/export":
		if h.methods(w, r, http.MethodGet) {
			h.export(rq)
		}
	case p == "/dashboard/import":
		if h.methods(w, r, http.MethodPost) {
			h.importDump(rq)
		}
	default:
		h.fail(rq.w, rq.r, rq, errNotFound)
	}
}

// methods reports whether r's method is one of ms, else answers 405.
func (h *Handler) methods(w http.ResponseWriter, r *http.Request, ms ...string) bool {
	for _, m := range ms {
		if r.Method == m || m == http.MethodGet && r.Method == http.MethodHead {
			return true
		}
	}
	w.Header().Set("Allow", strings.Join(ms, ", "))
	h.fail(w, r, nil, &httperr.HTTPError{Code: http.StatusMethodNotAllowed, Msg: "this page takes " + strings.Join(ms, ", ")})
	return false
}

// post reports whether rq is a POST with the session's CSRF token in
// its form field csrf, else answers 405 or 403.
func (h *Handler) post(rq *request) bool {
	if !h.methods(rq.w, rq.r, http.MethodPost) {
		return false
	}
	rq.r.Body = http.MaxBytesReader(rq.w, rq.r.Body, maxFormBytes)
	if err := rq.r.ParseForm(); err != nil {
		h.fail(rq.w, rq.r, rq, &httperr.HTTPError{Code: http.StatusBadRequest, Msg: "the form could not be read", Err: err})
		return false
	}
	if !rq.s.validCSRF(rq.r.PostForm.Get("csrf")) {
		h.fail(rq.w, rq.r, rq, errCSRF)
		return false
	}
	return true
}

// maxFormBytes bounds a form's body (an import's is the API's bound).
const maxFormBytes = 64 << 10

var (
	errNotFound = &httperr.HTTPError{Code: http.StatusNotFound, Msg: "no such page"}
	errCSRF     = &httperr.HTTPError{Code: http.StatusForbidden, Msg: "the form's CSRF token is missing or not this session's: reload the page and try again"}
	errRootOnly = &httperr.HTTPError{Code: http.StatusForbidden, Msg: "only the root token may do this"}
)

// request is one request of a signed-in session, with who its token is
// now.
type request struct {
	w   http.ResponseWriter
	r   *http.Request
	s   *session
	who api.Principal
}

// request returns the signed-in request of r, or nil once it answered:
// the sign-in page without a live session, the sign-in page with a
// notice when the session's token was revoked since.
func (h *Handler) request(w http.ResponseWriter, r *http.Request) *request {
	now := h.c.API.Now()
	s := h.sessions.get(r, now)
	if s == nil {
		if _, err := r.Cookie(CookieName); err == nil {
			http.SetCookie(w, cookie(h.https(r), "", -1))
		}
		h.signInPage(w, r, http.StatusUnauthorized, "")
		return nil
	}
	who, ok, err := h.c.API.Lookup(r.Context(), s.secret)
	if err != nil {
		h.fail(w, r, nil, err)
		return nil
	}
	if !ok {
		h.sessions.end(s.id)
		http.SetCookie(w, cookie(h.https(r), "", -1))
		h.c.API.Log().Info().Str("dashboard", "session ended").Msg("the session's token was revoked")
		h.signInPage(w, r, http.StatusUnauthorized, "Your token was revoked: sign in with another.")
		return nil
	}
	return &request{w: w, r: r, s: s, who: who}
}

// login serves POST /dashboard/login with the form field token.
func (h *Handler) login(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, maxFormBytes)
	if err := r.ParseForm(); err != nil {
		h.signInPage(w, r, http.StatusBadRequest, "The form could not be read.")
		return
	}
	secret := strings.TrimSpace(r.PostForm.Get("token"))
	who, err := h.c.API.SignIn(r, secret)
	if err != nil {
		var he *httperr.HTTPError
		code, msg := http.StatusServiceUnavailable, "The store is unavailable; try again."
		if errors.As(err, &he) {
			code, msg = he.Code, he.Msg
			for k, v := range he.Header {
				if k == "Retry-After" {
					w.Header()[k] = v
				}
			}
			if he.Err != nil {
				h.c.API.Log().Error().Err(he.Err).Msg("dashboard sign-in")
			}
		}
		if code == http.StatusUnauthorized {
			msg = "That token is not valid, or was revoked."
		}
		h.c.API.Log().Info().Str("dashboard", "sign-in refused").Int("status", code).Str("client", r.RemoteAddr).Msg("dashboard sign-in refused")
		h.signInPage(w, r, code, msg)
		return
	}
	if old := h.sessions.get(r, h.c.API.Now()); old != nil {
		h.sessions.end(old.id) // a sign-in never keeps a session id it was brought
	}
	s, err := h.sessions.start(secret, h.c.API.Now())
	if err != nil {
		h.fail(w, r, nil, &httperr.HTTPError{Code: http.StatusServiceUnavailable, Msg: "no session could be made; try again", Err: err})
		return
	}
	http.SetCookie(w, cookie(h.https(r), s.id, h.c.MaxAge))
	h.c.API.Audit(who, "POST /dashboard/login", "sign in", "").Msg("dashboard sign-in")
	http.Redirect(w, r, "/dashboard", http.StatusSeeOther)
}

// logout serves POST /dashboard/logout.
func (h *Handler) logout(rq *request) {
	h.sessions.end(rq.s.id)
	http.SetCookie(rq.w, cookie(h.https(rq.r), "", -1))
	h.c.API.Audit(rq.who, "POST /dashboard/logout", "sign out", "").Msg("dashboard sign-out")
	h.signInPage(rq.w, rq.r, http.StatusOK, "You are signed out.")
}

// fail answers err as an error page: an *httperr.HTTPError as it says,
// any other error (a store's) as a 503 whose cause goes to the log; rq
// may be nil.
func (h *Handler) fail(w http.ResponseWriter, r *http.Request, rq *request, err error) {
	var he *httperr.HTTPError
	switch {
	case errors.As(err, &he):
	case errors.Is(err, context.Canceled): // the client went away: nothing to log
		he = &httperr.HTTPError{Code: 499, Msg: "request canceled"}
	default:
		he = &httperr.HTTPError{Code: http.StatusServiceUnavailable, Msg: "the counter store is unavailable; try again", Err: err}
	}
	if he.Err != nil {
		h.c.API.Log().Error().Err(he.Err).Str("path", r.URL.Path).Msg("dashboard: " + he.Msg)
	}
	for k, v := range he.Header {
		w.Header()[k] = v
	}
	d := pageData{Title: http.StatusText(he.Code), Error: he.Msg}
	if rq != nil {
		d.set(rq)
	}
	h.render(w, he.Code, "error", d)
}

// pageData is what every page's layout reads.
type pageData struct {
	Title  string
	Who    *api.Principal
	CSRF   string
	Error  string
	Notice string
	Body   any // the page's own
}

func (d *pageData) set(rq *request) {
	d.Who, d.CSRF = &rq.who, rq.s.csrf
}

// render writes the page name with d, with code.
func (h *Handler) render(w http.ResponseWriter, code int, name string, d pageData) {
	var b strings.Builder
	if err := h.pages.ExecuteTemplate(&b, name, d); err != nil {
		h.c.API.Log().Error().Err(err).Str("page", name).Msg("dashboard: render")
		http.Error(w, "the page could not be made", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(code)
	io.WriteString(w, b.String())
}

// signInPage answers the sign-in form with code and a notice.
func (h *Handler) signInPage(w http.ResponseWriter, r *http.Request, code int, notice string) {
	d := pageData{Title: "Sign in"}
	if code >= 400 && notice != "" {
		d.Error = notice
	} else {
		d.Notice = notice
	}
	h.render(w, code, "login", d)
}

// CounterURL returns the path of key's page: /dashboard/counter/{key},
// the key path-escaped (a '/' as %2F), or /dashboard/counter?key=KEY
// for the keys a browser would take for no segment or a dot segment
// (the empty key, ".", "..").
func CounterURL(key string) string {
	if key == "" || strings.Trim(key, ".") == "" {
		return "/dashboard/counter?key=" + url.QueryEscape(key)
	}
	return "/dashboard/counter/" + url.PathEscape(key)
}

// counterKey returns the key of a counter page's escaped path p.
func counterKey(r *http.Request, p string) (string, bool) {
	if p == "/dashboard/counter" {
		q, err := url.ParseQuery(r.URL.RawQuery)
		if err != nil || !q.Has("key") {
			return "", false
		}
		return q.Get("key"), true
	}
	rest := strings.TrimPrefix(p, "/dashboard/counter/")
	if strings.Contains(rest, "/") { // a key's '/' is %2F
		return "", false
	}
	k, err := url.PathUnescape(rest)
	if err != nil || k == "" {
		return "", false
	}
	return k, true
}

// https reports whether r's browser speaks HTTPS: r came over TLS, or
// through a trusted reverse proxy that says so in X-Forwarded-Proto.
func (h *Handler) https(r *http.Request) bool {
	if r.TLS != nil {
		return true
	}
	if h.c.Trusted.Empty() || !strings.EqualFold(strings.TrimSpace(r.Header.Get("X-Forwarded-Proto")), "https") {
		return false
	}
	peer, err := netip.ParseAddrPort(r.RemoteAddr)
	return err == nil && h.c.Trusted.Contains(peer.Addr().Unmap())
}
