package client

import (
	"net/http"
	"net/netip"
	"strings"
	"testing"
	"time"
)

func mustProxies(tb testing.TB, s string) *Proxies {
	tb.Helper()
	var p Proxies
	if err := p.Set(s); err != nil {
		tb.Fatal(err)
	}
	return &p
}

func TestIdentify(t *testing.T) {
	trusted := mustProxies(t, "10.0.0.0/8,2001:db8:ffff::/48,192.0.2.7")
	tests := []struct {
		name    string
		remote  string
		trusted *Proxies
		hdr     []string // name, value, name, value…
		want    string
	}{
		{"peer", "198.51.100.1:5000", trusted, nil, "198.51.100.1"},
		{"untrusted peer: a spoofed X-Forwarded-For changes nothing", "198.51.100.1:5000", trusted, []string{"X-Forwarded-For", "203.0.113.9"}, "198.51.100.1"},
		{"untrusted peer: a spoofed Forwarded changes nothing", "198.51.100.1:5000", trusted, []string{"Forwarded", "for=203.0.113.9"}, "198.51.100.1"},
		{"no proxy trusted", "10.0.0.1:5000", nil, []string{"X-Forwarded-For", "203.0.113.9"}, "10.0.0.1"},
		{"trusted proxy", "10.0.0.1:5000", trusted, []string{"X-Forwarded-For", "203.0.113.9"}, "203.0.113.9"},
		{"rightmost untrusted", "10.0.0.1:5000", trusted, []string{"X-Forwarded-For", "1.1.1.1, 203.0.113.9, 10.9.9.9"}, "203.0.113.9"},
		{"a client's forged entry is left of its real one", "10.0.0.1:5000", trusted, []string{"X-Forwarded-For", "10.1.1.1, 203.0.113.9"}, "203.0.113.9"},
		{"several header lines", "10.0.0.1:5000", trusted, []string{"X-Forwarded-For", "1.1.1.1", "X-Forwarded-For", "203.0.113.9, 10.2.2.2"}, "203.0.113.9"},
		{"every hop trusted: the leftmost", "10.0.0.1:5000", trusted, []string{"X-Forwarded-For", "10.3.3.3, 10.2.2.2"}, "10.3.3.3"},
		{"garbage ends the walk at the proxy that passed it", "10.0.0.1:5000", trusted, []string{"X-Forwarded-For", "203.0.113.9, nonsense, 10.2.2.2"}, "10.2.2.2"},
		{"empty element", "10.0.0.1:5000", trusted, []string{"X-Forwarded-For", "203.0.113.9,,"}, "10.0.0.1"},
		{"ports", "10.0.0.1:5000", trusted, []string{"X-Forwarded-For", "203.0.113.9:1234"}, "203.0.113.9"},
		{"IPv6 grouped by /64", "10.0.0.1:5000", trusted, []string{"X-Forwarded-For", "2001:db8:1:2:aaaa:bbbb:cccc:dddd"}, "2001:db8:1:2::"},
		{"IPv6 with port", "10.0.0.1:5000", trusted, []string{"X-Forwarded-For", "[2001:db8:1:2::5]:443"}, "2001:db8:1:2::"},
		{"IPv6 peer grouped", "[2001:db8:7:8:1:2:3:4]:5000", trusted, nil, "2001:db8:7:8::"},
		{"IPv6 trusted peer", "[2001:db8:ffff:1::1]:5000", trusted, []string{"X-Forwarded-For", "203.0.113.9"}, "203.0.113.9"},
		{"IPv4-mapped", "[::ffff:198.51.100.1]:5000", trusted, nil, "198.51.100.1"},
		{"IPv4-mapped trusted", "[::ffff:10.0.0.1]:5000", trusted, []string{"X-Forwarded-For", "::ffff:203.0.113.9"}, "203.0.113.9"},
		{"zone refused", "10.0.0.1:5000", trusted, []string{"X-Forwarded-For", "fe80::1%eth0"}, "10.0.0.1"},
		{"Forwarded", "10.0.0.1:5000", trusted, []string{"Forwarded", `for=192.0.2.60;proto=http;by=203.0.113.43`}, "192.0.2.60"},
		{"Forwarded quoted IPv6", "10.0.0.1:5000", trusted, []string{"Forwarded", `for="[2001:db8:cafe::17]:4711"`}, "2001:db8:cafe::"},
		{"Forwarded chain", "10.0.0.1:5000", trusted, []string{"Forwarded", `for=198.51.100.17, For=203.0.113.9;proto=https, for=10.5.5.5`}, "203.0.113.9"},
		{"Forwarded unknown", "10.0.0.1:5000", trusted, []string{"Forwarded", `for=unknown`}, "10.0.0.1"},
		{"Forwarded obfuscated", "10.0.0.1:5000", trusted, []string{"Forwarded", `for=_hidden, for=10.4.4.4`}, "10.4.4.4"},
		{"Forwarded without for", "10.0.0.1:5000", trusted, []string{"Forwarded", `proto=https`}, "10.0.0.1"},
		{"both agree", "10.0.0.1:5000", trusted, []string{"X-Forwarded-For", "203.0.113.9", "Forwarded", "for=203.0.113.9"}, "203.0.113.9"},
		{"both disagree: one is forged, the proxy it is", "10.0.0.1:5000", trusted, []string{"X-Forwarded-For", "203.0.113.9", "Forwarded", "for=198.51.100.2"}, "10.0.0.1"},
		{"bad remote address", "@", trusted, nil, "invalid IP"},
		{"single trusted address", "192.0.2.7:1", trusted, []string{"X-Forwarded-For", "203.0.113.9"}, "203.0.113.9"},
		{"its neighbour is not trusted", "192.0.2.8:1", trusted, []string{"X-Forwarded-For", "203.0.113.9"}, "192.0.2.8"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := http.Header{}
			for i := 0; i+1 < len(tt.hdr); i += 2 {
				h.Add(tt.hdr[i], tt.hdr[i+1])
			}
			if got := Identify(tt.remote, h, tt.trusted); got.String() != tt.want {
				t.Errorf("Identify(%q, %v) = %v, want %s", tt.remote, h, got, tt.want)
			}
		})
	}
}

