package web

import (
	"context"
	"io"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/rs/zerolog"

	"visitors/internal/coarse"
	"visitors/internal/metrics"
	"visitors/internal/store"
	"visitors/internal/store/memstore"
)

// slowStore is a memory store whose Hit takes d on the manual clock, as
// a stalled disk would.
type slowStore struct {
	store.Counter
	clock *coarse.Clock
	d     time.Duration
}

func (s slowStore) Hit(ctx context.Context) (uint64, error) {
	s.clock.Advance(s.d)
	return s.Counter.Hit(ctx)
}

// mustGather returns the value of every sample of c's metrics, keyed by
// the metric name and its labels in name order:
// "visitors_http_requests_total code=200 route=hi"; a histogram's
// samples add " count", " sum" and " le 250ms".
func mustGather(t *testing.T, c prometheus.Collector) map[string]float64 {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(c)
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			k := mf.GetName()
			for _, l := range m.GetLabel() {
				k += " " + l.GetName() + "=" + l.GetValue()
			}
			switch mf.GetType() {
			case dto.MetricType_COUNTER:
				got[k] = m.GetCounter().GetValue()
			case dto.MetricType_HISTOGRAM:
				h := m.GetHistogram()
				got[k+" count"] = float64(h.GetSampleCount())
				got[k+" sum"] = h.GetSampleSum()
				for _, b := range h.GetBucket() {
					got[k+" le "+time.Duration(b.GetUpperBound()*float64(time.Second)).String()] = float64(b.GetCumulativeCount())
				}
			}
		}
	}
	return got
}

func TestRequestMetrics(t *testing.T) {
	clock := coarse.Manual()
	var slow []metrics.Slow
	m := metrics.NewRequests(metrics.RequestsOptions{Clock: clock, SlowRequest: 250 * time.Millisecond,
		OnSlow: func(s metrics.Slow) { slow = append(slow, s) }})
	st := memstore.New(memstore.Options{MaxKeys: 1})
	defer st.Close()
	s := New(Config{Store: slowStore{st, clock, 300 * time.Millisecond}, Log: zerolog.New(io.Discard), Requests: m})

	for _, target := range []string{
		"/hi", "/hi?color=%3C", // one slow visit; one invalid
		"/hello?name=a", "/hello?name=b", // counted; full (a 503)
		"/counter/a.svg", "/counter/a.json?count=false", "/counter/a/daily.json", "/counter/a/graph.svg",
		"/counter/a.gif", "/nope", "/", "/whoami",
	} {
		get(t, s, "GET", target)
	}
	get(t, s, "HEAD", "/hi?color=%3C") // a HEAD is no visit, valid or not
	get(t, s, "POST", "/hello")        // 405: an invalid visit

	got := mustGather(t, m)
	want := map[string]float64{
		"visitors_http_requests_total code=200 route=hi":           1,
		"visitors_http_requests_total code=400 route=hi":           2,
		"visitors_http_requests_total code=200 route=hello":        1,
		"visitors_http_requests_total code=503 route=hello":        1,
		"visitors_http_requests_total code=405 route=hello":        1,
		"visitors_http_requests_total code=200 route=counter_svg":  1,
		"visitors_http_requests_total code=200 route=counter_json": 1,
		"visitors_http_requests_total code=200 route=daily":        1,
		"visitors_http_requests_total code=200 route=graph":        1,
		"visitors_http_requests_total code=404 route=other":        2,
		"visitors_http_requests_total code=200 route=landing":      1,
		"visitors_http_requests_total code=200 route=whoami":       1,
		"visitors_http_requests_total code=200 route=api":          0,
		"visitors_visits_counted_total":                            3, // /hi, /hello?name=a, /counter/a.svg
		"visitors_visits_not_counted_total reason=full":            1,
		"visitors_visits_not_counted_total reason=invalid":         2,
		"visitors_visits_not_counted_total reason=error":           0,
		"visitors_visits_not_counted_total reason=bot":             0,
		"visitors_http_slow_requests_total":                        1,
		// /hi: one request of 300ms, two under a tick.
		"visitors_http_request_duration_seconds route=hi count":       3,
		"visitors_http_request_duration_seconds route=hi sum":         0.3,
		"visitors_http_request_duration_seconds route=hi le 1ms":      2,
		"visitors_http_request_duration_seconds route=hi le 250ms":    2,
		"visitors_http_request_duration_seconds route=hi le 500ms":    3,
		"visitors_http_request_duration_seconds route=hello count":    3,
		"visitors_http_request_duration_seconds route=hello le 1ms":   3,
		"visitors_http_request_duration_seconds route=landing le 1ms": 1,
	}
	for k, w := range want {
		if g, ok := got[k]; !ok || g != w {
			t.Errorf("%s = %v (exported: %v), want %v", k, g, ok, w)
		}
	}
	if len(slow) != 1 || slow[0] != (metrics.Slow{Route: metrics.Hi, Method: "GET", Path: "/hi", Code: 200, Duration: 300 * time.Millisecond}) {
		t.Errorf("OnSlow got %+v, want one slow GET /hi 200 of 300ms", slow)
	}
}

// TestRequestMetricsStoreError checks that a failed count is a visit not
// counted, for the reason "error".
func TestRequestMetricsStoreError(t *testing.T) {
	m := metrics.NewRequests(metrics.RequestsOptions{Clock: coarse.Manual()})
	s := New(Config{Store: failingStore{}, Log: zerolog.New(io.Discard), Requests: m})
	for _, target := range []string{"/hi", "/hello", "/counter/k.json"} {
		if w := get(t, s, "GET", target); w.Code != 503 {
			t.Fatalf("GET %s = %d, want 503", target, w.Code)
		}
	}
	got := mustGather(t, m)
	if got["visitors_visits_not_counted_total reason=error"] != 3 || got["visitors_visits_counted_total"] != 0 {
		t.Errorf("not counted for error = %v, counted = %v; want 3, 0",
			got["visitors_visits_not_counted_total reason=error"], got["visitors_visits_counted_total"])
	}
}
