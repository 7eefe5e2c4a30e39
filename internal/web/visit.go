package web

import (
	"errors"
	"fmt"
	"net/http"
	"net/netip"
	"strconv"
	"time"
	"unicode/utf8"

	"visitors/internal/badge"
	"visitors/internal/bots"
	"visitors/internal/camo"
	"visitors/internal/client"
	"visitors/internal/metrics"
	"visitors/internal/store"
	"visitors/internal/unique"
)

// HTTPError is an error answered to a client, in the style of
// tailscale's tsweb.HTTPError: the status and the public message travel
// with the cause, which is logged and never sent. Values are never
// mutated once made; the fixed ones are shared.
type HTTPError struct {
	Code       int           // the HTTP status
	Msg        string        // the message for the client
	Badge      string        // the short text of an error badge: "invalid key"
	Err        error         // the cause, for the log; nil for a client's mistake
	RetryAfter time.Duration // if positive, sent as Retry-After
}

// Error returns the public message and the cause.
func (e *HTTPError) Error() string {
	if e.Err != nil {
		return fmt.Sprintf("%d %s: %v", e.Code, e.Msg, e.Err)
	}
	return fmt.Sprintf("%d %s", e.Code, e.Msg)
}

// Unwrap returns the cause.
func (e *HTTPError) Unwrap() error { return e.Err }

// badRequest is a 400 with msg.
func badRequest(msg, short string) *HTTPError {
	return &HTTPError{Code: http.StatusBadRequest, Msg: msg, Badge: short}
}

// The fixed client errors.
var (
	errNotFound    = &HTTPError{Code: http.StatusNotFound, Msg: msgNotFound, Badge: "not found"}
	errMethod      = &HTTPError{Code: http.StatusMethodNotAllowed, Msg: msgMethod, Badge: "method not allowed"}
	errColor       = badRequest(msgColor, "invalid color")
	errName        = badRequest(msgName, "invalid name")
	errNameRoute   = badRequest(msgNameRoute, "invalid name")
	errNameEscape  = badRequest(msgNameEscape, "invalid name")
	errFormat      = badRequest(msgFormat, "invalid format")
	errKey         = badRequest(store.MsgPublicKey, "invalid key")
	errKeyRoute    = badRequest(store.MsgPublicKey, "key ends in a route name")
	errTooManyKeys = &HTTPError{Code: http.StatusServiceUnavailable, Msg: msgTooManyKeys, Badge: "full", Err: store.ErrTooManyKeys}
)

// msgNewKeys is the message of a 429 for a client that made too many new
// keys.
func msgNewKeys(r client.Rate) string {
	return fmt.Sprintf("Too many new counters from your address: at most %s (-client-new-keys); counters already made still count", r.String())
}

// Rules are the fairness rules of the keyed counters (/counter/ and
// /hello). The zero Rules count every visit, but for unique visitors,
// which a Server always counts.
type Rules struct {
	// Trusted are the reverse proxies whose forwarding headers name the
	// client. nil trusts nobody.
	Trusted *client.Proxies
	// Limiter limits counted visits and new keys per client; nil limits
	// nothing.
	Limiter *client.Limiter
	// NewKeys is the limiter's new-key rate, quoted by the 429's message.
	NewKeys client.Rate
	// Bots tells crawlers; nil knows none.
	Bots *bots.Detector
	// Uniques counts unique visitors; nil means one in memory only.
	Uniques *unique.Counter
	// Repeats, if set, keeps a visitor's repeat views of a key within its
	// window out of the total.
	Repeats *unique.Repeats
	// Camo are the address ranges of GitHub's image proxy: only a client
	// in them with camo's User-Agent is treated as camo. nil holds none.
	Camo *client.Ranges
	// CamoKeys bounds camo's counted visits per key (VisitKey); nil
	// bounds nothing.
	CamoKeys *client.Limiter
}

// countReq is one request for a counter, as the counting path sees it.
type countReq struct {
	key    []byte        // the key; unused with global
	global bool          // the global counter of /hi
	count  bool          // false: the counts are read, not changed
	unique bool          // today's unique visitors are wanted
	listed bool          // the key may be among the most visited (/counter/ keys; /hello names never are)
	r      *http.Request // the identity, User-Agent and context
}

// outcome is what the counting path decided and counted.
type outcome struct {
	counts  store.Counts // the key's counts
	number  uint64       // the global counter's number
	unique  uint64       // the key's unique visitors today, if asked
	visit   int          // metrics.Visit if a visit was counted
	refused bool         // a rule refused to count it: Visitors-Counted: false
}

