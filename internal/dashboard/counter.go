package dashboard

import (
	"bytes"
	"crypto/sha256"
	"crypto/subtle"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"visitors/internal/api"
	"visitors/internal/httperr"
	"visitors/internal/store"
	"visitors/internal/web"
)

// GraphDays are the spans a counter's page graphs.
var GraphDays = []int{30, 90, 365}

// CounterPage is a counter's page's own data.
type CounterPage struct {
	Key        string
	URL        string // the page's
	Total      uint64
	Today      uint64
	Unique     uint64
	Uniques    bool
	Locked     bool
	Days       int
	Spans      []Span
	GraphURL   string
	Public     bool   // a key the public endpoints take: a badge and a live stream
	BadgeURL   string // absolute
	BadgeMD    string
	BadgeHTML  string
	StreamURL  string
	Shared     bool      // a share link is live
	SharedAt   time.Time // when it was made
	ShareLink  string    // the link just made, shown this once
	Done       string    // what the last action did
	ShareGraph string
}

// Span is one of the graph's spans, a link.
type Span struct {
	Days    int
	URL     string
	Current bool
}

// shareIDPrefix starts the id of a share link's token.
const shareIDPrefix = api.ShareIDPrefix

// ShareID returns the id of key's share link token: one per key, so the
// page finds it with one read, and a new link replaces the last; the
// API revokes it when it deletes key (api.ShareID).
func ShareID(key string) string { return api.ShareID(key) }

// keyOf returns the key rq's query or form names in field, which the
// token must cover.
func (h *Handler) keyOf(rq *request, k string, given bool) (string, error) {
	switch {
	case !given:
		return "", &httperr.HTTPError{Code: http.StatusBadRequest, Msg: "no key given"}
	case !store.ValidKey([]byte(k)):
		return "", &httperr.HTTPError{Code: http.StatusBadRequest, Msg: fmt.Sprintf("a key is at most %d bytes of valid UTF-8", store.MaxKeyBytes)}
	case !rq.who.May(k):
		return "", &httperr.HTTPError{Code: http.StatusForbidden, Msg: "this token may not act on that key"}
	}
	return k, nil
}

// counter serves a counter's page, GET /dashboard/counter/{key}.
func (h *Handler) counter(rq *request, p string) {
	k, given := counterKey(rq.r, p)
	if p != "/dashboard/counter" && !given {
		h.fail(rq.w, rq.r, rq, errNotFound)
		return
	}
	key, err := h.keyOf(rq, k, given)
	if err != nil {
		h.fail(rq.w, rq.r, rq, err)
		return
	}
	h.counterPage(rq, key, http.StatusOK, "", "")
}

// counterPage answers key's page with code, what was done and a share
// link just made.
func (h *Handler) counterPage(rq *request, key string, code int, done, shareLink string) {
	ctx := rq.r.Context()
	c, err := h.c.Store.Get(ctx, []byte(key))
	if err != nil {
		h.fail(rq.w, rq.r, rq, err)
		return
	}
	days := 30
	if v := rq.r.URL.Query().Get("days"); v != "" {
		days, _ = strconv.Atoi(v)
	}
	if !validSpan(days) {
		days = 30
	}
	cp := &CounterPage{Key: key, URL: CounterURL(key), Total: c.Total, Today: c.Today, Locked: c.Locked, Days: days,
		Uniques: h.c.Uniques != nil, Done: done, ShareLink: shareLink,
		GraphURL: "/dashboard/graph.svg?key=" + url.QueryEscape(key) + "&days=" + strconv.Itoa(days)}
	if h.c.Uniques != nil {
		cp.Unique = h.c.Uniques.Today([]byte(key), h.c.API.Now())
	}
	for _, n := range GraphDays {
		cp.Spans = append(cp.Spans, Span{Days: n, URL: withQuery(cp.URL, "days", strconv.Itoa(n)), Current: n == days})
	}
	if store.ValidPublicKey(key) {
		cp.Public = true
		base := h.origin(rq.r) + "/counter/" + key
		cp.BadgeURL = base + ".svg"
		cp.BadgeMD = "![visitors](" + base + ".svg)"
		cp.BadgeHTML = `<img src="` + base + `.svg" alt="visitors">`
		cp.StreamURL = "/counter/" + key + "/stream"
	}
	t, found, err := h.c.Store.Token(ctx, ShareID(key))
	if err != nil {
		h.fail(rq.w, rq.r, rq, err)
		return
	}
	cp.Shared, cp.SharedAt = found, t.Created
	d := pageData{Title: key, Body: cp}
	d.set(rq)
	h.render(rq.w, code, "counter", d)
}

// withQuery returns u with the parameter k=v added.
func withQuery(u, k, v string) string {
	if strings.Contains(u, "?") {
		return u + "&" + k + "=" + url.QueryEscape(v)
	}
	return u + "?" + k + "=" + url.QueryEscape(v)
}

func validSpan(days int) bool {
	for _, n := range GraphDays {
		if n == days {
			return true
		}
	}
	return false
}

