package metrics

import (
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"visitors/internal/coarse"
	"visitors/internal/visit"
)

// Route names what a public request asked for; it is the route label.
type Route uint8

// The public routes.
const (
	Hi          Route = iota // /hi
	Hello                    // /hello
	Whoami                   // /whoami
	CounterSVG               // /counter/{key}.svg
	CounterJSON              // /counter/{key}.json
	Daily                    // /counter/{key}/daily.json
	Graph                    // /counter/{key}/graph.svg
	Landing                  // /
	API                      // /api/v1/…: the owner API, when a root token is configured
	Stream                   // /counter/{key}/stream: counted when it ends, not timed
	Top                      // /top.json
	Compat                   // the URLs of closed counter services (internal/compat)
	Other                    // anything else: 404s
	Dashboard                // /dashboard and below: the owners' dashboard, when a root token is configured
	numRoutes
)

var routeNames = [numRoutes]string{"hi", "hello", "whoami", "counter_svg", "counter_json", "daily", "graph", "landing", "api", "stream", "top", "compat", "other", "dashboard"}

// String returns r's label value.
func (r Route) String() string { return routeNames[r] }

// Visit marks the status of a request that was a counted visit, for
// [Requests.Done]: 200|Visit. The visit is counted with the request, in
// the same atomic add.
const Visit = 1 << 10

// codes are the statuses the handlers answer with, each with a counter
// resolved at start; any other status takes a slower path with a lock.
// A 200 has two: with a counted visit and without.
var codes = [...]int{200 | Visit, 200, 304, 400, 404, 405, 500, 503}

var codeNames = [...]string{"200", "200", "304", "400", "404", "405", "500", "503"}

const numCodes = len(codes)

// slotOf maps a status (with Visit, or not) to its index in codes, or
// -1: a table, so that Done stays small enough to inline.
var slotOf = func() (t [2 * Visit]int8) {
	for i := range t {
		t[i] = -1
	}
	for i, c := range codes {
		t[c] = int8(i)
	}
	return t
}()

// Latency bucket upper bounds, in milliseconds. The clock ticks every
// millisecond, so a request that read d on it took less than d+1ms: it
// goes into the first bucket whose bound is at least that.
var bucketMillis = [...]int64{1, 2, 5, 10, 25, 50, 100, 250, 500, 1000, 2500, 5000, 10000}

const numBuckets = len(bucketMillis)

// routeStats are one route's counters. codes is what every request
// touches: one cache line per route, so that requests to different
// routes never share one.
type routeStats struct {
	codes [numCodes]atomic.Uint64 // 64 bytes
	// Requests that took at least one tick, by bucket (index 0 unused:
	// those requests are the route's count minus these), and their
	// summed duration in nanoseconds.
	slowBuckets [numBuckets + 1]atomic.Uint64 // the last one is +Inf
	sum         atomic.Int64
	_           [64 - (8*(numBuckets+2))%64]byte
}

// Slow describes a request that took at least the slow threshold.
type Slow struct {
	Route    Route
	Method   string
	Path     string // without the query, which may hold a name
	Code     int
	Duration time.Duration // as the coarse clock measured it
}

// RequestsOptions configure [NewRequests].
type RequestsOptions struct {
	// Clock times the requests. Required.
	Clock *coarse.Clock
	// SlowRequest is the duration from which a request is slow; 0 means
	// none is.
	SlowRequest time.Duration
	// OnSlow, if set, is called with every slow request, on the
	// request's goroutine after its response was written. It must not
	// block.
	OnSlow func(Slow)
}

// Requests counts the public requests by route and status, their latency
// by route, and the visits counted and not. It is a
// [prometheus.Collector]. Its methods may be called concurrently.
type Requests struct {
	routes [numRoutes]routeStats
	// not counted, slow: rarer, together on one line
	notCounted [visit.NumReasons]atomic.Uint64 // by reason less one: visit.None is not counted here
	slow       atomic.Uint64

	clock  *coarse.Clock
	slowNS int64
	onSlow func(Slow)

	mu         sync.Mutex           // guards otherCodes and first
	otherCodes map[routeCode]uint64 // requests with a status not in codes
	first      [numRoutes]uint64    // first bucket as last exported: it never goes down
}

type routeCode struct {
	route Route
	code  int
}

// NewRequests returns a Requests timed by o.Clock.
func NewRequests(o RequestsOptions) *Requests {
	return &Requests{clock: o.Clock, slowNS: int64(o.SlowRequest), onSlow: o.OnSlow, otherCodes: map[routeCode]uint64{}}
}

// Start returns the time a request starts, to hand to [Requests.Count]
// and [Requests.Done].
func (m *Requests) Start() int64 { return m.clock.Now() }

// Count counts a request to route, answered with code, that started at
// start, if it is the common case: under a clock tick, answered with one
// of the handlers' statuses (code|[Visit] for a counted visit). It
// inlines to two loads and one atomic add, on a cache line of the
// route's own. It reports whether it counted the request; if not, hand
// the request to [Requests.Done].
func (m *Requests) Count(route Route, code int, start int64) bool {
	if m.clock.Last() != start { // Start's Now keeps the clock awake; a slow request goes to Done, which reads it again
		return false
	}
	i := slotOf[code&(len(slotOf)-1)]
	if i < 0 || code >= len(slotOf) {
		return false
	}
	m.routes[route].codes[i].Add(1)
	return true
}

