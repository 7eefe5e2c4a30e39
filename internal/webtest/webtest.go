// Package webtest holds a reusable http.ResponseWriter for benchmarks and
// allocation tests of handlers, here and in the lab.
package webtest

import "net/http"

// ResponseWriter is an http.ResponseWriter that records the status and
// the number of body bytes and discards the body. Unlike
// httptest.ResponseRecorder it does not clone the header map on
// WriteHeader, so a benchmark measures only the handler. Reuse one per
// goroutine with [ResponseWriter.Reset]; it is not safe for concurrent use.
type ResponseWriter struct {
	H    http.Header
	Code int // 0 until the handler writes
	N    int // body bytes written since Reset

	sniffed string // the type net/http would have detected, if it had to
}

// NewResponseWriter returns a ResponseWriter with an empty header map.
func NewResponseWriter() *ResponseWriter { return &ResponseWriter{H: make(http.Header)} }

// Header returns the header map, kept across Resets as net/http's is
// within one response.
func (w *ResponseWriter) Header() http.Header { return w.H }

// WriteHeader records code if no status was recorded yet.
func (w *ResponseWriter) WriteHeader(code int) {
	if w.Code == 0 {
		w.Code = code
	}
}

// Write counts p and discards it. Like net/http, the first Write of a
// response without a Content-Type sniffs one from p with
// http.DetectContentType, so that a handler which leaves the header to
// net/http is charged for the detection, as it is in a real server.
func (w *ResponseWriter) Write(p []byte) (int, error) {
	if w.Code == 0 {
		w.Code = http.StatusOK
	}
	if w.N == 0 && len(p) > 0 {
		if _, ok := w.H["Content-Type"]; !ok {
			w.sniffed = http.DetectContentType(p)
		}
	}
	w.N += len(p)
	return len(p), nil
}

// Reset forgets the status and byte count; the header map stays, so that
// setting the same headers again costs what it costs in a real response
// that reuses its map slots.
func (w *ResponseWriter) Reset() { w.Code, w.N = 0, 0 }
