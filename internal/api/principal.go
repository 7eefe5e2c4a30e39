package api

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/rs/zerolog"

	"visitors/internal/httperr"
	"visitors/internal/store"
)

// Principal is who a token is, as [Handler.SignIn] and [Handler.Lookup]
// tell it to another front end of the owner's operations (the
// dashboard): the same scope rules the API applies to its own calls.
type Principal struct {
	ID     string // the stored token's id; "" for the root token
	Name   string // "root", or the stored token's name
	Prefix string // the keys it acts on start with Prefix
	Exact  bool   // it acts on the key Prefix alone
	Backup bool   // it may only export
	Root   bool   // the root token: every key, tokens, export and import
}

// Principal returns p as other packages see it.
func (p *principal) Principal() Principal {
	return Principal{ID: p.id, Name: p.name, Prefix: p.prefix, Exact: p.exact, Backup: p.backup, Root: p.root}
}

// May reports whether p may act on key: the rule of every API call on
// a key. A backup token may act on none.
func (p Principal) May(key string) bool {
	if p.Backup {
		return false
	}
	t := store.Token{Prefix: p.Prefix, Exact: p.Exact}
	return t.Covers(key)
}

// ListPrefix returns the prefix p lists under when it asks for prefix,
// and whether it may list at all: prefix itself if it starts with p's,
// p's own if it starts with prefix; another prefix, an exact token
// (which reads its key alone) or a backup token lists nothing. The rule
// of GET /api/v1/counters.
func (p Principal) ListPrefix(prefix string) (string, bool) {
	switch {
	case p.Exact || p.Backup:
		return "", false
	case strings.HasPrefix(prefix, p.Prefix):
		return prefix, true
	case strings.HasPrefix(p.Prefix, prefix):
		return p.Prefix, true
	}
	return "", false
}

// SignIn returns who secret is, sent by r's client, with the limit on
// failed attempts the API's own calls take: 429 for a client past its
// failed attempts, 401 for a wrong or revoked token (which counts as a
// failed attempt). The error is an *httperr.HTTPError.
func (h *Handler) SignIn(r *http.Request, secret string) (Principal, error) {
	id, now, err := h.admit(r)
	if err != nil {
		return Principal{}, err
	}
	if secret == "" {
		return Principal{}, errNoToken
	}
	who, err := h.verify(r, id, now, secret)
	if err != nil {
		return Principal{}, err
	}
	return who.Principal(), nil
}

// Lookup returns who secret is now, and false if it is no token (or one
// revoked since), without counting a failed attempt: for a session that
// signed in with secret and checks it on every request. The error is a
// store's failure, as an *httperr.HTTPError.
func (h *Handler) Lookup(ctx context.Context, secret string) (Principal, bool, error) {
	sum := sha256.Sum256([]byte(secret))
	who, err := h.lookupToken(ctx, secret, &sum)
	if err != nil || who == nil {
		return Principal{}, false, err
	}
	return who.Principal(), true, nil
}

// Audit starts the audit line of a change p made through call (a
// method and a path) outside the API's own routes, as the API writes
// its own: the caller adds what changed and sends it with Msg.
func (h *Handler) Audit(p Principal, call, what, key string) *zerolog.Event {
	return h.auditLine(&principal{id: p.ID, name: p.Name}, call, what, key, key != "")
}

// Log returns the logger the API writes its audit lines and failures
// to.
func (h *Handler) Log() *zerolog.Logger { return &h.c.Log }

// Now returns the API's clock's time.
func (h *Handler) Now() time.Time { return h.c.Now() }

// NewSecret returns a new token secret made from rnd and, if id is
// empty, a new id: TokenPrefix, the id, a dot and 32 random bytes in
// base64url, so that a call finds its token by id.
func NewSecret(rnd io.Reader, id string) (secret, _ string, err error) {
	var b [32 + 8]byte
	if _, err := io.ReadFull(rnd, b[:]); err != nil {
		return "", "", fmt.Errorf("random token: %w", err)
	}
	if id == "" {
		id = hex.EncodeToString(b[32:])
	}
	return TokenPrefix + id + "." + base64.RawURLEncoding.EncodeToString(b[:32]), id, nil
}

// MakeToken returns a new token named name acting on the keys that
// start with prefix (a backup token with backup, which acts on none),
// made at now, and its secret, to be shown once: what POST
// /api/v1/tokens stores, for "visitors token" to store from the command
// line. name and prefix are checked as the API checks them.
func MakeToken(rnd io.Reader, name, prefix string, backup bool, now time.Time) (store.Token, string, error) {
	if err := checkName(name); err != nil {
		return store.Token{}, "", err
	}
	switch {
	case backup && prefix != "":
		return store.Token{}, "", badRequest("a backup token acts on no key; give no prefix")
	case backup:
		prefix = store.BackupPrefix
	case prefix == "":
		return store.Token{}, "", badRequest("the prefix may not be empty: the empty prefix, every key, is the root token's alone")
	case !store.ValidKey([]byte(prefix)):
		return store.Token{}, "", badRequest("the prefix: at most %d bytes of valid UTF-8", store.MaxKeyBytes)
	}
	secret, id, err := NewSecret(rnd, "")
	if err != nil {
		return store.Token{}, "", &httperr.HTTPError{Code: http.StatusServiceUnavailable, Msg: "no token could be made; try again", Err: err}
	}
	t := store.Token{ID: id, Name: name, Prefix: prefix, Hash: sha256.Sum256([]byte(secret)), Created: now.UTC().Truncate(time.Second)}
	return t, secret, nil
}
