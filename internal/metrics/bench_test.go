package metrics

import (
	"net/http/httptest"
	"testing"
	"time"

	"visitors/internal/coarse"
)

// BenchmarkRequest is what metrics add to a request to /hi: read the
// clock before and after, and count the request by route and status with
// its visit. clock=time.Now is the same with a precise timestamp
// per request, the alternative the coarse clock replaced.
func BenchmarkRequest(b *testing.B) {
	r := httptest.NewRequest("GET", "/hi", nil)
	b.Run("clock=coarse", func(b *testing.B) {
		c := coarse.Start(time.Millisecond)
		defer c.Stop()
		m := NewRequests(RequestsOptions{Clock: c, SlowRequest: 250 * time.Millisecond})
		b.ReportAllocs()
		for b.Loop() {
			start := m.Start()
			if !m.Count(Hi, 200|Visit, start) {
				m.Done(Hi, 200|Visit, start, r)
			}
		}
	})
	b.Run("clock=time.Now", func(b *testing.B) {
		m := NewRequests(RequestsOptions{Clock: coarse.Manual(), SlowRequest: 250 * time.Millisecond})
		b.ReportAllocs()
		for b.Loop() {
			start := time.Now()
			d := time.Since(start)
			m.Done(Hi, 200|Visit, m.clock.Now()-int64(d), r)
		}
	})
}

func BenchmarkRequestParallel(b *testing.B) {
	c := coarse.Start(time.Millisecond)
	defer c.Stop()
	m := NewRequests(RequestsOptions{Clock: c, SlowRequest: 250 * time.Millisecond})
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		r := httptest.NewRequest("GET", "/hi", nil)
		for pb.Next() {
			start := m.Start()
			if !m.Count(Hi, 200|Visit, start) {
				m.Done(Hi, 200|Visit, start, r)
			}
		}
	})
}
