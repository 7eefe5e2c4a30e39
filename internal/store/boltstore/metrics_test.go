package boltstore

import (
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// gatherStore returns the store's collectors' metrics by name, read now.
func gatherStore(t *testing.T, reg *prometheus.Registry) map[string]*dto.Metric {
	t.Helper()
	mfs, err := reg.Gather()
	noErr(t, err, "Gather()")
	m := map[string]*dto.Metric{}
	for _, mf := range mfs {
		if len(mf.GetMetric()) == 1 {
			m[mf.GetName()] = mf.GetMetric()[0]
		}
	}
	return m
}

// TestCollectorsReadTheStore: the store's collectors show its flush
// passes (their durations too), the passes that failed, and the visits
// not yet on disk with the age of the oldest, 0 when none waits.
// (Mutation testing, issue 28: with the histogram never observed,
// metrics.go:23:15, or the oldest pending visit's age always 0, 52:9,
// every test of the package still passed.)
func TestCollectorsReadTheStore(t *testing.T) {
	s := mustOpen(t, Options{Dir: t.TempDir(), FlushInterval: time.Hour})
	reg := prometheus.NewRegistry()
	reg.MustRegister(s.Collectors()...)
	mustIncrN(t, s, "a", 2)
	noErr(t, s.Flush(), "Flush()")
	m := gatherStore(t, reg)
	if n := m["visitors_store_flush_duration_seconds"].GetHistogram().GetSampleCount(); n == 0 {
		t.Error("visitors_store_flush_duration_seconds has no sample after a flush")
	}
	if v := m["visitors_store_flushes_total"].GetCounter().GetValue(); v < 1 {
		t.Errorf("visitors_store_flushes_total = %v after a flush, want at least 1", v)
	}
	if v := m["visitors_store_oldest_pending_seconds"].GetGauge().GetValue(); v != 0 {
		t.Errorf("visitors_store_oldest_pending_seconds = %v with nothing pending, want 0", v)
	}

	path := failDisk(s)
	mustIncrN(t, s, "a", 1)
	if err := s.Flush(); err == nil {
		t.Fatal("Flush() succeeded with the file closed")
	}
	time.Sleep(10 * time.Millisecond)
	m = gatherStore(t, reg)
	if v := m["visitors_store_pending_visits"].GetGauge().GetValue(); v != 1 {
		t.Errorf("visitors_store_pending_visits = %v, want 1", v)
	}
	if v := m["visitors_store_oldest_pending_seconds"].GetGauge().GetValue(); v < 0.01 {
		t.Errorf("visitors_store_oldest_pending_seconds = %v 10ms after a failed flush, want at least 0.01", v)
	}
	if v := m["visitors_store_flush_errors_total"].GetCounter().GetValue(); v < 1 {
		t.Errorf("visitors_store_flush_errors_total = %v after a failed flush, want at least 1", v)
	}
	diskBack(t, s, path)
	healLog(s)
	mustClose(t, s)
}
