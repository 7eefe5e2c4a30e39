package client

import (
	"net/netip"
	"sync/atomic"
	"testing"
	"time"
)

// benchLimiter returns a Limiter with the service's default rules.
func benchLimiter() *Limiter {
	return NewLimiter(LimiterOptions{Visits: Rate{Events: 10, Per: time.Second}, Burst: 20, NewKeys: Rate{Events: 100, Per: time.Hour}})
}

// benchAddrs returns n distinct IPv4 addresses from 1.0.0.1 up.
func benchAddrs(n int) []netip.Addr {
	a := make([]netip.Addr, n)
	for k := range a {
		v := 1<<24 + k + 1
		a[k] = netip.AddrFrom4([4]byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)})
	}
	return a
}

// BenchmarkLimiterVisit prices a visit of one client again and again
// (clients=one), and of a new client every time (clients=distinct: 2^17
// addresses in turn, more than the table remembers, after a first round
// untimed, so that the table is full and turns over, as under the load
// test's -clients). The clock moves 100 µs per visit.
func BenchmarkLimiterVisit(b *testing.B) {
	for _, tt := range []struct {
		name string
		n    int
	}{{"clients=one", 1}, {"clients=distinct", 1 << 17}} {
		b.Run(tt.name, func(b *testing.B) {
			l, addrs := benchLimiter(), benchAddrs(tt.n)
			now := t0
			for _, a := range addrs {
				now = now.Add(100 * time.Microsecond)
				l.Visit(a, now, false)
			}
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				now = now.Add(100 * time.Microsecond)
				l.Visit(addrs[i%len(addrs)], now, false)
				i++
			}
		})
	}
}

// BenchmarkLimiterVisitParallel is the RunParallel twin of
// BenchmarkLimiterVisit, with distinct clients.
func BenchmarkLimiterVisitParallel(b *testing.B) {
	l, addrs := benchLimiter(), benchAddrs(1<<17)
	var clock atomic.Int64
	clock.Store(t0.UnixNano())
	for _, a := range addrs {
		l.Visit(a, time.Unix(0, clock.Add(int64(100*time.Microsecond))), false)
	}
	var next atomic.Int64
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			i := next.Add(1)
			l.Visit(addrs[i%int64(len(addrs))], time.Unix(0, clock.Add(int64(100*time.Microsecond))), false)
		}
	})
}