// origin returns the scheme and host r was sent to, for the badge's
// snippets and the share links.
func (h *Handler) origin(r *http.Request) string {
	scheme := "http"
	if h.https(r) {
		scheme = "https"
	}
	return scheme + "://" + r.Host
}

// graph serves GET /dashboard/graph.svg?key=K&days=N: the graph of
// /counter/{key}/graph.svg (web.Graph) with the unique visitors.
func (h *Handler) graph(rq *request) {
	q := rq.r.URL.Query()
	key, err := h.keyOf(rq, q.Get("key"), q.Has("key"))
	if err != nil {
		h.fail(rq.w, rq.r, rq, err)
		return
	}
	h.writeGraph(rq.w, rq.r, key, q.Get("days"))
}

// writeGraph writes key's graph of days (one of GraphDays) as SVG.
func (h *Handler) writeGraph(w http.ResponseWriter, r *http.Request, key, days string) {
	n, err := strconv.Atoi(days)
	if err != nil || !validSpan(n) {
		h.fail(w, r, nil, &httperr.HTTPError{Code: http.StatusBadRequest, Msg: "days: want 30, 90 or 365"})
		return
	}
	d, err := h.c.Store.Days(r.Context(), []byte(key), n)
	if err != nil {
		h.fail(w, r, nil, err)
		return
	}
	var unique []uint64
	if h.c.Uniques != nil {
		if unique, err = h.c.Uniques.Days([]byte(key), h.c.API.Now(), n); err != nil {
			h.fail(w, r, nil, err)
			return
		}
	}
	var b bytes.Buffer
	web.Graph(&b, key, d, unique)
	w.Header().Set("Content-Security-Policy", svgCSP)
	w.Header().Set("Content-Type", "image/svg+xml")
	w.Write(b.Bytes())
}

// confirmDelete serves GET /dashboard/delete?key=K: the confirmation
// step before a counter is deleted.
func (h *Handler) confirmDelete(rq *request) {
	q := rq.r.URL.Query()
	key, err := h.keyOf(rq, q.Get("key"), q.Has("key"))
	if err != nil {
		h.fail(rq.w, rq.r, rq, err)
		return
	}
	d := pageData{Title: "Delete " + key, Body: &CounterPage{Key: key, URL: CounterURL(key)}}
	d.set(rq)
	h.render(rq.w, http.StatusOK, "delete", d)
}

// action serves POST /dashboard/action: the form's do on its key,
// through the API (set, add, lock, unlock, reset, delete) or on the
// key's share link (share, unshare).
func (h *Handler) action(rq *request) {
	f := rq.r.PostForm
	k, err := url.QueryUnescape(f.Get("key"))
	if err != nil {
		h.fail(rq.w, rq.r, rq, &httperr.HTTPError{Code: http.StatusBadRequest, Msg: "the form's key is not query-escaped"})
		return
	}
	key, err := h.keyOf(rq, k, f.Has("key"))
	if err != nil {
		h.fail(rq.w, rq.r, rq, err)
		return
	}
	ctx := rq.r.Context()
	var done, link string
	switch do := f.Get("do"); do {
	case "set", "add":
		v := strings.TrimSpace(f.Get("value"))
		if do == "set" {
			n, perr := strconv.ParseUint(v, 10, 64)
			if perr != nil {
				err = &httperr.HTTPError{Code: http.StatusBadRequest, Msg: "the start value: want a whole number from 0"}
				break
			}
			_, err = h.callAPI(ctx, rq, http.MethodPut, counterPath(key, ""), map[string]uint64{"total": n})
			done = fmt.Sprintf("The total starts at %d.", n)
		} else {
			n, perr := strconv.ParseInt(v, 10, 64)
			if perr != nil {
				err = &httperr.HTTPError{Code: http.StatusBadRequest, Msg: "add: want a whole number, negative to take away"}
				break
			}
			_, err = h.callAPI(ctx, rq, http.MethodPost, counterPath(key, "/add"), map[string]int64{"n": n})
			done = fmt.Sprintf("Added %d.", n)
		}
	case "lock", "unlock":
		_, err = h.callAPI(ctx, rq, http.MethodPut, counterPath(key, ""), map[string]bool{"locked": do == "lock"})
		done = map[string]string{"lock": "Locked: visits are answered, not counted.", "unlock": "Unlocked: visits count again."}[do]
	case "reset":
		_, err = h.callAPI(ctx, rq, http.MethodPut, counterPath(key, ""), map[string]uint64{"total": 0})
		done = "Reset to 0."
	case "delete":
		if _, err = h.callAPI(ctx, rq, http.MethodDelete, counterPath(key, ""), nil); err == nil {
			if _, err := h.c.Store.DeleteToken(ctx, ShareID(key)); err != nil {
				h.c.API.Log().Error().Err(err).Str("key", key).Msg("dashboard: revoke the deleted counter's share link")
			}
			d := pageData{Title: "Deleted", Notice: "The counter " + strconv.Quote(key) + " is deleted."}
			d.set(rq)
			d.Body = &Overview{Scope: rq.who.Prefix, Exact: rq.who.Exact, Sort: ByName}
			h.render(rq.w, http.StatusOK, "overview", d)
			return
		}
	case "share":
		link, err = h.makeShare(rq, key)
		done = "A share link is made; an older one no longer works."
	case "unshare":
		var ok bool
		ok, err = h.c.Store.DeleteToken(ctx, ShareID(key))
		if err == nil {
			h.c.API.Audit(rq.who, "POST /dashboard/action", "revoke share", key).Bool("revoked", ok).Msg("dashboard change")
			done = "The share link is revoked."
		}
	default:
		err = &httperr.HTTPError{Code: http.StatusBadRequest, Msg: "do: want set, add, lock, unlock, reset, delete, share or unshare"}
	}
	if err != nil {
		h.fail(rq.w, rq.r, rq, err)
		return
	}
	h.counterPage(rq, key, http.StatusOK, done, link)
}