// record is the one place where a visit is decided and counted: /hi,
// /hello and /counter/ all come here. It applies the rules in order —
// bots, the per-client rate (GitHub's image proxy exempt, and bounded
// per key instead), repeat views, the per-client limit on new keys —
// then counts in the store, adds the visitor to the key's unique
// visitors (GitHub's image proxy excepted),
// and reports to the metrics every visit not counted, with why. A visit
// a rule refuses is still answered, with the counts as they are. A key
// its owner locked (the store answers Counts.Locked), or one at its
// bound (Counts.Saturated), counts nothing: the visit is answered as
// refused, adds no unique visitor and is not shown to the top list. The
// global counter of /hi counts every visit until it has handed out
// store.MaxHits; then /hi answers 503 and /healthz says why.
func (s *Server) record(v *countReq) (outcome, *HTTPError) {
	var o outcome
	ctx := v.r.Context()
	if v.global {
		n, err := s.store.Hit(ctx)
		if errors.Is(err, store.ErrHiExhausted) {
			if !s.hiExhausted.Swap(true) {
				s.log.Error().Err(err).Msg("/hi answers 503 from now on")
			}
			s.notCounted(metrics.StoreError)
			return o, &HTTPError{Code: http.StatusServiceUnavailable, Msg: msgHiExhausted, Badge: "exhausted", Err: err}
		}
		if err != nil {
			return o, s.storeFailed(err)
		}
		if s.hiExhausted.Load() { // an import of a lower /hi cannot do it; a replace of the store can
			s.hiExhausted.Store(false)
		}
		o.number, o.visit = n, metrics.Visit
		return o, nil
	}
	now := s.now()
	if !v.count {
		return s.read(v, now, o)
	}
	ua := v.r.Header.Get("User-Agent")
	// camo's User-Agent is on the bot list, and anyone may send it: from
	// camo's ranges it is camo, from anywhere else an ordinary client.
	camoUA := camo.IsUserAgent(ua)
	if !camoUA && s.rules.Bots != nil && s.rules.Bots.Is(ua) {
		return s.refuse(v, now, metrics.Bot)
	}
	addr := client.Address(v.r.RemoteAddr, v.r.Header, s.rules.Trusted)
	id := client.Group(addr)
	fromCamo := camoUA && s.rules.Camo.Contains(addr)
	if fromCamo && !s.rules.CamoKeys.VisitKey(v.key, now) {
		return s.refuse(v, now, metrics.RateLimited)
	}
	allowed, mayCreate := s.rules.Limiter.Visit(id, now, fromCamo)
	if !allowed {
		return s.refuse(v, now, metrics.RateLimited)
	}
	var visitor uint64
	if !fromCamo {
		visitor = s.uniques.Hash(id, ua, now)
		if s.rules.Repeats != nil && s.rules.Repeats.Seen(s.uniques.Pair(visitor, v.key, now), now) {
			return s.refuse(v, now, metrics.Repeat)
		}
	}
	c, err := s.incr(v, id, now, mayCreate)
	if err != nil {
		return o, err
	}
	if c.Locked || c.Saturated { // frozen by its owner, or at a bound: answered with its counts, not counted
		if c.Locked {
			s.notCounted(metrics.Locked)
		} else {
			s.notCounted(metrics.Saturated)
		}
		o.counts, o.refused = c, true
		if v.unique {
			o.unique = s.uniques.Today(v.key, now)
		}
		return o, nil
	}
	o.counts, o.visit = c, metrics.Visit
	if v.listed {
		s.observe(v.key, c)
	}
	if !fromCamo {
		s.uniques.Add(v.key, visitor, now)
	}
	if v.unique {
		o.unique = s.uniques.Today(v.key, now)
	}
	return o, nil
}