// Done records any request: its latency, whether it was slow, and its
// count by route and status, with a lock for a status the handlers do
// not answer with. It allocates nothing.
func (m *Requests) Done(route Route, code int, start int64, r *http.Request) {
	if d := m.clock.Now() - start; d != 0 {
		m.timed(route, code, d, r) // before the count: see Collect
	}
	if code < len(slotOf) && slotOf[code&(len(slotOf)-1)] >= 0 {
		m.routes[route].codes[slotOf[code&(len(slotOf)-1)]].Add(1)
		return
	}
	m.mu.Lock()
	m.otherCodes[routeCode{route, code &^ Visit}]++
	m.mu.Unlock()
}

// timed records a request that took at least one clock tick.
func (m *Requests) timed(route Route, code int, d int64, r *http.Request) {
	rs := &m.routes[route]
	b := numBuckets // +Inf
	for i, ms := range bucketMillis {
		if d+int64(time.Millisecond) <= ms*int64(time.Millisecond) {
			b = i
			break
		}
	}
	rs.slowBuckets[b].Add(1)
	rs.sum.Add(d)
	if m.slowNS > 0 && d >= m.slowNS {
		m.slow.Add(1)
		if m.onSlow != nil {
			m.onSlow(Slow{Route: route, Method: r.Method, Path: r.URL.Path, Code: code &^ Visit, Duration: time.Duration(d)})
		}
	}
}

// NotCounted records a visit answered but not counted, and why: a
// reason of internal/visit, never [visit.None].
func (m *Requests) NotCounted(why visit.Reason) { m.notCounted[why-1].Add(1) }

var (
	descRequests = prometheus.NewDesc("visitors_http_requests_total",
		"Public HTTP requests, by route and status code.", []string{"route", "code"}, nil)
	descDuration = prometheus.NewDesc("visitors_http_request_duration_seconds",
		"Time from routing a public request to its handler's return, by route, measured with a 1ms clock: the first bucket holds the requests under a tick, and they add 0 to the sum.", []string{"route"}, nil)
	descSlow = prometheus.NewDesc("visitors_http_slow_requests_total",
		"Public requests that took at least -slow-request.", nil, nil)
	descCounted = prometheus.NewDesc("visitors_visits_counted_total",
		"Visits the store counted.", nil, nil)
	descNotCounted = prometheus.NewDesc("visitors_visits_not_counted_total",
		"Visits answered but not counted, by reason.", []string{"reason"}, nil)
)

// Describe sends the descriptors of every metric of m.
func (m *Requests) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descRequests, descDuration, descSlow, descCounted, descNotCounted} {
		ch <- d
	}
}

// Collect sends the current value of every metric of m.
//
// A slow request adds to its bucket before its count, and Collect reads
// the counts before the buckets, so the first bucket (count minus the
// other buckets) never counts a request that is not in it; it can lag,
// and as exported it never goes down.
func (m *Requests) Collect(ch chan<- prometheus.Metric) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var counted uint64
	for r := range numRoutes {
		rs := &m.routes[r]
		var n [numCodes]uint64
		var total uint64
		for i := range codes {
			n[i] = rs.codes[i].Load()
			total += n[i]
		}
		counted += n[0]
		n[1] += n[0] // requests_total counts every 200, visit or not
		for i := 1; i < numCodes; i++ {
			ch <- prometheus.MustNewConstMetric(descRequests, prometheus.CounterValue, float64(n[i]), routeNames[r], codeNames[i])
		}
		for rc, n := range m.otherCodes {
			if rc.route == Route(r) {
				total += n
				ch <- prometheus.MustNewConstMetric(descRequests, prometheus.CounterValue, float64(n), routeNames[r], strconv.Itoa(rc.code))
			}
		}
		var slow [numBuckets + 1]uint64
		var nslow uint64
		for i := range slow {
			slow[i] = rs.slowBuckets[i].Load()
			nslow += slow[i]
		}
		sum := rs.sum.Load()
		first := uint64(0)
		if total > nslow {
			first = total - nslow
		}
		first = max(first, m.first[r])
		m.first[r] = first
		buckets := make(map[float64]uint64, numBuckets)
		cum := first
		for i, ms := range bucketMillis {
			cum += slow[i] // slow[0] stays 0: a timed request took a tick or more
			buckets[float64(ms)/1000] = cum
		}
		count := cum + slow[numBuckets]
		ch <- prometheus.MustNewConstHistogram(descDuration, count, time.Duration(sum).Seconds(), buckets, routeNames[r])
	}
	ch <- prometheus.MustNewConstMetric(descSlow, prometheus.CounterValue, float64(m.slow.Load()))
	ch <- prometheus.MustNewConstMetric(descCounted, prometheus.CounterValue, float64(counted))
	for i := range visit.NumReasons {
		ch <- prometheus.MustNewConstMetric(descNotCounted, prometheus.CounterValue, float64(m.notCounted[i].Load()), visit.Reason(i+1).String())
	}
}
