// Package httperr holds the one error type of the service's HTTP
// answers, in the style of tailscale's tsweb.HTTPError: the status and
// the message for the client travel with the cause, which is logged and
// never sent. The public endpoints (internal/web, which answers it as
// text or as an error badge) and the owner API (internal/api, which
// answers it as JSON) both use it. It has a package of its own, below
// both, because api must not import web (and its metrics, badges and
// streams), and internal/visit, which decides visits, holds no HTTP.
package httperr

import (
	"fmt"
	"net/http"
	"strconv"
	"time"
)

// HTTPError is an error answered to a client. Values are never mutated
// once made; the fixed ones are shared, and so is their Header.
type HTTPError struct {
	Code   int         // the HTTP status
	Msg    string      // the message for the client
	Err    error       // the cause, for the log; nil for a client's mistake
	Header http.Header // sent with the answer (Retry-After, WWW-Authenticate); nil sends none
	// Badge is the short text of an error badge ("invalid key"), for
	// the endpoints that answer with an image.
	Badge string
}

// Error returns the status, the public message and the cause.
func (e *HTTPError) Error() string {
	if e.Err != nil {
		return fmt.Sprintf("%d %s: %v", e.Code, e.Msg, e.Err)
	}
	return fmt.Sprintf("%d %s", e.Code, e.Msg)
}

// Unwrap returns the cause.
func (e *HTTPError) Unwrap() error { return e.Err }

// SetHeader adds e's Header to h, sharing its values: neither is
// mutated afterwards.
func (e *HTTPError) SetHeader(h http.Header) {
	for k, v := range e.Header {
		h[k] = v
	}
}

// RetryAfter returns a Header whose Retry-After is d in whole seconds,
// rounded up, or nil if d is not positive.
func RetryAfter(d time.Duration) http.Header {
	if d <= 0 {
		return nil
	}
	return http.Header{"Retry-After": {strconv.FormatInt(int64((d+time.Second-1)/time.Second), 10)}}
}
