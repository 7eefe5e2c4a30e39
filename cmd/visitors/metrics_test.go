package main

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"visitors/internal/servertest"
)

// mustScrape fetches /metrics from p's admin listener and parses it with
// Prometheus's own text parser.
func mustScrape(t *testing.T, p *servertest.Proc) map[string]*dto.MetricFamily {
	t.Helper()
	code, hdr, body := mustGet(t, p.AdminURL("/metrics"))
	if code != 200 || !strings.HasPrefix(hdr.Get("Content-Type"), "text/plain; version=0.0.4") {
		t.Fatalf("GET /metrics = %d %q, want 200 in the text format", code, hdr.Get("Content-Type"))
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	mfs, err := parser.TextToMetricFamilies(strings.NewReader(body))
	if err != nil {
		t.Fatalf("parse /metrics: %v\n%.3000s", err, body)
	}
	return mfs
}

// sample returns the value of the sample of family name whose labels are
// labels ("route", "hi", …), and whether there is one. A histogram's
// value is its count.
func sample(mfs map[string]*dto.MetricFamily, name string, labels ...string) (float64, bool) {
	mf := mfs[name]
	if mf == nil {
		return 0, false
	}
next:
	for _, m := range mf.GetMetric() {
		for i := 0; i+1 < len(labels); i += 2 {
			found := false
			for _, l := range m.GetLabel() {
				if l.GetName() == labels[i] && l.GetValue() == labels[i+1] {
					found = true
				}
			}
			if !found {
				continue next
			}
		}
		switch mf.GetType() {
		case dto.MetricType_COUNTER:
			return m.GetCounter().GetValue(), true
		case dto.MetricType_GAUGE:
			return m.GetGauge().GetValue(), true
		case dto.MetricType_HISTOGRAM:
			return float64(m.GetHistogram().GetSampleCount()), true
		}
	}
	return 0, false
}

func valueOf(mfs map[string]*dto.MetricFamily, name string) float64 {
	v, _ := sample(mfs, name)
	return v
}

// TestMetricsMoveByTheRequestsSent scrapes the real binary before and
// after a known set of requests and checks that each counter moved by
// exactly what was sent.
func TestMetricsMoveByTheRequestsSent(t *testing.T) {
	p := servertest.Start(t, bin, rulesOff, "-data", t.TempDir(), "-max-keys", "1")
	type series struct {
		name   string
		labels []string
	}
	s := func(name string, labels ...string) series { return series{name: name, labels: labels} }
	want := []struct {
		series
		n float64
	}{
		{s("visitors_http_requests_total", "route", "hi", "code", "200"), 3},
		{s("visitors_http_requests_total", "route", "hi", "code", "400"), 1},
		{s("visitors_http_requests_total", "route", "hello", "code", "200"), 2},
		{s("visitors_http_requests_total", "route", "hello", "code", "503"), 1},
		{s("visitors_http_requests_total", "route", "counter_svg", "code", "200"), 1},
		{s("visitors_http_requests_total", "route", "counter_json", "code", "200"), 1},
		{s("visitors_http_requests_total", "route", "daily", "code", "200"), 1},
		{s("visitors_http_requests_total", "route", "graph", "code", "200"), 0},
		{s("visitors_http_requests_total", "route", "whoami", "code", "200"), 1},
		{s("visitors_http_requests_total", "route", "other", "code", "404"), 1},
		{s("visitors_http_request_duration_seconds", "route", "hi"), 4},
		{s("visitors_http_request_duration_seconds", "route", "hello"), 3},
		{s("visitors_visits_counted_total"), 7}, // 3 hi, 2 hello, svg, json
		{s("visitors_visits_not_counted_total", "reason", "invalid"), 1},
		{s("visitors_visits_not_counted_total", "reason", "full"), 1},
		{s("visitors_visits_not_counted_total", "reason", "rate_limited"), 0},
		{s("visitors_store_keys"), 1},
		{s("visitors_store_keys_created_total"), 1},
		{s("visitors_log_lines_dropped_total"), 0},
	}
	// The start-up lines first reach the log: the drain polls every 10ms.
	var before map[string]*dto.MetricFamily
	for i, prev := 0, -1.0; ; i, prev = i+1, valueOf(before, "visitors_log_lines_written_total") {
		if i == 100 {
			t.Fatal("the log's written lines never settled after start")
		}
		time.Sleep(30 * time.Millisecond)
		before = mustScrape(t, p)
		if n, _ := sample(before, "visitors_log_lines_written_total"); n == prev && n > 0 {
			break
		}
	}
	for _, path := range []string{
		"/hi", "/hi?color=red", "/hi", "/hi?color=%3C",
		"/hello?name=a", "/hello?name=a", "/hello?name=b", // -max-keys 1: b is refused
		"/counter/a.svg", "/counter/a.json", "/counter/a/daily.json", // names and keys are one namespace
		"/whoami", "/nope",
	} {
		mustGet(t, p.URL(path))
	}
	after := mustScrape(t, p)
	for _, k := range want {
		b, _ := sample(before, k.name, k.labels...)
		a, ok := sample(after, k.name, k.labels...)
		if w := k.n; !ok || a-b != w {
			t.Errorf("%s%v moved by %v (%v to %v, exported: %v), want %v", k.name, k.labels, a-b, b, a, ok, w)
		}
	}
	// Log lines: one per /hello visit counted, written by the log's drain
	// within its poll (10ms).
	b, _ := sample(before, "visitors_log_lines_written_total")
	var a float64
	for deadline := time.Now().Add(5 * time.Second); a-b < 2 && time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		a, _ = sample(mustScrape(t, p), "visitors_log_lines_written_total")
	}
	if a-b != 2 {
		t.Errorf("visitors_log_lines_written_total moved by %v, want 2 (the /hello visits counted)", a-b)
	}
	for _, name := range []string{"go_goroutines", "go_memstats_heap_alloc_bytes", "process_cpu_seconds_total", "process_resident_memory_bytes",
		"visitors_store_flushes_total", "visitors_store_flush_errors_total", "visitors_store_max_keys", "visitors_store_healthy", "visitors_http_slow_requests_total"} {
		if _, ok := sample(after, name); !ok {
			t.Errorf("/metrics has no %s", name)
		}
	}
	// The flusher reports its passes: the visits above were written in
	// at least one, timed in the histogram; nothing waits or is pending.
	var flushes float64
	for deadline := time.Now().Add(5 * time.Second); flushes == 0 && time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		flushes, _ = sample(mustScrape(t, p), "visitors_store_flush_duration_seconds")
	}
	if flushes == 0 {
		t.Error("visitors_store_flush_duration_seconds observed no pass after counted visits")
	}
	last := mustScrape(t, p)
	for _, name := range []string{"visitors_store_pending_visits", "visitors_store_oldest_pending_seconds", "visitors_store_sync_waiters"} {
		if v, ok := sample(last, name); !ok || v != 0 {
			t.Errorf("%s = %v (exported: %v), want 0 on a healthy store", name, v, ok)
		}
	}
	bi := after["visitors_build_info"]
	if bi == nil || len(bi.GetMetric()) != 1 || bi.GetMetric()[0].GetGauge().GetValue() != 1 {
		t.Fatalf("visitors_build_info = %v, want one sample of 1", bi)
	}
	labels := map[string]string{}
	for _, l := range bi.GetMetric()[0].GetLabel() {
		labels[l.GetName()] = l.GetValue()
	}
	if !strings.HasPrefix(labels["goversion"], "go1.") || labels["version"] == "" || labels["revision"] == "" {
		t.Errorf("visitors_build_info labels = %v, want version, goversion and revision", labels)
	}
}

// TestDebugVarsIsExpvar checks /debug/vars on the real binary: expvar's
// own cmdline and memstats beside the service's counters.
func TestDebugVarsIsExpvar(t *testing.T) {
	p := servertest.Start(t, bin, rulesOff, "-data", t.TempDir())
	mustGet(t, p.URL("/hello?name=x"))
	_, _, body := mustGet(t, p.AdminURL("/debug/vars"))
	var vars struct {
		Cmdline    []string
		Memstats   struct{ HeapAlloc uint64 }
		Goroutines int
		Visitors   struct {
			Keys            int  `json:"keys"`
			LogLinesDropped *int `json:"log_lines_dropped"`
		}
	}
	if err := json.Unmarshal([]byte(body), &vars); err != nil {
		t.Fatalf("/debug/vars: %v\n%s", err, body)
	}
	if len(vars.Cmdline) == 0 || vars.Memstats.HeapAlloc == 0 || vars.Goroutines == 0 || vars.Visitors.Keys != 1 || vars.Visitors.LogLinesDropped == nil {
		t.Errorf("/debug/vars = %s, want cmdline, memstats, goroutines and visitors.keys 1", fmt.Sprintf("%.2000s", body))
	}
}
