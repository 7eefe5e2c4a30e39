// Package store defines the counting interface that every backend of
// visitors implements: the in-memory store (memstore), the embedded
// durable store (boltstore) and Redis or Redis Cluster (redisstore). It
// also holds the rules every layer shares: which keys a store takes
// ([ValidKey]) and which the public endpoints take ([ValidPublicKey]),
// and the limits ([MaxKeyBytes], [MaxDays]). Callers depend on the role
// they use ([Counter], [Editor], [TokenStore], [Reader]), never on a
// backend.
//
// The contract is proven by one conformance suite, storetest.Run, that
// every backend runs: what it promises is written on [Store] and its
// methods.
package store

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"
	"unicode/utf8"
)

// ErrTooManyKeys is returned by [Counter.Visit] when the store already
// holds its limit of distinct keys and key is new. Existing keys still
// count.
var ErrTooManyKeys = errors.New("too many distinct keys")

// ErrNewKey is returned by [Counter.Visit] for a key the store does not
// hold when the caller may not make one: nothing was counted or made.
var ErrNewKey = errors.New("the key is new and may not be made now")

// ErrOutcomeUnknown is wrapped by the error of a call after which the
// store cannot tell whether the visit counted (a shared store that did
// not answer): the one error that does not mean "not counted".
var ErrOutcomeUnknown = errors.New("the store did not answer: the visit may have counted")

// ErrKeyTooLong is returned for a key of more than [MaxKeyBytes] bytes.
var ErrKeyTooLong = fmt.Errorf("key longer than %d bytes", MaxKeyBytes)

// ErrHiExhausted is returned by [Counter.Hit] once the /hi counter has
// handed out [MaxHits]: only an import near the bound brings it there.
var ErrHiExhausted = fmt.Errorf("the /hi counter has handed out every number it may, up to %d", uint64(MaxHits))

// ErrRange is returned by [Editor.Add] for an n that would take a
// key's total past [MaxTotal] or today's count past [MaxDay].
var ErrRange = fmt.Errorf("the count would pass its limit: a total of at most %d, %d a day", uint64(MaxTotal), uint64(MaxDay))

// Limits every store supports and every caller keeps to.
const (
	// MaxKeyBytes is the longest key a store takes. Every key of at most
	// this many bytes is storable, the empty key included: a backend
	// encodes keys so that none can be refused.
	MaxKeyBytes = 128
	// MaxDays is how many UTC days, today included, a caller may read
	// with [Reader.Days]; memory need not hold more.
	MaxDays = 365
	// MaxTotal is the largest total Set and Add make: room is left for
	// 2^62 more visits, as an import leaves.
	MaxTotal = 1 << 62
	// MaxDay is the largest count of one day Add makes, as an import
	// takes.
	MaxDay = 1 << 39
	// MaxHits is the largest number /hi hands out: past it every /hi
	// is refused with [ErrHiExhausted], and the counter stays where it
	// is, so it never wraps.
	MaxHits = 1 << 62
	// MaxImportHits is the largest /hi counter an import takes: MaxHits
	// and room for the blocks of numbers instances reserve ahead on
	// Redis, so that whatever /hi leaves behind imports again.
	MaxImportHits = MaxHits + 1<<32
)

// ValidKey reports whether key is one a store takes: at most
// [MaxKeyBytes] bytes of valid UTF-8, the empty key included (the rule of
// storage: /hello's names, the owner API and imports). Imports refuse
// every other key. The public counters take fewer: [ValidPublicKey].
func ValidKey(key []byte) bool {
	return len(key) <= MaxKeyBytes && utf8.Valid(key)
}

// MsgPublicKey says which keys [ValidPublicKey] takes.
var MsgPublicKey = fmt.Sprintf("Key must be 1-%d bytes of A-Z a-z 0-9 . _ ~ - and /, with no empty, . or .. segment, and its last segment not daily, graph or stream (/counter/ns/graph.svg is the graph of ns)", MaxKeyBytes)

