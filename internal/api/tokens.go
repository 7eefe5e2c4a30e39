package api

import (
	"net/http"
	"time"

	"github.com/rs/zerolog"

	"visitors/internal/httperr"
	"visitors/internal/store"
)

// TokenInfo is a token as GET /api/v1/tokens lists it: never its
// secret.
type TokenInfo struct {
	ID      string    `json:"id"`
	Name    string    `json:"name"`
	Prefix  string    `json:"prefix"`
	Exact   bool      `json:"exact,omitempty"` // the key prefix alone: made by open creation
	Scope   string    `json:"scope,omitempty"` // ScopeBackup: it may only export
	Created time.Time `json:"created"`
}

// NewToken is the answer to POST /api/v1/tokens: the token's secret,
// shown this once.
type NewToken struct {
	ID      string    `json:"id"`
	Token   string    `json:"token"`
	Name    string    `json:"name"`
	Prefix  string    `json:"prefix"`
	Exact   bool      `json:"exact,omitempty"`
	Scope   string    `json:"scope,omitempty"`
	Created time.Time `json:"created"`
}

// ScopeBackup is the scope of a backup token: it may only export the
// store (GET /api/v1/export), and acts on no key.
const ScopeBackup = "backup"

// createToken serves POST /api/v1/tokens {"name":N,"prefix":P}, root
// only: P must not be empty (the empty prefix, every key, is root's).
// {"name":N,"scope":"backup"} makes a backup token, which may only
// export.
func (h *Handler) createToken(c *call) error {
	if err := c.rootOnly(); err != nil {
		return err
	}
	m, err := c.body("name", "prefix", "scope")
	if err != nil {
		return err
	}
	var name, prefix, scope string
	if err := field(m["name"], "name", "a string", &name); err != nil {
		return badRequest("field \"name\": want a string of 1 to %d bytes", MaxNameBytes)
	}
	if err := checkName(name); err != nil {
		return err
	}
	backup := false
	if raw, ok := m["scope"]; ok {
		if err := field(raw, "scope", "a string", &scope); err != nil || scope != ScopeBackup {
			return badRequest("field \"scope\": want \"backup\", or no scope")
		}
		if _, ok := m["prefix"]; ok {
			return badRequest("a backup token acts on no key; send no \"prefix\"")
		}
		backup = true
	} else if err := field(m["prefix"], "prefix", "a string", &prefix); err != nil {
		return badRequest("field \"prefix\": want a non-empty string: the keys the token may act on start with it")
	}
	if prefix == "" && !backup {
		return badRequest("field \"prefix\": want a non-empty string; the empty prefix, every key, is the root token's alone")
	}
	if !backup && !store.ValidKey([]byte(prefix)) {
		return badRequest("field \"prefix\": at most %d bytes of valid UTF-8", store.MaxKeyBytes)
	}
	ctx := c.r.Context()
	tokens, err := h.c.Store.Tokens(ctx)
	if err != nil {
		return h.storeError(err, "read the tokens")
	}
	made := 0 // by root: open creation's tokens are bounded by the keys
	for i := range tokens {
		if !tokens[i].Exact {
			made++
		}
	}
	if made >= MaxTokens {
		return &httperr.HTTPError{Code: http.StatusConflict, Msg: "the store holds the most tokens it may; revoke one first"}
	}
	t, secret, err := MakeToken(h.c.Rand, name, prefix, backup, h.c.Now())
	if err != nil {
		return err
	}
	if err := h.c.Store.PutToken(ctx, t); err != nil {
		return h.storeError(err, "store the token")
	}
	h.audit(c, "create token", "").Dict("after", tokenLog(t)).Msg("api change")
	nt := NewToken{ID: t.ID, Token: secret, Name: name, Prefix: t.Prefix, Created: t.Created}
	if t.Backup() {
		nt.Prefix, nt.Scope = "", ScopeBackup
	}
	writeJSON(c.w, http.StatusCreated, nt)
	return nil
}

// listTokens serves GET /api/v1/tokens, root only.
func (h *Handler) listTokens(c *call) error {
	if err := c.rootOnly(); err != nil {
		return err
	}
	tokens, err := h.c.Store.Tokens(c.r.Context())
	if err != nil {
		return h.storeError(err, "read the tokens")
	}
	out := struct {
		Tokens []TokenInfo `json:"tokens"`
	}{make([]TokenInfo, len(tokens))}
	for i, t := range tokens {
		out.Tokens[i] = TokenInfo{ID: t.ID, Name: t.Name, Prefix: t.Prefix, Exact: t.Exact, Created: t.Created}
		if t.Backup() {
			out.Tokens[i].Prefix, out.Tokens[i].Scope = "", ScopeBackup
		}
	}
	writeJSON(c.w, http.StatusOK, out)
	return nil
}

// deleteToken serves DELETE /api/v1/tokens/{id}, root only: the token
// is refused from the next call on, by every instance.
func (h *Handler) deleteToken(c *call) error {
	if err := c.rootOnly(); err != nil {
		return err
	}
	ctx := c.r.Context()
	before, found, err := h.c.Store.Token(ctx, c.param)
	if err != nil {
		return h.storeError(err, "read the token")
	}
	ok, err := h.c.Store.DeleteToken(ctx, c.param)
	if err != nil {
		return h.storeError(err, "revoke the token")
	}
	if !ok {
		return &httperr.HTTPError{Code: http.StatusNotFound, Msg: "no such token"}
	}
	e := h.audit(c, "revoke token", "")
	if found {
		e = e.Dict("before", tokenLog(before))
	}
	e.Msg("api change")
	writeJSON(c.w, http.StatusOK, struct {
		ID      string `json:"id"`
		Revoked bool   `json:"revoked"`
	}{c.param, true})
	return nil
}

// audit starts the log line of a change: who, the call, the key.
func (h *Handler) audit(c *call, what, key string) *zerolog.Event {
	return h.auditLine(c.who, c.r.Method+" "+c.r.URL.Path, what, key, what == "set" || what == "delete" || what == "add" || what == "create")
}

// auditLine starts the log line of a change who made through call: who,
// the call and, with hasKey, the key.
func (h *Handler) auditLine(who *principal, call, what, key string, hasKey bool) *zerolog.Event {
	e := h.auditLog().Info().Str("audit", what).Str("token", who.name)
	if who.id != "" {
		e = e.Str("token_id", who.id)
	}
	e = e.Str("call", call)
	if hasKey {
		e = e.Str("key", key)
	}
	return e
}

// auditLog returns the logger of the audit lines: Config.Audit, or Log.
func (h *Handler) auditLog() *zerolog.Logger {
	if h.c.Audit != nil {
		return h.c.Audit
	}
	return &h.c.Log
}

// countsLog is a key's counts in the audit log.
type countsLog store.Counts

// MarshalZerologObject implements zerolog.LogObjectMarshaler.
func (c countsLog) MarshalZerologObject(e *zerolog.Event) {
	e.Uint64("total", c.Total).Uint64("today", c.Today).Bool("locked", c.Locked)
}

// tokenLog is a token in the audit log: never its hash.
func tokenLog(t store.Token) *zerolog.Event {
	e := zerolog.Dict().Str("id", t.ID).Str("name", t.Name)
	if t.Backup() {
		return e.Str("scope", ScopeBackup)
	}
	e = e.Str("prefix", t.Prefix)
	if t.Exact {
		e = e.Bool("exact", true)
	}
	return e
}
