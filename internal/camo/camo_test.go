package camo

import (
	"net/netip"
	"testing"

	"visitors/internal/client"
)

// TestDefaultRanges: the data file parses as -camo-ranges, holds both
// families, and holds the addresses camo was seen fetching from, not
// loopback or a documentation address.
func TestDefaultRanges(t *testing.T) {
	var r client.Ranges
	if err := r.Set(DefaultRanges()); err != nil {
		t.Fatalf("Set(DefaultRanges()) = %v", err)
	}
	tests := []struct {
		addr string
		want bool
	}{
		{"140.82.115.1", true},
		{"192.30.252.10", true},
		{"2a0a:a440::1", true},
		{"127.0.0.1", false},
		{"198.51.100.1", false},
		{"::1", false},
	}
	for _, tt := range tests {
		if got := r.Contains(netip.MustParseAddr(tt.addr)); got != tt.want {
			t.Errorf("DefaultRanges().Contains(%s) = %v, want %v", tt.addr, got, tt.want)
		}
	}
}

// TestIsUserAgent: camo's User-Agent, and only it.
func TestIsUserAgent(t *testing.T) {
	tests := []struct {
		ua   string
		want bool
	}{
		{"github-camo (876de43e)", true},
		{"github-camo", true},
		{"Mozilla/5.0 github-camo", false},
		{"", false},
	}
	for _, tt := range tests {
		if got := IsUserAgent(tt.ua); got != tt.want {
			t.Errorf("IsUserAgent(%q) = %v, want %v", tt.ua, got, tt.want)
		}
	}
}

// camoAddrs are addresses camo's treatment could be given to: GitHub's
// (in the default ranges), loopback, an IPv4-mapped GitHub address, the
// unspecified ones.
var camoAddrs = []string{"140.82.115.1", "192.30.252.10", "2a0a:a440::1", "127.0.0.1", "::1", "::ffff:140.82.115.1", "0.0.0.0", "::", "198.51.100.1"}

// TestEmptyRangesHoldNoAddress: an empty -camo-ranges ("", or only
// commas and spaces) holds no address, even set over the default ranges
// (as the flag is), and so does the zero Ranges: nobody gets camo's
// treatment.
func TestEmptyRangesHoldNoAddress(t *testing.T) {
	for _, s := range []string{"", " ", ",", " , ,"} {
		var r client.Ranges
		if err := r.Set(DefaultRanges()); err != nil {
			t.Fatal(err)
		}
		if err := r.Set(s); err != nil {
			t.Fatalf("Set(%q) = %v, want nil", s, err)
		}
		if !r.Empty() || r.String() != "" {
			t.Errorf("after Set(%q): Empty() = %v, String() = %q; want true, \"\"", s, r.Empty(), r.String())
		}
		for _, a := range camoAddrs {
			if r.Contains(netip.MustParseAddr(a).Unmap()) {
				t.Errorf("after Set(%q): Contains(%s) = true, want false", s, a)
			}
		}
	}
	var zero client.Ranges
	var none *client.Ranges
	for _, a := range camoAddrs {
		if zero.Contains(netip.MustParseAddr(a)) || none.Contains(netip.MustParseAddr(a)) {
			t.Errorf("zero or nil Ranges contains %s, want neither", a)
		}
	}
}
