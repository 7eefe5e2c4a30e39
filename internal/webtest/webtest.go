// Package webtest holds a reusable http.ResponseWriter for benchmarks and
// allocation tests of handlers, here and in the lab.
package webtest

import "net/http"

// ResponseWriter is an http.ResponseWriter that records the status and
// the number of body bytes and discards the body. Unlike
// httptest.ResponseRecorder it does not clone the header map on
// WriteHeader, so a benchmark measures only the handler; set CloneHeader,
// or use [NewServerResponseWriter], to charge that clone as net/http's
// server does. Reuse one per goroutine with [ResponseWriter.Reset]; it is
// not safe for concurrent use.
type ResponseWriter struct {
	H    http.Header
	Code int // 0 until the handler writes
	N    int // body bytes written since Reset

	// CloneHeader makes the writer clone the header map, as net/http's
	// server does, when the status is written after the handler called
	// Header(), or when Header() is called after the status was written.
	CloneHeader bool

	sniffed      string      // the type net/http would have detected, if it had to
	calledHeader bool        // Header was called since Reset
	snapshot     http.Header // the clone CloneHeader charges for
}

// NewResponseWriter returns a ResponseWriter with an empty header map.
func NewResponseWriter() *ResponseWriter { return &ResponseWriter{H: make(http.Header)} }

// NewServerResponseWriter returns a ResponseWriter with an empty header
// map that charges a handler what net/http's own writer does: the content
// sniffing of a response without a Content-Type and the clone of the
// header map of a handler that called Header(). A handler that sets its
// headers pays the clone; one that leaves them to net/http pays the
// sniffing.
func NewServerResponseWriter() *ResponseWriter {
	w := NewResponseWriter()
	w.CloneHeader = true
	return w
}

// Header returns the header map, kept across Resets as net/http's is
// within one response.
func (w *ResponseWriter) Header() http.Header {
	if w.CloneHeader && w.Code != 0 && w.snapshot == nil {
		w.snapshot = w.H.Clone() // net/http snapshots what was logically written
	}
	w.calledHeader = true
	return w.H
}

// WriteHeader records code if no status was recorded yet.
func (w *ResponseWriter) WriteHeader(code int) {
	if w.Code != 0 {
		return
	}
	w.Code = code
	if w.CloneHeader && w.calledHeader && w.snapshot == nil {
		w.snapshot = w.H.Clone() // as net/http's response.WriteHeader
	}
}

// Write counts p and discards it. Like net/http, the first Write of a
// response without a Content-Type sniffs one from p with
// http.DetectContentType, so that a handler which leaves the header to
// net/http is charged for the detection, as it is in a real server.
func (w *ResponseWriter) Write(p []byte) (int, error) {
	if w.Code == 0 {
		w.WriteHeader(http.StatusOK)
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
func (w *ResponseWriter) Reset() {
	w.Code, w.N = 0, 0
	w.calledHeader, w.snapshot = false, nil
}