// incr counts a visit to v.key, unless the key is new and client id may
// make no new key now. mayCreate says whether it may, as the limiter saw
// it: then the key is counted at once, and only if it turns out new is
// the token taken (two concurrent requests of one client may both take
// the last one).
func (s *Server) incr(v *countReq, id netip.Addr, now time.Time, mayCreate bool) (store.Counts, *HTTPError) {
	ctx := v.r.Context()
	if !mayCreate {
		c, err := s.store.Get(ctx, v.key)
		if err != nil {
			return c, s.storeFailed(err)
		}
		if c.Total == 0 {
			s.notCounted(metrics.RateLimited)
			return c, &HTTPError{Code: http.StatusTooManyRequests, Msg: msgNewKeys(s.rules.NewKeys), Badge: "rate limited",
				RetryAfter: s.rules.Limiter.CreateRefused(id, now)}
		}
	}
	c, err := s.store.Incr(ctx, v.key)
	if err != nil {
		return c, s.storeFailed(err)
	}
	if mayCreate && c.Total == 1 && !c.Locked {
		s.rules.Limiter.Created(id, now)
	}
	return c, nil
}

// read returns v's counts without counting a visit.
func (s *Server) read(v *countReq, now time.Time, o outcome) (outcome, *HTTPError) {
	c, err := s.store.Get(v.r.Context(), v.key)
	if err != nil {
		return o, s.storeError(err)
	}
	o.counts = c
	if v.unique {
		o.unique = s.uniques.Today(v.key, now)
	}
	return o, nil
}

// refuse answers a visit a rule does not count, for reason.
func (s *Server) refuse(v *countReq, now time.Time, reason metrics.Reason) (outcome, *HTTPError) {
	s.notCounted(reason)
	o, err := s.read(v, now, outcome{refused: true})
	return o, err
}

// storeFailed reports a count the store refused, to the metrics, and
// returns the client's error.
func (s *Server) storeFailed(err error) *HTTPError {
	if errors.Is(err, store.ErrTooManyKeys) {
		s.notCounted(metrics.Full)
	} else {
		s.notCounted(metrics.StoreError)
	}
	return s.storeError(err)
}

// storeError returns the client's error for a store's failure; the cause
// goes to the log.
func (s *Server) storeError(err error) *HTTPError {
	if errors.Is(err, store.ErrTooManyKeys) {
		return errTooManyKeys
	}
	s.log.Error().Err(err).Msg("count a visit")
	if errors.Is(err, store.ErrOutcomeUnknown) {
		return &HTTPError{Code: http.StatusServiceUnavailable, Msg: msgStoreUnknown, Badge: "unavailable", Err: err}
	}
	return &HTTPError{Code: http.StatusServiceUnavailable, Msg: msgStore, Badge: "unavailable", Err: err}
}

// notCounted records a visit not counted, for reason.
func (s *Server) notCounted(reason metrics.Reason) {
	if s.req != nil {
		s.req.NotCounted(reason)
	}
}

// Header values of the counting path, shared and never mutated.
var notCountedHeader = []string{"false"}

// markRefused tells the client its visit was not counted.
func markRefused(h http.Header) { h["Visitors-Counted"] = notCountedHeader }

// fail answers e and returns its status. On a .svg endpoint (svg true)
// the answer is a badge that says what went wrong, in the requested
// style, so that a README shows a readable image, never a broken one;
// elsewhere it is e's message as plain text. A badge carries the whole
// message in the Visitors-Error header.
func (s *Server) fail(w http.ResponseWriter, r *http.Request, svg bool, e *HTTPError) int {
	h := w.Header()
	if e.RetryAfter > 0 {
		h["Retry-After"] = []string{strconv.FormatInt(int64((e.RetryAfter+time.Second-1)/time.Second), 10)}
	}
	if !svg {
		return writeError(w, e.Code, e.Msg)
	}
	b := badge.Badge{Label: []byte(defaultText), Value: []byte(e.Badge), Color: errorColor, LabelColor: defaultLabel}
	// The label asked for, if it is a valid one: a README's badge keeps
	// its label when its value turns into an error.
	if raw, found := queryValue(r.URL.RawQuery, "label"); found && len(raw) <= 4*3*MaxLabelRunes {
		if l, err := appendUnescape(nil, raw); err == nil && utf8.Valid(l) && utf8.RuneCount(l) <= MaxLabelRunes {
			b.Label = l
		}
	}
	style, _ := queryValue(r.URL.RawQuery, "style")
	if st, err := badge.ParseStyle([]byte(style)); err == nil {
		b.Style = st
	}
	setImageHeaders(h)
	h["X-Content-Type-Options"] = nosniff
	h["Visitors-Error"] = []string{e.Msg} // the whole message, for curl -i
	w.WriteHeader(e.Code)
	w.Write(badge.AppendSVG(nil, &b))
	return e.Code
}

// errorColor is the value color of an error badge: shields.io's red.
var errorColor = []byte("#e05d44")
