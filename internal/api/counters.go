package api

import (
	"errors"
	"net/http"
	"strings"

	"visitors/internal/httperr"
	"visitors/internal/store"
)

// Counter is a counter as the API answers it.
type Counter struct {
	Key         string  `json:"key"`
	Total       uint64  `json:"total"`
	Today       uint64  `json:"today"`
	Locked      bool    `json:"locked"`
	UniqueToday *uint64 `json:"unique_today,omitempty"` // GET of one key, when unique visitors are counted
}

func counterOf(key string, c store.Counts) Counter {
	return Counter{Key: key, Total: c.Total, Today: c.Today, Locked: c.Locked}
}

// Page is one page of GET /api/v1/counters: the counters in byte order
// of their keys and, if there may be more, the after cursor of the next
// page (null when there are none).
type Page struct {
	Counters []Counter `json:"counters"`
	Next     *string   `json:"next"`
}

var (
	errEmptyKey = badRequest("no key: address a key as /api/v1/counters/{key}, percent-encoded, or any key, the empty one included, as /api/v1/counters/?key=KEY")
	errTwoKeys  = badRequest("a key in the path and a key parameter: give one")
	errRouteKey = badRequest("%s", store.MsgRoute)
	errFull     = &httperr.HTTPError{Code: http.StatusConflict, Msg: "the store holds -max-keys keys: a new key cannot be made; delete one first"}
	errNoBadge  = badRequest("the owner API makes only keys a badge can show: %s; a key that exists (a /hello name, an imported key) is still read, changed and deleted", strings.TrimSuffix(lowerFirst(store.MsgPublicKey), "."))
)

// lowerFirst returns s with its first letter in lower case, to quote a
// message inside another.
func lowerFirst(s string) string {
	if s == "" {
		return s
	}
	return strings.ToLower(s[:1]) + s[1:]
}

// mayMake refuses a change that would make key k when no badge could
// show it (store.ValidPublicKey): the owner API and the badges name the
// same keys. A key that exists, one /hello made (any name of valid
// UTF-8) or an import brought, may still be changed.
func (h *Handler) mayMake(c *call, k string) error {
	if store.ValidPublicKey(k) {
		return nil
	}
	es, err := h.c.Store.List(c.r.Context(), []byte(k), nil, 1)
	if err != nil {
		return h.storeError(err, "list")
	}
	if len(es) == 1 && string(es[0].Key) == k {
		return nil
	}
	return errNoBadge
}

// key returns the key a call on /api/v1/counters/{key} acts on, which
// must be in the caller's scope: the path's, or, with an empty path
// key, the key parameter's (?key= is the empty key: /hello's counter
// without a name).
func (c *call) key() (string, error) {
	if err := c.only("key"); err != nil {
		return "", err
	}
	k, given, err := c.keyParam("key")
	switch {
	case err != nil:
		return "", err
	case given && c.param != "":
		return "", errTwoKeys
	case !given && c.param == "":
		return "", errEmptyKey
	case !given:
		k = c.param
	}
	if c.r.Method != http.MethodGet && c.r.Method != http.MethodDelete && store.KeyIsRoute(k) {
		return "", errRouteKey // read and delete one from before the rule, make none
	}
	if !c.who.may(k) {
		if c.who.exact {
			return "", &httperr.HTTPError{Code: http.StatusForbidden, Msg: "this token acts on the key " + quote(c.who.prefix) + " alone"}
		}
		return "", &httperr.HTTPError{Code: http.StatusForbidden, Msg: "the key is outside this token's prefix " + quote(c.who.prefix)}
	}
	return k, nil
}

// quote returns s as a JSON-style quoted string.
func quote(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"' || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r < ' ':
			b.WriteString(`\u00`)
			b.WriteByte("0123456789abcdef"[r>>4])
			b.WriteByte("0123456789abcdef"[r&15])
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}

// getCounter serves GET /api/v1/counters/{key}.
func (h *Handler) getCounter(c *call) error {
	k, err := c.key()
	if err != nil {
		return err
	}
	counts, err := h.c.Store.Get(c.r.Context(), []byte(k))
	if err != nil {
		return h.storeError(err, "get")
	}
	out := counterOf(k, counts)
	if h.c.Uniques != nil {
		u := h.c.Uniques.Today([]byte(k), h.c.Now())
		out.UniqueToday = &u
	}
	writeJSON(c.w, http.StatusOK, out)
	return nil
}

// putCounter serves PUT /api/v1/counters/{key} {"total":N,"locked":B}:
// either or both. Locking is done before the total is set and unlocking
// after, so that no visit counts between the two.
func (h *Handler) putCounter(c *call) error {
	k, err := c.key()
	if err != nil {
		return err
	}
	if err := h.mayMake(c, k); err != nil {
		return err
	}
	m, err := c.body("total", "locked")
	if err != nil {
		return err
	}
	var total *uint64
	var locked *bool
	if raw, ok := m["total"]; ok {
		total = new(uint64)
		if err := field(raw, "total", "a whole number from 0", total); err != nil {
			return err
		}
		if *total > MaxTotal {
			return badRequest("field \"total\": at most %d", uint64(MaxTotal))
		}
	}
	if raw, ok := m["locked"]; ok {
		locked = new(bool)
		if err := field(raw, "locked", "true or false", locked); err != nil {
			return err
		}
	}
	if total == nil && locked == nil {
		return badRequest("nothing to change: send {\"total\":N} and/or {\"locked\":true|false}")
	}
	ctx, key := c.r.Context(), []byte(k)
	before, err := h.c.Store.Get(ctx, key)
	if err != nil {
		return h.storeError(err, "get")
	}
	after := before
	if locked != nil && *locked {
		if after, err = h.c.Store.Lock(ctx, key, true); err != nil {
			return h.changeError(err, "lock")
		}
	}
	if total != nil {
		if after, err = h.c.Store.Set(ctx, key, *total); err != nil {
			return h.changeError(err, "set")
		}
	}
	if locked != nil && !*locked {
		if after, err = h.c.Store.Lock(ctx, key, false); err != nil {
			return h.changeError(err, "unlock")
		}
	}
	h.audit(c, "set", k).Object("before", countsLog(before)).Object("after", countsLog(after)).Msg("api change")
	writeJSON(c.w, http.StatusOK, counterOf(k, after))
	return nil
}