// TestTooManyHops: a chain longer than MaxHops ends the walk at the
// last trusted hop read, whatever lies beyond.
func TestTooManyHops(t *testing.T) {
	trusted := mustProxies(t, "10.0.0.0/8")
	hops := append([]string{"203.0.113.9"}, strings.Split(strings.Repeat("10.0.0.2,", MaxHops+5), ",")...)
	h := http.Header{"X-Forwarded-For": {strings.Join(hops[:len(hops)-1], ",")}}
	if got := Identify("10.0.0.1:1", h, trusted); got.String() != "10.0.0.2" {
		t.Errorf("Identify past MaxHops = %v, want 10.0.0.2", got)
	}
}

func TestIdentifyAllocatesNothing(t *testing.T) {
	trusted := mustProxies(t, "10.0.0.0/8")
	h := http.Header{"X-Forwarded-For": {"198.51.100.1, 2001:db8::1, 10.0.0.3"}, "Forwarded": {"for=\"[2001:db8::1]\""}}
	if got := testing.AllocsPerRun(100, func() { Identify("10.0.0.1:1234", h, trusted) }); got != 0 {
		t.Errorf("Identify allocs = %v, want 0", got)
	}
}

func TestRateFlag(t *testing.T) {
	tests := []struct {
		in, want string
		ok       bool
	}{
		{"10/s", "10/s", true}, {"100/h", "100/h", true}, {"2.5/m", "2.5/m", true}, {"7/d", "7/d", true}, {"0", "0", true},
		{"10", "", false}, {"10/w", "", false}, {"/s", "", false}, {"-1/s", "", false}, {"0/s", "", false}, {"NaN/s", "", false}, {"Inf/s", "", false}, {"1e10/s", "", false},
	}
	for _, tt := range tests {
		var r Rate
		err := r.Set(tt.in)
		if (err == nil) != tt.ok || (tt.ok && r.String() != tt.want) {
			t.Errorf("Set(%q) = %v, String %q; want ok %v, %q", tt.in, err, r.String(), tt.ok, tt.want)
		}
	}
}

var t0 = time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)

// TestLimiterBucket: a client gets its burst at once, then the rate;
// another client is unaffected; an exempt visit takes nothing.
func TestLimiterBucket(t *testing.T) {
	l := NewLimiter(LimiterOptions{Visits: Rate{Events: 10, Per: time.Second}, Burst: 20})
	a, b := netip.MustParseAddr("198.51.100.1"), netip.MustParseAddr("198.51.100.2")
	allowed := 0
	for range 100 {
		if ok, _ := l.Visit(a, t0, false); ok {
			allowed++
		}
	}
	if allowed != 20 {
		t.Errorf("burst of 100 at once: %d allowed, want 20", allowed)
	}
	if ok, _ := l.Visit(b, t0, false); !ok {
		t.Error("another client was limited")
	}
	if ok, _ := l.Visit(a, t0, true); !ok {
		t.Error("an exempt visit was limited")
	}
	allowed = 0
	for i := range 100 { // 10 s at 10 per second, one try every 100 ms
		if ok, _ := l.Visit(a, t0.Add(time.Duration(i+1)*100*time.Millisecond), false); ok {
			allowed++
		}
	}
	if allowed != 100 {
		t.Errorf("one visit per 100ms at 10/s: %d of 100 allowed", allowed)
	}
}

