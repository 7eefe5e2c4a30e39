package metrics

import (
	"fmt"
	"maps"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/expfmt"

	"visitors/internal/coarse"
	"visitors/internal/visit"
)

// TestBuckets checks where a request lands by what it read on the clock:
// under a tick in the first bucket, d in the first bound of at least d+1ms.
func TestBuckets(t *testing.T) {
	clock := coarse.Manual()
	m := NewRequests(RequestsOptions{Clock: clock})
	r := httptest.NewRequest("GET", "/hi", nil)
	for _, d := range []time.Duration{0, 0, time.Millisecond, 4 * time.Millisecond, 2 * time.Second, time.Minute} {
		start := m.Start()
		clock.Advance(d)
		m.Done(Hi, 200, start, r)
	}
	want := `
visitors_http_request_duration_seconds_bucket{route="hi",le="0.001"} 2
visitors_http_request_duration_seconds_bucket{route="hi",le="0.002"} 3
visitors_http_request_duration_seconds_bucket{route="hi",le="0.005"} 4
visitors_http_request_duration_seconds_bucket{route="hi",le="0.01"} 4
visitors_http_request_duration_seconds_bucket{route="hi",le="0.025"} 4
visitors_http_request_duration_seconds_bucket{route="hi",le="0.05"} 4
visitors_http_request_duration_seconds_bucket{route="hi",le="0.1"} 4
visitors_http_request_duration_seconds_bucket{route="hi",le="0.25"} 4
visitors_http_request_duration_seconds_bucket{route="hi",le="0.5"} 4
visitors_http_request_duration_seconds_bucket{route="hi",le="1"} 4
visitors_http_request_duration_seconds_bucket{route="hi",le="2.5"} 5
visitors_http_request_duration_seconds_bucket{route="hi",le="5"} 5
visitors_http_request_duration_seconds_bucket{route="hi",le="10"} 5
visitors_http_request_duration_seconds_bucket{route="hi",le="+Inf"} 6
visitors_http_request_duration_seconds_sum{route="hi"} 62.005
visitors_http_request_duration_seconds_count{route="hi"} 6
`
	if got := mustText(t, m, "visitors_http_request_duration_seconds", `route="hi"`); got != strings.TrimSpace(want) {
		t.Errorf("histogram of /hi =\n%s\nwant\n%s", got, want)
	}
}

// mustText returns the samples of family name whose line holds match,
// in the text format, one a line.
func mustText(t *testing.T, c prometheus.Collector, name, match string) string {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(c)
	var lines []string
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		var b strings.Builder
		if _, err := expfmt.MetricFamilyToText(&b, mf); err != nil {
			t.Fatal(err)
		}
		for l := range strings.SplitSeq(b.String(), "\n") {
			if strings.Contains(l, match) && !strings.HasPrefix(l, "#") {
				lines = append(lines, l)
			}
		}
	}
	return strings.Join(lines, "\n")
}

// bucket returns the cumulative count of /hi's latency bucket le.
func bucket(t *testing.T, m *Requests, le float64) uint64 {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(m)
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != "visitors_http_request_duration_seconds" {
			continue
		}
		for _, x := range mf.GetMetric() {
			if x.GetLabel()[0].GetValue() != "hi" {
				continue
			}
			for _, b := range x.GetHistogram().GetBucket() {
				if b.GetUpperBound() == le {
					return b.GetCumulativeCount()
				}
			}
		}
	}
	t.Fatalf("no bucket le=%v for /hi", le)
	return 0
}

// TestFirstBucketNeverGoesDown catches a scrape between a slow request's
// bucket and its count: the first bucket, derived, must not go down.
func TestFirstBucketNeverGoesDown(t *testing.T) {
	m := NewRequests(RequestsOptions{Clock: coarse.Manual()})
	r := httptest.NewRequest("GET", "/hi", nil)
	for range 3 {
		m.Done(Hi, 200, 0, r) // fast
	}
	before := bucket(t, m, 0.001)
	m.timed(Hi, 200, int64(5*time.Millisecond), r) // the bucket, not yet the count
	during := bucket(t, m, 0.001)
	m.routes[Hi].codes[1].Add(1) // the count
	after := bucket(t, m, 0.001)
	if before != 3 || during != 3 || after != 3 {
		t.Errorf("first bucket before, during and after a slow request = %v, %v, %v; want 3 each time", before, during, after)
	}
}

// TestOtherStatus: a status without a counter of its own is still
// counted, under its own code.
func TestOtherStatus(t *testing.T) {
	m := NewRequests(RequestsOptions{Clock: coarse.Manual()})
	m.Done(Hello, 418, 0, httptest.NewRequest("GET", "/hello", nil))
	m.Done(Hello, 418|Visit, 0, httptest.NewRequest("GET", "/hello", nil))
	if got := mustText(t, m, "visitors_http_requests_total", `code="418"`); got != `visitors_http_requests_total{code="418",route="hello"} 2` {
		t.Errorf("requests with status 418 = %q, want 2 of them for route hello", got)
	}
}

// TestCount: Count takes only the common case, and leaves the rest to
// Done.
func TestCount(t *testing.T) {
	clock := coarse.Manual()
	m := NewRequests(RequestsOptions{Clock: clock})
	tests := []struct {
		name    string
		code    int
		advance time.Duration
		want    bool
	}{
		{"a visit under a tick", 200 | Visit, 0, true},
		{"a 404 under a tick", 404, 0, true},
		{"a status without a counter", 418, 0, false},
		{"a visit of a tick", 200 | Visit, time.Millisecond, false},
	}
	for _, tt := range tests {
		start := m.Start()
		clock.Advance(tt.advance)
		if got := m.Count(Hi, tt.code, start); got != tt.want {
			t.Errorf("%s: Count(Hi, %d, start) = %v, want %v", tt.name, tt.code, got, tt.want)
		}
	}
}