// ValidPublicKey reports whether key is one /counter/{key} takes, and so
// one the owner API may make (open creation, a set or an add of a key
// not there yet): 1-[MaxKeyBytes] bytes of
// [A-Za-z0-9._~-] and '/', with no empty, "." or ".." segment, and not a
// key whose last segment is the name of a route ([KeyIsRoute]). Every
// such key is also a [ValidKey].
func ValidPublicKey(key string) bool {
	if len(key) == 0 || len(key) > MaxKeyBytes {
		return false
	}
	for i := 0; i < len(key); i++ {
		c := key[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' ||
			c == '.' || c == '~' || c == '-' || c == '/') {
			return false
		}
	}
	for seg := range strings.SplitSeq(key, "/") {
		if seg == "" || seg == "." || seg == ".." {
			return false
		}
	}
	return !KeyIsRoute(key)
}

// RouteNames are the names of the routes below a key (internal/web):
// /counter/{key}/daily.json, /counter/{key}/graph.svg and
// /counter/{key}/stream. A key whose last segment is one of them would be
// two things (/counter/ns/graph.svg is the graph of ns, not the badge of
// ns/graph), so [KeyIsRoute] refuses it at every entry point.
var RouteNames = [...]string{"daily", "graph", "stream"}

// MsgRoute says which keys [KeyIsRoute] refuses.
const MsgRoute = "a key's last segment may not be daily, graph or stream, the names of the routes below a key (/counter/ns/graph.svg is the graph of ns)"

// KeyIsRoute reports whether key's last segment, after its last '/'
// (the whole key if it has none), is one of [RouteNames]: a key no entry
// point takes (the badge, /hello, the owner API, open creation, import).
func KeyIsRoute[K string | []byte](key K) bool {
	i := len(key)
	for i > 0 && key[i-1] != '/' {
		i--
	}
	last := key[i:]
	for _, r := range RouteNames {
		if string(last) == r {
			return true
		}
	}
	return false
}

// CheckAdd returns ErrRange if adding n to counts c would take the
// total past [MaxTotal] or today's count past [MaxDay]: the check every
// store's Add makes first. A negative n is always in range.
func CheckAdd(c Counts, n int64) error {
	if n <= 0 {
		return nil
	}
	if u := uint64(n); u > MaxDay || c.Total > MaxTotal-u || c.Today > MaxDay-u {
		return ErrRange
	}
	return nil
}

// ClampAdd returns v+n, or 0 if that is negative.
func ClampAdd(v uint64, n int64) uint64 {
	if n >= 0 {
		return v + uint64(n)
	}
	if d := uint64(-(n + 1)) + 1; d < v { // -n without overflow at MinInt64
		return v - d
	}
	return 0
}

// Counts are one key's counters.
type Counts struct {
	Total  uint64 // visits ever
	Today  uint64 // visits this UTC day
	Locked bool   // the key is frozen: visits are answered but not counted
	// Saturated is set by Visit alone: the visit counted nothing, the
	// total being at MaxTotal or today's count at MaxDay (counters stop
	// at the bounds an import takes, so every export imports).
	Saturated bool
}

// Entry is one key and its counts, as [Editor.List] returns them.
type Entry struct {
	Key []byte
	Counts
}

// MaxList is the most entries one [Editor.List] call returns.
const MaxList = 1000

// Token is an owner API token as a store keeps it: its public id, name
// and scope, and the SHA-256 of its secret. The secret itself is never
// stored: it is shown once, when the token is made.
type Token struct {
	ID      string    // public and unique: what revokes the token
	Name    string    // the owner's label
	Prefix  string    // the token acts only on keys that start with it
	Exact   bool      // the token acts only on the key Prefix itself
	Hash    [32]byte  // SHA-256 of the secret
	Created time.Time // when it was made, UTC
}

// BackupPrefix is the prefix of a backup token: one that may only
// export the store. It is longer than [MaxKeyBytes], so that no key
// starts with it and the token acts on no key, in this visitors and in
// any older one that reads it from a store it shares.
const BackupPrefix = "(backup token: it may export the whole store and act on no key; no key is this long, for a key has at most 128 bytes, and this prefix is longer than that)."

// Backup reports whether t is a backup token: one that may only export.
func (t *Token) Backup() bool { return t.Prefix == BackupPrefix }

// Covers reports whether t may act on key: key is t's Prefix if t is
// exact, else key starts with it.
func (t *Token) Covers(key string) bool {
	if t.Exact {
		return key == t.Prefix
	}
	return len(key) >= len(t.Prefix) && key[:len(t.Prefix)] == t.Prefix
}

// Daily is a key's visits per UTC day, oldest first. Days without visits
// are zero.
type Daily struct {
	Last   time.Time // the UTC midnight that starts the day of the last count
	Counts []uint64
}

