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
//
// It is under the 30 s that scripts/mutation.sh gives each mutant at
// least, so that a mutant these waits catch reads "killed", not "timed
// out", and ten times the slowest of them measured: 2.0 s for an
// exchange (a stream read on purpose), 1.1 s for [Receive], 0.2 s for a
// proxy's start, at most 4.4 s for any whole test that waits on
// cmd/visitors' runs of the binary or internal/app's raw connections,
// with -race at a load of 2 to 8 (docs/testing.md). It was a minute.
const Deadline = 20 * time.Second

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
