// Package metrics exports what visitors does as Prometheus metrics, for
// the admin listener's /metrics.
//
// The public handlers report every request to [Requests]. That is the
// only part on the hot path, and it is built for it: a request costs two
// loads of a [coarse.Clock] and one atomic add on a counter that its
// route owns, picked from arrays resolved at start by route and status;
// no map, no label lookup, no lock, no allocation. Only a request that
// took a clock tick or more also adds to its latency bucket and sum, and
// the histogram's first bucket is derived at scrape time. Everything
// else (the store, the log, the runtime) is read when Prometheus scrapes,
// through collector functions, and costs the hot path nothing.
//
// The registry, exposition and the Go and process collectors are
// prometheus/client_golang's; docs/performance.md has the measurements
// that chose it and this design.
package metrics
