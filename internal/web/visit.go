package web

import (
	"errors"
	"net/http"
	"unicode/utf8"

	"visitors/internal/badge"
	"visitors/internal/client"
	"visitors/internal/httperr"
	"visitors/internal/metrics"
	"visitors/internal/store"
	"visitors/internal/visit"
)

// badRequest is a 400 with msg.
func badRequest(msg, short string) *httperr.HTTPError {
	return &httperr.HTTPError{Code: http.StatusBadRequest, Msg: msg, Badge: short}
}

// The fixed client errors.
var (
	errNotFound    = &httperr.HTTPError{Code: http.StatusNotFound, Msg: msgNotFound, Badge: "not found"}
	errMethod      = &httperr.HTTPError{Code: http.StatusMethodNotAllowed, Msg: msgMethod, Badge: "method not allowed"}
	errColor       = badRequest(msgColor, "invalid color")
	errName        = badRequest(msgName, "invalid name")
	errNameRoute   = badRequest(msgNameRoute, "invalid name")
	errNameEscape  = badRequest(msgNameEscape, "invalid name")
	errFormat      = badRequest(msgFormat, "invalid format")
	errKey         = badRequest(store.MsgPublicKey, "invalid key")
	errKeyRoute    = badRequest(store.MsgPublicKey, "key ends in a route name")
	errTooManyKeys = &httperr.HTTPError{Code: http.StatusServiceUnavailable, Msg: msgTooManyKeys, Badge: "full", Err: store.ErrTooManyKeys}
)

// Rules are the fairness rules of the keyed counters: internal/visit
// holds and applies them.
type Rules = visit.Rules

// countReq is one request for a counter: what the counting path asks
// (Visit: Client and UserAgent are filled in from r) and the request.
type countReq struct {
	visit.Visit
	r *http.Request // the identity, User-Agent and context
}

// record hands v to the one place where a visit is decided and counted,
// internal/visit ([visit.Recorder.Record]), with the client it names,
// reports to the metrics every visit not counted, with why, and turns an
// error into the client's answer.
func (s *Server) record(v *countReq) (visit.Outcome, *httperr.HTTPError) {
	if v.Count && !v.Global {
		v.Client = client.Address(v.r.RemoteAddr, v.r.Header, s.visits.Rules.Trusted)
		v.UserAgent = headerValue(v.r.Header, "User-Agent")
	}
	o, err := s.visits.Record(v.r.Context(), &v.Visit)
	if o.NotCounted != visit.None {
		s.notCounted(o.NotCounted)
	}
	if err != nil {
		return o, s.visitError(err)
	}
	return o, nil
}

// headerValue is h.Get(key) for a key already in canonical form, as
// net/http stores a request's header names: one map lookup, without
// Get's canonicalization of key on every call.
func headerValue(h http.Header, key string) string {
	if v := h[key]; len(v) > 0 {
		return v[0]
	}
	return ""
}

// counted returns metrics.Visit if o counted a visit, for a handler's
// status.
func counted(o *visit.Outcome) int {
	if o.Counted {
		return metrics.Visit
	}
	return 0
}

// visitError returns the client's error for what the counting path
// refused: a client past its new keys, /hi run out, or the store.
func (s *Server) visitError(err error) *httperr.HTTPError {
	if nk, ok := err.(*visit.NewKeyError); ok {
		return &httperr.HTTPError{Code: http.StatusTooManyRequests, Msg: nk.Error(), Badge: "rate limited", Header: httperr.RetryAfter(nk.RetryAfter)}
	}
	if errors.Is(err, store.ErrHiExhausted) {
		return &httperr.HTTPError{Code: http.StatusServiceUnavailable, Msg: msgHiExhausted, Badge: "exhausted", Err: err}
	}
	return s.storeError(err)
}

// storeError returns the client's error for a store's failure; the cause
// goes to the log.
func (s *Server) storeError(err error) *httperr.HTTPError {
	if errors.Is(err, store.ErrTooManyKeys) {
		return errTooManyKeys
	}
	s.log.Error().Err(err).Msg("count a visit")
	if errors.Is(err, store.ErrOutcomeUnknown) {
		return &httperr.HTTPError{Code: http.StatusServiceUnavailable, Msg: msgStoreUnknown, Badge: "unavailable", Err: err}
	}
	return &httperr.HTTPError{Code: http.StatusServiceUnavailable, Msg: msgStore, Badge: "unavailable", Err: err}
}

// notCounted records a visit not counted, for reason.
func (s *Server) notCounted(reason visit.Reason) {
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
func (s *Server) fail(w http.ResponseWriter, r *http.Request, svg bool, e *httperr.HTTPError) int {
	h := w.Header()
	e.SetHeader(h)
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
	h["Visitors-Error"] = []string{e.Msg} // the whole message, for curl -i
	w.WriteHeader(e.Code)
	w.Write(badge.AppendSVG(nil, &b))
	return e.Code
}

// errorColor is the value color of an error badge: shields.io's red.
var errorColor = []byte("#e05d44")
