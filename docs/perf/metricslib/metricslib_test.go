// Package metricslib compares the hot-path cost of the two Prometheus
// client libraries visitors could use; see docs/performance.md.
package metricslib

import (
	"sync/atomic"
	"testing"
	"time"

	vm "github.com/VictoriaMetrics/metrics"
	"github.com/prometheus/client_golang/prometheus"
)

var buckets = []float64{.0001, .00025, .0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10}

func promCounter() prometheus.Counter {
	v := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "x_total"}, []string{"route", "code"})
	return v.WithLabelValues("hi", "200")
}
func promHist() prometheus.Observer {
	v := prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "x_seconds", Buckets: buckets}, []string{"route"})
	return v.WithLabelValues("hi")
}

func BenchmarkCounter(b *testing.B) {
	b.Run("lib=prom", func(b *testing.B) {
		c := promCounter()
		b.ReportAllocs()
		for b.Loop() {
			c.Inc()
		}
	})
	b.Run("lib=vm", func(b *testing.B) {
		c := vm.NewSet().NewCounter(`x_total{route="hi",code="200"}`)
		b.ReportAllocs()
		for b.Loop() {
			c.Inc()
		}
	})
	b.Run("lib=atomic", func(b *testing.B) {
		var c atomic.Uint64
		b.ReportAllocs()
		for b.Loop() {
			c.Add(1)
		}
	})
}

func BenchmarkCounterParallel(b *testing.B) {
	b.Run("lib=prom", func(b *testing.B) {
		c := promCounter()
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				c.Inc()
			}
		})
	})
	b.Run("lib=vm", func(b *testing.B) {
		c := vm.NewSet().NewCounter(`x_total{route="hi",code="200"}`)
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				c.Inc()
			}
		})
	})
	b.Run("lib=prom-withlabelvalues", func(b *testing.B) {
		v := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "x_total"}, []string{"route", "code"})
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				v.WithLabelValues("hi", "200").Inc()
			}
		})
	})
}

func BenchmarkHistogram(b *testing.B) {
	b.Run("lib=prom", func(b *testing.B) {
		h := promHist()
		b.ReportAllocs()
		for b.Loop() {
			h.Observe(0.0000012)
		}
	})
	b.Run("lib=vm", func(b *testing.B) {
		h := vm.NewSet().NewHistogram(`x_seconds{route="hi"}`)
		b.ReportAllocs()
		for b.Loop() {
			h.Update(0.0000012)
		}
	})
}

func BenchmarkHistogramParallel(b *testing.B) {
	b.Run("lib=prom", func(b *testing.B) {
		h := promHist()
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				h.Observe(0.0000012)
			}
		})
	})
	b.Run("lib=vm", func(b *testing.B) {
		h := vm.NewSet().NewHistogram(`x_seconds{route="hi"}`)
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				h.Update(0.0000012)
			}
		})
	})
}

var sink time.Duration

func BenchmarkClock(b *testing.B) {
	b.Run("clock=now+since", func(b *testing.B) {
		for b.Loop() {
			t := time.Now()
			sink += time.Since(t)
		}
	})
	b.Run("clock=now", func(b *testing.B) {
		for b.Loop() {
			sink += time.Duration(time.Now().UnixNano())
		}
	})
	b.Run("clock=coarse-load", func(b *testing.B) {
		var c atomic.Int64
		c.Store(5)
		for b.Loop() {
			t := c.Load()
			sink += time.Duration(c.Load() - t)
		}
	})
}
