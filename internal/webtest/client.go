package webtest

import (
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// Deadline bounds every exchange of [Client]: the answer and all of its
// body, a live stream's included. It is well under go test's timeout, so
// that a test waiting on a server that never answers, or reading a
// stream that never ends where an answer should, fails with the request
// and the deadline in its message instead of hanging until the whole
// package is killed.
const Deadline = time.Minute

// Client is the HTTP client of tests that talk to a server on a real
// listener: http.DefaultClient with a Timeout of [Deadline]. It may be
// used concurrently.
var Client = &http.Client{Timeout: Deadline}

// NewAPIRequest returns a request for a JSON API: method to url, with
// body as its JSON content unless body is empty, and with token as its
// bearer token unless token is empty. A url that does not parse fails
// tb.
func NewAPIRequest(tb testing.TB, method, url, token, body string) *http.Request {
	tb.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, url, rd)
	if err != nil {
		tb.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	return req
}
