package api

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"net/http"
	"strconv"
	"time"

	"visitors/internal/client"
	"visitors/internal/httperr"
	"visitors/internal/store"
	"visitors/internal/visit"
)

// OpenName is the name of every token open creation makes.
const OpenName = "open-create"

// exactIDPrefix starts the id of an open-creation token.
const exactIDPrefix = "key-"

// exactID returns the id of key's open-creation token: one id per key,
// so that a key has at most one such token, and deleting the key
// revokes it. A creation replaces a token with the id whose key is gone
// (store.Store.Create): an orphan, left by a revoke that failed.
// ShareIDPrefix starts the id of a share link's token (the
// dashboard's): an exact token for one key, whose secret the API never
// takes.
const ShareIDPrefix = "share-"

// ShareID returns the id of key's share link token: one per key. Like
// key's open-creation token, it goes when key is deleted.
func ShareID(key string) string {
	sum := sha256.Sum256([]byte("share\x00" + key))
	return ShareIDPrefix + hex.EncodeToString(sum[:16])
}

func exactID(key string) string {
	sum := sha256.Sum256([]byte(key))
	return exactIDPrefix + hex.EncodeToString(sum[:16])
}

// Created is the answer to open creation: the new counter and its
// token, whose secret is shown this once.
type Created struct {
	Counter
	Token NewToken `json:"token"`
}

var (
	// errExists is the answer for a key that exists, whatever its
	// counts, lock or owner: it tells nothing more.
	errExists   = &httperr.HTTPError{Code: http.StatusConflict, Msg: "the counter exists: only its owner may change it"}
	errNoBody   = badRequest("POST /api/v1/counters/{key} creates the counter at 0 and takes no body; to add, POST /api/v1/counters/{key}/add {\"n\":N} with its token")
	errWithAuth = badRequest("POST /api/v1/counters/{key} creates a counter without a token: send no Authorization header (to add to a counter, POST /api/v1/counters/{key}/add)")
	errOpenKey  = badRequest("%s", store.MsgPublicKey)
)

// createCounter serves POST /api/v1/counters/{key} without a token, with
// Config.OpenCreate: it creates key, one /counter/{key} takes, at 0, and
// answers 201 with a token for that key alone; 409 if the key exists.
// A client creates at most Config.NewKeys counters (429).
func (h *Handler) createCounter(c *call) error {
	if c.r.Header.Get("Authorization") != "" {
		return errWithAuth
	}
	if err := c.only(); err != nil {
		return err
	}
	k := c.param
	if !store.ValidPublicKey(k) {
		return errOpenKey
	}
	if c.r.ContentLength != 0 {
		return errNoBody
	}
	now := h.c.Now()
	id := client.Identify(c.r.RemoteAddr, c.r.Header, h.c.Trusted)
	// The token is taken before the key is made, and given back if none
	// is: concurrent creations never pass the client's budget.
	budget := h.c.NewKeys
	if err := budget.Take(id, now); err != nil {
		return tooManyNew(err)
	}
	made, tid, secret, t, err := h.create(c, k, now)
	if !made {
		budget.Return(id, now)
	}
	if err != nil {
		return err
	}
	// The key was made at 0: the answer says so.
	counts := store.Counts{}
	h.auditLog().Info().Str("audit", "create").Str("token", OpenName).Str("token_id", tid).Str("call", c.r.Method+" "+c.r.URL.Path).
		Str("key", k).Str("client", id.String()).Object("after", countsLog(counts)).Msg("api change")
	writeJSON(c.w, http.StatusCreated, Created{Counter: counterOf(k, counts),
		Token: NewToken{ID: tid, Token: secret, Name: OpenName, Prefix: k, Exact: true, Created: t.Created}})
	return nil
}

// create makes key k at 0 with a new exact token, and reports whether
// it made it: errExists if k was there.
func (h *Handler) create(c *call, k string, now time.Time) (made bool, tid, secret string, t store.Token, err error) {
	secret, tid, err = h.newSecret(exactID(k))
	if err != nil {
		return false, "", "", t, &httperr.HTTPError{Code: http.StatusServiceUnavailable, Msg: "no token could be made; try again", Err: err}
	}
	t = store.Token{ID: tid, Name: OpenName, Prefix: k, Exact: true, Hash: sha256.Sum256([]byte(secret)), Created: now.UTC().Truncate(time.Second)}
	// The check, the token and the key are one step of the store: a
	// first visit racing the creation counts either before it (409) or
	// after it.
	made, err = h.c.Store.Create(c.r.Context(), []byte(k), t)
	if err != nil {
		return false, "", "", t, h.changeError(err, "create")
	}
	if !made {
		return false, "", "", t, errExists
	}
	return true, tid, secret, t, nil
}

// tooManyNew is the 429 of a client past its new counters
// ([visit.NewKeyError]): the message of a badge's new key refused.
func tooManyNew(err error) error {
	nk, ok := err.(*visit.NewKeyError)
	if !ok {
		return err
	}
	return &httperr.HTTPError{Code: http.StatusTooManyRequests, Msg: nk.Error(), Header: httperr.RetryAfter(max(nk.RetryAfter, time.Second))}
}

// addCounter serves POST /api/v1/counters/{key}/add {"n":N}: N, which
// may be negative, is added to the total and today's count, each clamped
// at 0 (a negative N also clears the earlier days), as Abacus' /update
// does. Any token whose scope holds the key may, on a locked key too.
func (h *Handler) addCounter(c *call) error {
	k, err := c.key()
	if err != nil {
		return err
	}
	if err := h.mayMake(c, k); err != nil {
		return err
	}
	m, err := c.body("n")
	if err != nil {
		return err
	}
	raw, ok := m["n"]
	if !ok {
		return badRequest("no field \"n\": send {\"n\":N}, N a whole number, negative to take away")
	}
	var n int64
	if err := field(raw, "n", "a whole number, negative to take away", &n); err != nil {
		return err
	}
	if n > MaxTotal || n < -MaxTotal {
		return badRequest("field \"n\": from %d to %d", -int64(MaxTotal), int64(MaxTotal))
	}
	ctx, key := c.r.Context(), []byte(k)
	before, err := h.c.Store.Get(ctx, key)
	if err != nil {
		return h.storeError(err, "get")
	}
	after, err := h.c.Store.Add(ctx, key, n)
	if errors.Is(err, store.ErrRange) {
		return &httperr.HTTPError{Code: http.StatusConflict, Msg: "the counter would pass its limit: a total of at most " + strconv.FormatUint(MaxTotal, 10) + ", " + strconv.FormatUint(store.MaxDay, 10) + " a day"}
	}
	if err != nil {
		return h.changeError(err, "add")
	}
	h.audit(c, "add", k).Int64("n", n).Object("before", countsLog(before)).Object("after", countsLog(after)).Msg("api change")
	writeJSON(c.w, http.StatusOK, counterOf(k, after))
	return nil
}
