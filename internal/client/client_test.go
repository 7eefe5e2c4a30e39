package client

import (
	"math"
	"net/http"
	"net/netip"
	"strings"
	"testing"
	"time"

	"visitors/internal/store/storetest"
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
		{"a leading empty element is skipped", "10.0.0.1:5000", trusted, []string{"X-Forwarded-For", ",203.0.113.9"}, "203.0.113.9"},
		{"a leading empty element of a later line ends the walk too", "10.0.0.1:5000", trusted, []string{"X-Forwarded-For", "203.0.113.9", "X-Forwarded-For", ",10.2.2.2"}, "10.2.2.2"},
		{"spaces and tabs around elements", "10.0.0.1:5000", trusted, []string{"X-Forwarded-For", "198.51.100.1, 203.0.113.9 ,\t10.2.2.2 \t"}, "203.0.113.9"},
		{"IPv6 in brackets without a port", "10.0.0.1:5000", trusted, []string{"X-Forwarded-For", "[2001:db8:1:2::5]"}, "2001:db8:1:2::"},
		{"IPv6 with an unclosed bracket", "10.0.0.1:5000", trusted, []string{"X-Forwarded-For", "[2001:db8:1:2::5"}, "10.0.0.1"},
		{"IPv6 with a bad port", "10.0.0.1:5000", trusted, []string{"X-Forwarded-For", "[2001:db8:1:2::5]:44a"}, "10.0.0.1"},
		{"one-digit port", "10.0.0.1:5000", trusted, []string{"X-Forwarded-For", "203.0.113.9:1"}, "203.0.113.9"},
		{"five-digit port with every digit's bounds", "10.0.0.1:5000", trusted, []string{"X-Forwarded-For", "203.0.113.9:59090"}, "203.0.113.9"},
		{"six-digit port", "10.0.0.1:5000", trusted, []string{"X-Forwarded-For", "203.0.113.9:123456"}, "10.0.0.1"},
		{"empty port", "10.0.0.1:5000", trusted, []string{"X-Forwarded-For", "203.0.113.9:"}, "10.0.0.1"},
		{"a port that is not digits", "10.0.0.1:5000", trusted, []string{"X-Forwarded-For", "203.0.113.9:80x"}, "10.0.0.1"},
		{"a port with a character just past the digits", "10.0.0.1:5000", trusted, []string{"X-Forwarded-For", "203.0.113.9:8:"}, "10.0.0.1"},
		{"a port with a character just before the digits", "10.0.0.1:5000", trusted, []string{"X-Forwarded-For", "203.0.113.9:8/"}, "10.0.0.1"},
		{"zone in brackets refused", "10.0.0.1:5000", trusted, []string{"X-Forwarded-For", "[fe80::1%eth0]:80"}, "10.0.0.1"},
		{"Forwarded: for after another pair", "10.0.0.1:5000", trusted, []string{"Forwarded", `proto=https;for=192.0.2.60`}, "192.0.2.60"},
		{"Forwarded: an empty pair first", "10.0.0.1:5000", trusted, []string{"Forwarded", `;for=192.0.2.60`}, "192.0.2.60"},
		{"Forwarded: an empty for= holds no address and is skipped", "10.0.0.1:5000", trusted, []string{"Forwarded", `for=;for=192.0.2.60`}, "192.0.2.60"},
		{"Forwarded: for= is case-insensitive", "10.0.0.1:5000", trusted, []string{"Forwarded", `FOR=192.0.2.60`}, "192.0.2.60"},
		{"Forwarded: a lone quote", "10.0.0.1:5000", trusted, []string{"Forwarded", `for="192.0.2.60`}, "10.0.0.1"},
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

// TestTooManyHops: Identify reads MaxHops addresses of a chain, so a
// client behind MaxHops-1 trusted proxies is found, and a longer chain
// ends the walk at the last trusted hop read, whatever lies beyond.
func TestTooManyHops(t *testing.T) {
	trusted := mustProxies(t, "10.0.0.0/8")
	for _, tt := range []struct {
		proxies int
		want    string
	}{
		{MaxHops - 1, "203.0.113.9"},
		{MaxHops, "10.0.0.2"},
		{MaxHops + 5, "10.0.0.2"},
	} {
		hops := append([]string{"203.0.113.9"}, strings.Split(strings.Repeat("10.0.0.2,", tt.proxies), ",")...)
		h := http.Header{"X-Forwarded-For": {strings.Join(hops[:len(hops)-1], ",")}}
		if got := Identify("10.0.0.1:1", h, trusted); got.String() != tt.want {
			t.Errorf("Identify behind %d proxies = %v, want %s", tt.proxies, got, tt.want)
		}
	}
}

// TestProxiesFlag: ranges and addresses parse, IPv4-mapped ranges of at
// least /96 become IPv4 ranges, and String gives them back as Set takes
// them.
func TestProxiesFlag(t *testing.T) {
	for _, tt := range []struct {
		in, want string
		ok       bool
	}{
		{"10.0.0.0/8, 192.0.2.7", "10.0.0.0/8,192.0.2.7/32", true},
		{"10.1.2.3/8", "10.0.0.0/8", true},
		{"::ffff:10.0.0.0/104", "10.0.0.0/8", true},
		{"::ffff:0.0.0.0/96", "0.0.0.0/0", true},
		{"::ffff:0.0.0.0/95", "", false},
		{"::ffff:192.0.2.7", "192.0.2.7/32", true},
		{"2001:db8::/32", "2001:db8::/32", true},
		{"fe80::1%eth0", "", false},
		{"10.0.0.0/33", "", false},
		{"nonsense", "", false},
		{"", "", true},
	} {
		var p Proxies
		err := p.Set(tt.in)
		if (err == nil) != tt.ok || (tt.ok && p.String() != tt.want) {
			t.Errorf("Set(%q) = %v, String %q; want ok %v, %q", tt.in, err, p.String(), tt.ok, tt.want)
		}
		if tt.ok && p.Empty() != (tt.want == "") {
			t.Errorf("Set(%q): Empty() = %v", tt.in, p.Empty())
		}
	}
	var nilp *Proxies
	if !nilp.Empty() || nilp.String() != "" || nilp.Contains(netip.MustParseAddr("10.0.0.1")) {
		t.Error("a nil Proxies is not empty")
	}
}

func TestIdentifyAllocatesNothing(t *testing.T) {
	trusted := mustProxies(t, "10.0.0.0/8")
	h := http.Header{"X-Forwarded-For": {"198.51.100.1, 2001:db8::1, 10.0.0.3"}, "Forwarded": {"for=\"[2001:db8::1]\""}}
	if got := testing.AllocsPerRun(100, func() { Identify("10.0.0.1:1234", h, trusted) }); got != 0 {
		t.Errorf("Identify allocs = %v, want 0", got)
	}
	if got, want := Address("10.0.0.1:1234", h, trusted), netip.MustParseAddr("2001:db8::1"); got != want {
		t.Errorf("Address = %v, want %v, not grouped", got, want)
	}
}

func TestRateFlag(t *testing.T) {
	tests := []struct {
		in, want string
		ok       bool
	}{
		{"10/s", "10/s", true}, {"100/h", "100/h", true}, {"2.5/m", "2.5/m", true}, {"7/d", "7/d", true}, {"0", "0", true},
		{"1e9/s", "1000000000/s", true},
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

// TestRatePerSecond: a rate in events per second, whatever its unit.
func TestRatePerSecond(t *testing.T) {
	for _, tt := range []struct {
		r    Rate
		want float64
	}{
		{Rate{Events: 10, Per: time.Second}, 10},
		{Rate{Events: 30, Per: time.Minute}, 0.5},
		{Rate{Events: 7200, Per: time.Hour}, 2},
	} {
		if got := tt.r.PerSecond(); got != tt.want {
			t.Errorf("%v per %v = %v per second, want %v", tt.r.Events, tt.r.Per, got, tt.want)
		}
	}
	if got := (Rate{}).PerSecond(); !math.IsInf(got, 1) {
		t.Errorf("an off rate is %v per second, want +Inf", got)
	}
}

var t0 = storetest.At(2, "12:00")

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

// TestLimiterVisitKey: a bucket per key, as camo's per-key bound uses:
// a key's burst is spent, another key's is whole, it refills at the
// rate, and VisitKey allocates nothing.
func TestLimiterVisitKey(t *testing.T) {
	l := NewLimiter(LimiterOptions{Visits: Rate{Events: 3, Per: time.Minute}, Burst: 3})
	allowed := 0
	for range 10 {
		if l.VisitKey([]byte("readme"), t0) {
			allowed++
		}
	}
	if allowed != 3 {
		t.Errorf("10 visits of one key at once: %d allowed, want 3", allowed)
	}
	if !l.VisitKey([]byte("other"), t0) {
		t.Error("another key was limited")
	}
	if !l.VisitKey([]byte("readme"), t0.Add(20*time.Second)) {
		t.Error("no token back 20s later at 3/m")
	}
	var nilL *Limiter
	if !nilL.VisitKey([]byte("readme"), t0) {
		t.Error("a nil Limiter limited a key")
	}
	if got := testing.AllocsPerRun(100, func() { l.VisitKey([]byte("readme"), t0) }); got != 0 {
		t.Errorf("VisitKey allocs = %v, want 0", got)
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

// FuzzParseHostPort: the IPv4 fast path answers exactly for an IPv4
// address and port written as net/http's RemoteAddr has them (netip's
// own form: no leading zeros), and then agrees with
// netip.ParseAddrPort; parseHostPort agrees with netip on everything.
func FuzzParseHostPort(f *testing.F) {
	for _, s := range []string{
		"192.0.2.1:1234", "0.0.0.0:0", "255.255.255.255:65535", "9.99.199.255:9", "10.20.30.40:8080", "1.2.3.4:59999",
		"01.2.3.4:5", "1.02.3.4:5", "1.2.3.4:05", "1.2.3.4:00", "1.2.3.4:65536", "1.2.3.4:99999", "1.2.3.4:100000",
		"256.1.1.1:1", "1.256.1.1:1", "1.2.3.256:1", "1000.1.1.1:1", "1.2.3:4", "1.2.3.4.5:6", ".1.2.3:4", "1..2.3:4",
		"1.2.3.4", "1.2.3.4:", "1.2.3.4::5", "1.2.3.4:5a", "1.2.3.4:a", "1.2.3.4:/", "1.2.3.4::", "1.2.3.4;5", "1/2.3.4:5",
		"[::1]:80", "[::ffff:1.2.3.4]:80", "[fe80::1%eth0]:80", "",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		a, ok := parseIPv4Port(s)
		ap, err := netip.ParseAddrPort(s)
		canonical := err == nil && ap.Addr().Is4() && ap.String() == s
		if ok != canonical || ok && ap.Addr() != a {
			t.Fatalf("parseIPv4Port(%q) = %v, %v; netip says %v, %v", s, a, ok, ap, err)
		}
		got, ok := parseHostPort(s)
		if want := ap.Addr().Unmap().WithZone(""); ok != (err == nil) || ok && got != want {
			t.Fatalf("parseHostPort(%q) = %v, %v; want %v, %v", s, got, ok, want, err == nil)
		}
	})
}

// TestLimiterRetry: the wait for a new key is the time the bucket takes
// to refill to one token, counting what it refilled already; a full
// bucket needs none.
func TestLimiterRetry(t *testing.T) {
	l := NewLimiter(LimiterOptions{NewKeys: Rate{Events: 3, Per: time.Hour}})
	a := netip.MustParseAddr("198.51.100.1")
	if retry := l.CreateRefused(a, t0); retry != 0 {
		t.Errorf("a new client waits %v, want 0", retry)
	}
	for range 3 {
		l.Created(a, t0)
	}
	for _, tt := range []struct {
		after, want time.Duration
	}{
		{0, 20 * time.Minute},
		{5 * time.Minute, 15 * time.Minute},
		{15 * time.Minute, 5 * time.Minute},
		{20 * time.Minute, 0},
		{time.Hour, 0},
	} {
		if retry := l.CreateRefused(a, t0.Add(tt.after)); retry != tt.want {
			t.Errorf("%v after the third key: retry after %v, want %v", tt.after, retry, tt.want)
		}
	}
	if ok, retry := l.Created(a, t0.Add(10*time.Minute)); ok || retry != 10*time.Minute {
		t.Errorf("a 4th key 10 minutes on: %v, retry after %v; want refused, 10m", ok, retry)
	}
}

// TestLimiterRefill: the bucket refills at the rate, by fractions too,
// up to its burst and no further; a clock that steps back takes nothing
// and gives nothing.
func TestLimiterRefill(t *testing.T) {
	l := NewLimiter(LimiterOptions{Visits: Rate{Events: 4, Per: time.Second}, Burst: 2})
	a := netip.MustParseAddr("198.51.100.1")
	at := func(d time.Duration) bool { ok, _ := l.Visit(a, t0.Add(d), false); return ok }
	steps := []struct {
		at   time.Duration
		want bool
	}{
		{0, true}, {0, true}, {0, false}, // the burst
		{100 * time.Millisecond, false},                                               // 0.4 of a token
		{200 * time.Millisecond, false},                                               // 0.8
		{250 * time.Millisecond, true},                                                // 1.0
		{-time.Second, false},                                                         // back in time: still empty
		{250 * time.Millisecond, false},                                               // and nothing given
		{10 * time.Second, true}, {10 * time.Second, true}, {10 * time.Second, false}, // full again: the burst, no more
	}
	for i, s := range steps {
		if got := at(s.at); got != s.want {
			t.Errorf("visit %d at +%v allowed %v, want %v", i, s.at, got, s.want)
		}
	}
}

// TestLimitedClientStaysLimited: while the table has room, other
// clients arriving do not make it forget a limited one.
func TestLimitedClientStaysLimited(t *testing.T) {
	l := NewLimiter(LimiterOptions{Visits: Rate{Events: 1, Per: time.Hour}, Burst: 1})
	a := netip.MustParseAddr("198.51.100.1")
	if ok, _ := l.Visit(a, t0, false); !ok {
		t.Fatal("first visit refused")
	}
	for i := range 5000 {
		l.Visit(netip.AddrFrom4([4]byte{10, 0, byte(i >> 8), byte(i)}), t0, false)
	}
	if ok, _ := l.Visit(a, t0, false); ok {
		t.Error("a limited client was forgotten while the table had room")
	}
	if l.Len() != 5001 {
		t.Errorf("Len() = %d, want 5001", l.Len())
	}
}

// TestDefaultMaxClients: MaxClients 0 remembers DefaultMaxClients,
// rounded down to a multiple of the shards.
func TestDefaultMaxClients(t *testing.T) {
	l := NewLimiter(LimiterOptions{Visits: Rate{Events: 1, Per: time.Second}})
	if c := l.Cap(); c > DefaultMaxClients || c <= DefaultMaxClients-numShards {
		t.Errorf("Cap() = %d, want about %d", c, DefaultMaxClients)
	}
}

// sameShard returns n addresses that fall in one shard of l.
func sameShard(l *Limiter, n int) []netip.Addr {
	var out []netip.Addr
	want, _ := l.shardOf(netip.AddrFrom4([4]byte{192, 0, 2, 0}))
	for i := 0; len(out) < n; i++ {
		a := netip.AddrFrom4([4]byte{192, 0, byte(2 + i>>8), byte(i)})
		if sh, _ := l.shardOf(a); sh == want {
			out = append(out, a)
		}
	}
	return out
}

// TestEvictIdleFirst: when a part of the table is full, a new client
// makes it forget every client whose buckets are full again, and only
// those: a client that used either bucket is kept.
func TestEvictIdleFirst(t *testing.T) {
	for _, tt := range []struct {
		name     string
		visits   Rate
		newKeys  Rate
		activeBy string // what the active clients used: "visit", "key" or both
	}{
		{"visits", Rate{Events: 1, Per: time.Minute}, Rate{}, "visit"},
		{"new keys", Rate{}, Rate{Events: 2, Per: time.Minute}, "key"},
		{"both, a visit", Rate{Events: 1, Per: time.Minute}, Rate{Events: 2, Per: time.Minute}, "visit"},
		{"both, a key", Rate{Events: 1, Per: time.Minute}, Rate{Events: 2, Per: time.Minute}, "key"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			l := NewLimiter(LimiterOptions{Visits: tt.visits, Burst: 2, NewKeys: tt.newKeys, MaxClients: 8 * numShards})
			c := sameShard(l, 9)
			for _, a := range c[:6] { // idle by now: an hour ago
				l.Visit(a, t0.Add(-time.Hour), false)
				l.Created(a, t0.Add(-time.Hour))
			}
			for _, a := range c[6:8] { // active
				if tt.activeBy == "visit" {
					l.Visit(a, t0, false)
				} else {
					l.Created(a, t0)
				}
			}
			if n := l.Len(); n != 8 {
				t.Fatalf("Len() = %d, want 8", n)
			}
			l.Visit(c[8], t0, false)
			if n := l.Len(); n != 3 {
				t.Errorf("after a 9th client in a part of 8: Len() = %d, want 3 (the two active ones and the new one)", n)
			}
			sh, _ := l.shardOf(c[0])
			for _, a := range c[6:] {
				if _, k := l.shardOf(a); sh.t.get(k) == nil {
					t.Errorf("%v was forgotten", a)
				}
			}
		})
	}
}

// TestEvictAnEighth: when every client of a full part of the table is
// active, a new client makes it forget an eighth of them, at least one.
func TestEvictAnEighth(t *testing.T) {
	for _, per := range []int{4, 16} {
		l := NewLimiter(LimiterOptions{Visits: Rate{Events: 1, Per: time.Minute}, MaxClients: per * numShards})
		c := sameShard(l, per+1)
		for _, a := range c[:per] {
			l.Visit(a, t0, false)
		}
		l.Visit(c[per], t0, false)
		if n, want := l.Len(), per-max(1, per/8)+1; n != want {
			t.Errorf("a %d-client part: Len() = %d after one more, want %d", per, n, want)
		}
	}
}
