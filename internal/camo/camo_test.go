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