func TestLimiterNewKeys(t *testing.T) {
	l := NewLimiter(LimiterOptions{NewKeys: Rate{Events: 3, Per: time.Hour}, Burst: 1})
	a := netip.MustParseAddr("198.51.100.1")
	for i := range 3 {
		if _, may := l.Visit(a, t0, false); !may {
			t.Fatalf("new key %d refused", i+1)
		}
		if ok, _ := l.Created(a, t0); !ok {
			t.Fatalf("new key %d not taken", i+1)
		}
	}
	if _, may := l.Visit(a, t0, false); may {
		t.Error("a 4th new key allowed at 3/h")
	}
	if retry := l.CreateRefused(a, t0); retry != 20*time.Minute {
		t.Errorf("retry after %v, want 20m", retry)
	}
	if _, may := l.Visit(a, t0.Add(20*time.Minute), false); !may {
		t.Error("no new key 20 minutes later")
	}
}

// TestLimiterIsBounded: a flood of distinct clients does not grow the
// table past its cap, and a client forgotten while idle comes back with
// a full bucket, as a new one would.
func TestLimiterIsBounded(t *testing.T) {
	l := NewLimiter(LimiterOptions{Visits: Rate{Events: 1, Per: time.Second}, Burst: 2, NewKeys: Rate{Events: 1, Per: time.Hour}, MaxClients: 640})
	for i := range 20_000 {
		a := netip.AddrFrom4([4]byte{10, byte(i >> 16), byte(i >> 8), byte(i)})
		l.Visit(a, t0, false)
		if n := l.Len(); n > l.Cap() {
			t.Fatalf("after %d clients the table holds %d, cap %d", i+1, n, l.Cap())
		}
	}
	if l.Len() == 0 || l.Cap() != 640 {
		t.Errorf("Len() = %d, Cap() = %d", l.Len(), l.Cap())
	}
}

// FuzzIdentify: whatever the headers, Identify does not panic, returns
// the peer itself (grouped) unless the peer is trusted, and otherwise an
// address that appears in the peer or a header.
func FuzzIdentify(f *testing.F) {
	for _, s := range []string{"203.0.113.9", "1.1.1.1, 10.0.0.2", "[2001:db8::1]:80", "for=\"[::1]\";proto=https", "for=unknown", ",,,", "::ffff:1.2.3.4:80", "[", "1.2.3.4:99999999"} {
		f.Add("10.0.0.1:1", s, s)
	}
	trusted := mustProxies(f, "10.0.0.0/8,::1/128")
	f.Fuzz(func(t *testing.T, remote, xff, fwd string) {
		h := http.Header{}
		if xff != "" {
			h["X-Forwarded-For"] = []string{xff}
		}
		if fwd != "" {
			h["Forwarded"] = []string{fwd}
		}
		got := Identify(remote, h, trusted)
		peer, ok := parseHostPort(remote)
		if !ok {
			if got.IsValid() {
				t.Fatalf("bad remote %q gave %v", remote, got)
			}
			return
		}
		if !trusted.Contains(peer) {
			if got != Group(peer) {
				t.Fatalf("untrusted peer %v: identity %v from headers %v", peer, got, h)
			}
			return
		}
		if got != Group(got) {
			t.Fatalf("identity %v not grouped", got)
		}
	})
}

func FuzzProxiesAndRate(f *testing.F) {
	for _, s := range []string{"10.0.0.0/8", "::1", "1.2.3.4,5.6.7.0/24", "::ffff:10.0.0.0/104", "10/s", "0", "1.5/h"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		var p Proxies
		if p.Set(s) == nil {
			var q Proxies
			if err := q.Set(p.String()); err != nil || q.String() != p.String() {
				t.Fatalf("Proxies %q: String %q does not parse back: %v", s, p.String(), err)
			}
		}
		var r Rate
		if r.Set(s) == nil {
			var q Rate
			if err := q.Set(r.String()); err != nil || q != r {
				t.Fatalf("Rate %q: String %q does not parse back: %v", s, r.String(), err)
			}
			if !r.Off() && !(r.PerSecond() > 0) {
				t.Fatalf("Rate %q: %v per second", s, r.PerSecond())
			}
		}
	})
}

// FuzzParseHostPort: the IPv4 fast path agrees with netip.ParseAddrPort
// whenever it answers.
func FuzzParseHostPort(f *testing.F) {
	for _, s := range []string{"192.0.2.1:1234", "0.0.0.0:0", "255.255.255.255:65535", "01.2.3.4:5", "1.2.3.4:05", "1.2.3.4:65536", "256.1.1.1:1", "1.2.3:4", "[::1]:80", "1.2.3.4", "1.2.3.4:"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		a, ok := parseIPv4Port(s)
		ap, err := netip.ParseAddrPort(s)
		if ok && (err != nil || ap.Addr() != a) {
			t.Fatalf("parseIPv4Port(%q) = %v, netip says %v, %v", s, a, ap, err)
		}
	})
}
