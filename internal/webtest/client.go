package webtest

import (
	"net/http"
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