// TestCountAndDoneAgree: the fast path and the slow one count the same
// requests the same, for the handlers' statuses, others, and out-of-range
// codes; a counted visit is a 200 and a visit.
func TestCountAndDoneAgree(t *testing.T) {
	codes := []int{200 | Visit, 200, 304, 400, 404, 405, 500, 503, 418, 429, 2 * Visit, 2*Visit + 200}
	for _, fast := range []bool{true, false} {
		clock := coarse.Manual()
		m := NewRequests(RequestsOptions{Clock: clock})
		r := httptest.NewRequest("GET", "/hi", nil)
		for _, c := range codes {
			start := m.Start()
			if !fast || !m.Count(Hi, c, start) {
				m.Done(Hi, c, start, r)
			}
		}
		got := mustText(t, m, "visitors_http_requests_total", `route="hi"`)
		for _, want := range []string{
			`code="200",route="hi"} 2`, `code="304",route="hi"} 1`, `code="400",route="hi"} 1`,
			`code="404",route="hi"} 1`, `code="405",route="hi"} 1`, `code="500",route="hi"} 1`,
			`code="503",route="hi"} 1`, `code="418",route="hi"} 1`, `code="429",route="hi"} 1`,
			`code="2048",route="hi"} 1`, `code="2248",route="hi"} 1`,
		} {
			if !strings.Contains(got, want) {
				t.Errorf("fast %v: requests_total lacks %s:\n%s", fast, want, got)
			}
		}
		if v := strings.TrimSpace(mustText(t, m, "visitors_visits_counted_total", "")); !strings.HasSuffix(v, " 1") {
			t.Errorf("fast %v: visits counted = %q, want 1", fast, v)
		}
	}
}

// TestSlowThreshold: a request is slow from the threshold on, and none
// is without one.
func TestSlowThreshold(t *testing.T) {
	for _, tt := range []struct {
		threshold, took time.Duration
		slow            bool
	}{
		{5 * time.Millisecond, 5 * time.Millisecond, true},
		{5 * time.Millisecond, 4 * time.Millisecond, false},
		{0, time.Minute, false},
	} {
		clock := coarse.Manual()
		var seen []Slow
		m := NewRequests(RequestsOptions{Clock: clock, SlowRequest: tt.threshold, OnSlow: func(s Slow) { seen = append(seen, s) }})
		start := m.Start()
		clock.Advance(tt.took)
		m.Done(Hello, 200, start, httptest.NewRequest("GET", "/hello?name=secret", nil))
		if (len(seen) == 1) != tt.slow {
			t.Errorf("threshold %v, took %v: OnSlow called %d times, want slow %v", tt.threshold, tt.took, len(seen), tt.slow)
		}
		if tt.slow && (seen[0].Path != "/hello" || seen[0].Duration != tt.took || seen[0].Code != 200) {
			t.Errorf("Slow = %+v, want /hello without the query, 200, %v", seen[0], tt.took)
		}
		want := " 0"
		if tt.slow {
			want = " 1"
		}
		if v := strings.TrimSpace(mustText(t, m, "visitors_http_slow_requests_total", "")); !strings.HasSuffix(v, want) {
			t.Errorf("threshold %v, took %v: slow_requests_total = %q", tt.threshold, tt.took, v)
		}
	}
}

// TestNotCountedByReason holds the reason labels of
// visitors_visits_not_counted_total to their names, which dashboards and
// alerts quote: each of internal/visit's reasons has its own label, and
// NotCounted of a reason adds to that label's series and no other. A
// label swapped in visit's names, a reason added without its name, or
// an index off by one in Requests fails it.
func TestNotCountedByReason(t *testing.T) {
	labels := map[visit.Reason]string{
		visit.RateLimited: "rate_limited",
		visit.Repeat:      "repeat",
		visit.Bot:         "bot",
		visit.Locked:      "locked",
		visit.Full:        "full",
		visit.Invalid:     "invalid",
		visit.StoreError:  "error",
		visit.Saturated:   "saturated",
	}
	if len(labels) != visit.NumReasons {
		t.Fatalf("visit has %d reasons, this test knows %d: give the new one its label here", visit.NumReasons, len(labels))
	}
	seen := map[string]visit.Reason{}
	for i := range visit.NumReasons {
		r := visit.Reason(i + 1)
		want, ok := labels[r]
		if !ok {
			t.Fatalf("reason %d is not in this test's list", r)
		}
		if got := r.String(); got != want {
			t.Errorf("Reason(%d).String() = %q, want %q", r, got, want)
		}
		if other, dup := seen[want]; dup {
			t.Errorf("reasons %d and %d share the label %q", other, r, want)
		}
		seen[want] = r
	}
	names := slices.Sorted(maps.Values(labels)) // the registry sorts the series by label
	for r, label := range labels {
		t.Run(label, func(t *testing.T) {
			m := NewRequests(RequestsOptions{Clock: coarse.Manual()})
			m.NotCounted(r)
			var want []string
			for _, l := range names {
				n := 0
				if l == label {
					n = 1
				}
				want = append(want, fmt.Sprintf("visitors_visits_not_counted_total{reason=%q} %d", l, n))
			}
			if got := mustText(t, m, "visitors_visits_not_counted_total", "reason="); got != strings.Join(want, "\n") {
				t.Errorf("after NotCounted(%s):\n%s\nwant\n%s", label, got, strings.Join(want, "\n"))
			}
		})
	}
}