// makeShare stores a new share link of key, replacing the last, and
// returns its path: /dashboard/share/{id}.{secret}. The token is
// exact, for key alone; the secret is not one the API takes (no
// TokenPrefix, an exact token), so the link reads and changes nothing.
func (h *Handler) makeShare(rq *request, key string) (string, error) {
	secret, err := randomID(h.c.Rand)
	if err != nil {
		return "", &httperr.HTTPError{Code: http.StatusServiceUnavailable, Msg: "no link could be made; try again", Err: err}
	}
	id := ShareID(key)
	if err := h.shareRoom(rq, id); err != nil {
		return "", err
	}
	full := id + "." + secret
	t := store.Token{ID: id, Name: "share link", Prefix: key, Exact: true, Hash: sha256.Sum256([]byte(full)), Created: h.c.API.Now().UTC().Truncate(time.Second)}
	if err := h.c.Store.PutToken(rq.r.Context(), t); err != nil {
		return "", err
	}
	h.c.API.Audit(rq.who, "POST /dashboard/action", "share", key).Str("share_id", id).Msg("dashboard change")
	return h.origin(rq.r) + "/dashboard/share/" + full, nil
}

// MaxShares is the most share links the keys of one token's scope
// have at once: each is a stored token, which every read of the tokens
// reads, and a key needs no counter to be shared.
const MaxShares = api.MaxTokens

// shareRoom returns the 409 of a new share link (id) past MaxShares in
// rq's scope; a link that replaces one of the same key always has room.
func (h *Handler) shareRoom(rq *request, id string) error {
	ts, err := h.c.Store.Tokens(rq.r.Context())
	if err != nil {
		return err
	}
	n := 0
	for i := range ts {
		if ts[i].ID == id {
			return nil
		}
		if strings.HasPrefix(ts[i].ID, shareIDPrefix) && ts[i].Exact && rq.who.May(ts[i].Prefix) {
			n++
		}
	}
	if n >= MaxShares {
		return &httperr.HTTPError{Code: http.StatusConflict, Msg: fmt.Sprintf("the keys you may act on have %d share links, the most they may: revoke one first", n)}
	}
	return nil
}

// share serves GET /dashboard/share/{id}.{secret} and its graph,
// /graph.svg?days=N, without a session: the counter the link names,
// read-only, while the link is not revoked.
func (h *Handler) share(w http.ResponseWriter, r *http.Request, rest string) {
	full, graph := strings.CutSuffix(rest, "/graph.svg")
	id, _, _ := strings.Cut(full, ".")
	notFound := &httperr.HTTPError{Code: http.StatusNotFound, Msg: "no such share link: it may have been revoked"}
	if !strings.HasPrefix(id, shareIDPrefix) || strings.Contains(full, "/") {
		h.fail(w, r, nil, notFound)
		return
	}
	t, found, err := h.c.Store.Token(r.Context(), id)
	if err != nil {
		h.fail(w, r, nil, err)
		return
	}
	sum := sha256.Sum256([]byte(full))
	if !found || !t.Exact || subtle.ConstantTimeCompare(sum[:], t.Hash[:]) != 1 {
		h.fail(w, r, nil, notFound)
		return
	}
	key := t.Prefix
	if graph {
		h.writeGraph(w, r, key, r.URL.Query().Get("days"))
		return
	}
	c, err := h.c.Store.Get(r.Context(), []byte(key))
	if err != nil {
		h.fail(w, r, nil, err)
		return
	}
	cp := &CounterPage{Key: key, Total: c.Total, Today: c.Today, Locked: c.Locked, Days: 30, Uniques: h.c.Uniques != nil,
		ShareGraph: "/dashboard/share/" + full + "/graph.svg?days=30"}
	if h.c.Uniques != nil {
		cp.Unique = h.c.Uniques.Today([]byte(key), h.c.API.Now())
	}
	h.render(w, http.StatusOK, "share", pageData{Title: key, Body: cp})
}