// Reader reads a key's counts without counting: what a badge's graph,
// a live stream and the top list need.
type Reader interface {
	// Get returns key's counts without recording a visit; they are zero
	// for a key never seen.
	Get(ctx context.Context, key []byte) (Counts, error)

	// Days returns key's counts for the last n UTC days, today included;
	// 1 <= n <= MaxDays.
	Days(ctx context.Context, key []byte, n int) (Daily, error)
}

// Counter counts visits: the role of the public endpoints
// (internal/visit, internal/web).
type Counter interface {
	Reader

	// Hit records one visit to the global counter and returns its number:
	// 1 for the first visit, one more for each visit after it.
	Hit(ctx context.Context) (uint64, error)

	// Visit records one visit to key and returns key's new counts. It
	// makes key only if create is true: for a key the store does not
	// hold and create false it returns ErrNewKey, counts nothing and
	// makes nothing. made reports whether this call made key: of
	// callers racing on one new key, at most one is told it did, so a
	// caller that spends a budget on each key it makes never spends more
	// than it made. The check and the count are one step, and one round
	// trip on a shared store. It returns ErrTooManyKeys if key is new,
	// create is true and the store is full, and ErrKeyTooLong for a key
	// of more than MaxKeyBytes bytes.
	Visit(ctx context.Context, key []byte, create bool) (c Counts, made bool, err error)
}

// Editor is what a counter's owner does to it (internal/api): read,
// list, set, add, lock, delete and create keys.
type Editor interface {
	Reader

	// Keys reports how many distinct keys the store holds.
	Keys() int

	// Set makes key start over at total: its total becomes total and its
	// daily counts are cleared (today's becomes 0). It creates the key if
	// needed, within the store's limit of distinct keys (ErrTooManyKeys),
	// keeps its lock, and returns its new counts. It is as durable as a
	// visit: in sync mode it is durable before Set returns, in batch mode
	// within one flush interval, and no visit written before it (a flush
	// in flight, a log replayed after a crash) ever brings the old counts
	// back.
	Set(ctx context.Context, key []byte, total uint64) (Counts, error)

	// Add adds n, which may be negative, to key's total and to today's
	// count, each clamped at 0, as n visits would (or an owner taking
	// visits back); it works on a locked key and keeps its lock. A
	// negative n also clears key's earlier days, as Set does, so that the
	// days never add up to more than the total. A positive n that would
	// take the total past MaxTotal, or today's count past MaxDay, returns
	// ErrRange and changes nothing. Add creates the key if needed, within
	// the limit of distinct keys (ErrTooManyKeys), and returns its new
	// counts. It never drops a visit counted before or after it, by this
	// instance or another, and it is as durable as Set: no flush in
	// flight or log replayed after a crash brings the counts from before
	// it back.
	Add(ctx context.Context, key []byte, n int64) (Counts, error)

	// Lock freezes (locked true) or thaws key. Visit to a locked key counts
	// nothing and returns its counts with Locked set. Lock creates the key
	// if needed, within the limit, and is as durable as Set.
	Lock(ctx context.Context, key []byte, locked bool) (Counts, error)

	// Delete removes key, its days and its lock, and frees its place under
	// the limit of distinct keys. It reports whether the key was there.
	// It is as durable as Set: no visit or flush from before it brings the
	// key back. A visit after it makes the key anew.
	Delete(ctx context.Context, key []byte) (bool, error)

	// List returns, in byte order, at most limit (1 <= limit <= MaxList)
	// keys that start with prefix and sort strictly after after, with
	// their counts. A nil after lists from the first key, the empty key
	// included; a non-nil empty after lists from the one after the empty
	// key, so the last key of a page, whatever it is, is the cursor of
	// the next. Fewer than limit means there are no more.
	List(ctx context.Context, prefix, after []byte, limit int) ([]Entry, error)

	// Create makes key, at 0, with the token t, if key is not there,
	// as one step: no visit, owner operation or other Create, on this
	// instance or another, comes between the check and the creation,
	// and a visit counted before it, written or not yet, makes key
	// there. It reports whether it made key; if not, key was there,
	// whatever its counts or lock, and nothing changed. A token with t's
	// ID is replaced: without its key, it is an orphan. Create makes the
	// key within the limit of distinct keys (ErrTooManyKeys), and is as
	// durable as Set. On Redis Cluster the token is written just after
	// the key, in a slot of its own.
	Create(ctx context.Context, key []byte, t Token) (bool, error)
}