// changeError is the answer to a change the store refused.
func (h *Handler) changeError(err error, what string) error {
	if errors.Is(err, store.ErrTooManyKeys) {
		return errFull
	}
	return h.storeError(err, what)
}

// deleteCounter serves DELETE /api/v1/counters/{key}: 404 if absent.
func (h *Handler) deleteCounter(c *call) error {
	k, err := c.key()
	if err != nil {
		return err
	}
	ctx, key := c.r.Context(), []byte(k)
	before, err := h.c.Store.Get(ctx, key)
	if err != nil {
		return h.storeError(err, "get")
	}
	// Its open-creation token, read before the key goes: the revoke below
	// names it by its hash, so that a creation of the key anew between
	// the two keeps its own token.
	tok, hasToken, err := h.c.Store.Token(ctx, exactID(k))
	if err != nil {
		return h.storeError(err, "read the token")
	}
	share, hasShare, err := h.c.Store.Token(ctx, ShareID(k)) // the dashboard's share link: it goes too
	if err != nil {
		return h.storeError(err, "read the share link")
	}
	ok, err := h.c.Store.Delete(ctx, key)
	if err != nil {
		return h.storeError(err, "delete")
	}
	if !ok {
		return &httperr.HTTPError{Code: http.StatusNotFound, Msg: "no such counter"}
	}
	e := h.audit(c, "delete", k).Object("before", countsLog(before))
	h.forget(ctx, [][]byte{key})
	// Its open-creation token goes with it: no one keeps a hold on a key
	// someone may create anew.
	if hasToken {
		if revoked, err := h.c.Store.DeleteTokenIf(ctx, tok.ID, tok.Hash); err != nil {
			h.c.Log.Error().Err(err).Str("key", k).Str("token_id", tok.ID).Msg("revoke the deleted counter's token: it blocks creating the key anew until revoked")
		} else if revoked {
			e = e.Str("revoked", tok.ID)
		}
	}
	if hasShare {
		if revoked, err := h.c.Store.DeleteTokenIf(ctx, share.ID, share.Hash); err != nil {
			h.c.Log.Error().Err(err).Str("key", k).Str("token_id", share.ID).Msg("revoke the deleted counter's share link: it shows the key made anew until revoked")
		} else if revoked {
			e = e.Str("revoked_share", share.ID)
		}
	}
	e.Msg("api change")
	writeJSON(c.w, http.StatusOK, struct {
		Counter
		Deleted bool `json:"deleted"`
	}{counterOf(k, before), true})
	return nil
}

// listCounters serves GET /api/v1/counters?prefix=P&after=K&limit=N.
// A scoped token lists within its prefix: the prefix asked for, if it
// starts with the token's, or the token's, if it starts with the one
// asked for; another prefix is 403. after absent starts at the first
// key; after present, even empty, starts strictly after it.
func (h *Handler) listCounters(c *call) error {
	if err := c.only("prefix", "after", "limit"); err != nil {
		return err
	}
	prefix, _, err := c.keyParam("prefix")
	if err != nil {
		return err
	}
	after, hasAfter, err := c.keyParam("after")
	if err != nil {
		return err
	}
	limit, err := c.intParam("limit", DefaultLimit, MaxLimit)
	if err != nil {
		return err
	}
	if c.who.exact {
		return &httperr.HTTPError{Code: http.StatusForbidden, Msg: "this token acts on the key " + quote(c.who.prefix) + " alone: read it with GET /api/v1/counters/{key}"}
	}
	prefix, ok := c.who.Principal().ListPrefix(prefix)
	if !ok {
		return &httperr.HTTPError{Code: http.StatusForbidden, Msg: "the prefix is outside this token's prefix " + quote(c.who.prefix)}
	}
	es, err := h.list(c, []byte(prefix), []byte(after), hasAfter, limit)
	if err != nil {
		return err
	}
	p := Page{Counters: make([]Counter, len(es))}
	for i, e := range es {
		p.Counters[i] = counterOf(string(e.Key), e.Counts)
	}
	if len(es) == limit {
		// One more key means one more page: a client never asks for an
		// empty one.
		last := es[len(es)-1].Key
		more, err := h.list(c, []byte(prefix), last, true, 1)
		if err != nil {
			return err
		}
		if len(more) > 0 {
			next := string(last)
			p.Next = &next
		}
	}
	writeJSON(c.w, http.StatusOK, p)
	return nil
}

// list returns up to limit entries under prefix after the cursor: with
// hasAfter, strictly after it, even when it is the empty key (a non-nil
// empty after, as store.List reads it).
func (h *Handler) list(c *call, prefix, after []byte, hasAfter bool, limit int) ([]store.Entry, error) {
	if hasAfter && after == nil {
		after = []byte{}
	}
	if !hasAfter {
		after = nil
	}
	es, err := h.c.Store.List(c.r.Context(), prefix, after, limit)
	if err != nil {
		return nil, h.storeError(err, "list")
	}
	return es, nil
}
