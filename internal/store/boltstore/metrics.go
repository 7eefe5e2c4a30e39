// The store's counters for operators: its Prometheus collectors and
// /debug/vars.

package boltstore

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// newFlushDurations returns the histogram of the store's flush passes,
// visitors_store_flush_duration_seconds.
func newFlushDurations() prometheus.Histogram {
	return prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "visitors_store_flush_duration_seconds",
		Help:    "How long a durable store's flush pass took (a bbolt transaction and its fdatasyncs, or in sync mode a write-ahead log record and its fdatasync), failed passes included.",
		Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5},
	})
}

// observeFlush records one flush pass that began at begun and took d,
// and tells Options.OnFlush; err is the pass's error, counted apart by
// visitors_store_flush_errors_total.
func (s *Store) observeFlush(begun time.Time, d time.Duration, err error) {
	if s.flushes != nil {
		s.flushes.Observe(d.Seconds())
	}
	if s.o.OnFlush != nil {
		s.o.OnFlush(begun, d, err)
	}
}

// Collectors returns the store's Prometheus collectors, read at scrape
// time: the durations of its flush passes, their counters, and the
// visits acknowledged and not yet on disk. The service's own (keys,
// health) are not among them: every store has those.
func (s *Store) Collectors() []prometheus.Collector {
	counter := func(name, help string, f func(Stats) uint64) prometheus.Collector {
		return prometheus.NewCounterFunc(prometheus.CounterOpts{Name: name, Help: help}, func() float64 { return float64(f(s.Stats())) })
	}
	gauge := func(name, help string, f func() float64) prometheus.Collector {
		return prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: name, Help: help}, f)
	}
	return []prometheus.Collector{
		s.flushes,
		counter("visitors_store_flushes_total", "Flush passes that wrote something.", func(st Stats) uint64 { return st.Passes }),
		counter("visitors_store_flush_errors_total", "Flush passes whose transaction failed; the counts stay in memory and are retried.", func(st Stats) uint64 { return st.PassErrors }),
		counter("visitors_store_key_write_errors_total", "Writes of one key that failed, summed over passes.", func(st Stats) uint64 { return st.KeyErrors }),
		gauge("visitors_store_failing_keys", "Keys whose last write failed, held in memory.", func() float64 { return float64(s.Stats().FailingKeys) }),
		counter("visitors_store_sync_visits_total", "Sync durability: visits made durable by flush passes.", func(st Stats) uint64 { return st.SyncVisits }),
		gauge("visitors_store_pending_visits", "Visits counted in memory and not yet durable.", func() float64 { n, _, _ := s.Pending(); return float64(n) }),
		gauge("visitors_store_oldest_pending_seconds", "How long the oldest visit not yet durable has waited; 0 when none waits.", func() float64 {
			n, oldest, _ := s.Pending()
			if n == 0 || oldest.IsZero() {
				return 0
			}
			return time.Since(oldest).Seconds()
		}),
		gauge("visitors_store_sync_waiters", "Sync durability: requests waiting for their visit's commit.", func() float64 { _, _, w := s.Pending(); return float64(w) }),
	}
}

// Vars returns the store's counters for /debug/vars.
func (s *Store) Vars() any { return s.Stats() }
