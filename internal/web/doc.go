// Package web is the public HTTP surface of visitors, and its hot path.
//
// [Server] routes with a switch on the path rather than a pattern mux,
// parses the query string in place, renders each body into a pooled
// buffer with one Write, and sets headers from preallocated values, so
// that serving /hi or /hello allocates nothing in this package's code.
// The tests in this package hold it to that with testing.AllocsPerRun.
//
// Each handler returns the status it answered with, so that ServeHTTP
// can report every request to the metrics (internal/metrics) without
// wrapping the ResponseWriter: a visit counted adds [metrics.Visit] to
// it (the helper counted), and a visit not counted is reported with its
// [visit.Reason] (a rule's refusal, an invalid request, the store's
// error) by one helper, notCounted.
package web