// TokenStore keeps the owner API's tokens (internal/api).
type TokenStore interface {
	// PutToken stores t, durably before it returns, replacing a token
	// with the same ID.
	PutToken(ctx context.Context, t Token) error

	// AddToken stores t, durably before it returns, unless a token with
	// the same ID is there, and reports whether it stored it: of callers
	// racing to add one ID, on one instance or several, one wins.
	AddToken(ctx context.Context, t Token) (bool, error)

	// Token returns the token with id, and whether there is one, at a
	// cost that does not grow with the number of tokens stored.
	Token(ctx context.Context, id string) (Token, bool, error)

	// DeleteToken removes the token with id, at once for every caller of
	// Tokens, and reports whether it was there.
	DeleteToken(ctx context.Context, id string) (bool, error)

	// DeleteTokenIf removes the token with id if its Hash is hash, as
	// DeleteToken does, and reports whether it removed it: a token that
	// has replaced it under the same id stays. Of callers racing to
	// remove one token, on one instance or several, one does.
	DeleteTokenIf(ctx context.Context, id string, hash [32]byte) (bool, error)

	// Tokens returns every stored token, ordered by ID.
	Tokens(ctx context.Context) ([]Token, error)
}

// Store counts visits: one global counter and, per key, a total and a
// count for each UTC day. It is every role a backend plays; a caller
// takes the narrowest one it needs ([Reader], [Counter], [Editor],
// [TokenStore]).
//
// Implementations must be safe for concurrent use, must never hand out
// the same global number twice, and must not retain the key slices passed
// to them after a call returns (callers reuse those buffers). Every key
// of at most [MaxKeyBytes] bytes must be storable. A call that returns an
// error counted nothing (a global number may be burned).
type Store interface {
	Counter
	Editor
	TokenStore

	// Health returns why the store cannot keep its promises now (say,
	// counts cannot reach the disk), or nil when it can.
	Health() error

	// Close flushes what the store holds and releases its resources.
	// No method may be called after it.
	Close() error
}

// Durability says when a visit is durable, for the stores that keep
// counts somewhere memory does not die with the process.
type Durability int

const (
	// Batch writes what changed every flush interval; requests never wait.
	Batch Durability = iota
	// Sync answers a request only after its visit is durable.
	Sync
)

// String returns the flag value of d.
func (d Durability) String() string {
	if d == Sync {
		return "sync"
	}
	return "batch"
}

// Set parses a -durability value; with String it makes *Durability a
// flag.Value, so the flag is parsed once, at the edge.
func (d *Durability) Set(s string) error {
	switch s {
	case "batch":
		*d = Batch
	case "sync":
		*d = Sync
	default:
		return fmt.Errorf("durability %q: want batch or sync", s)
	}
	return nil
}

// Day numbers UTC days: 0 is 1970-01-01.
type Day uint32

// DayOf returns the UTC day t falls on.
func DayOf(t time.Time) Day { return Day(t.Unix() / 86400) }

// Time returns the UTC midnight that starts d.
func (d Day) Time() time.Time { return time.Unix(int64(d)*86400, 0).UTC() }

// ErrInvalidDump marks a dump that [Backup.Import] refused as a whole:
// the input's fault, not the store's.
var ErrInvalidDump = errors.New("invalid dump")

// Backup is an optional interface of a [Store]: one that implements it
// exports and imports while it serves (the owner API's /api/v1/export
// and /api/v1/import). The format is the one "visitors export" writes
// (internal/store/dump), so a dump moves between stores and between
// the command line and the API.
type Backup interface {
	// Export writes every counter the store holds, totals, daily counts
	// and locks, as one dump to w, streaming.
	Export(ctx context.Context, w io.Writer) error

	// Import reads a dump from r and checks the whole of it first, as
	// strictly as "visitors import" does; if any of it is refused it
	// returns an error wrapping ErrInvalidDump and changes nothing. Then
	// it adds the dump's counts to the store's or, with replace, replaces
	// every count (keys not in the dump are deleted). The /hi counter
	// becomes the larger of the two. What it wrote is as durable as Set.
	// An import that would take the store past its limit of distinct
	// keys returns an error wrapping ErrTooManyKeys and changes nothing.
	Import(ctx context.Context, r io.Reader, replace bool) error
}
