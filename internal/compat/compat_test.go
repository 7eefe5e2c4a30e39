package compat

import (
	"strings"
	"testing"
	"unicode/utf8"

	"visitors/internal/store"
)

func TestKey(t *testing.T) {
	tests := []struct {
		service Service
		parts   []string
		want    string
	}{
		{HITS, []string{"https://github.com/octo/repo"}, "hits/https~3A~2F~2Fgithub.com~2Focto~2Frepo"},
		{CountAPI, []string{"mysite.com", "visits"}, "countapi/mysite.com/visits"},
		{CountAPI, []string{"a~b", "c/d"}, "countapi/a~7Eb/c~2Fd"},
		{VisitorBadge, []string{"octo.repo"}, "visitor-badge/octo.repo"},
		{VisitorBadge, []string{"."}, "visitor-badge/~2E"},
		{VisitorBadge, []string{".."}, "visitor-badge/~2E~2E"},
		{VisitorBadge, []string{"..."}, "visitor-badge/..."},
		{VisitorBadge, []string{"graph"}, "visitor-badge/~67raph"},
		{VisitorBadge, []string{"daily"}, "visitor-badge/~64aily"},
		{VisitorBadge, []string{"stream"}, "visitor-badge/~73tream"},
		{VisitorBadge, []string{"graphs"}, "visitor-badge/graphs"},
		{GHPVC, []string{"Octo Cat"}, "ghpvc/Octo~20Cat"},
		{GHPVC, []string{"é"}, "ghpvc/~C3~A9"},
		{GHPVC, []string{"\xff"}, "ghpvc/~FF"},
		{GHPVC, []string{"<script>"}, "ghpvc/~3Cscript~3E"},
	}
	for _, tt := range tests {
		got, ok := Key(tt.service, tt.parts...)
		if !ok || string(got) != tt.want {
			t.Errorf("Key(%v, %q) = %q, %v, want %q", tt.service, tt.parts, got, ok, tt.want)
		}
		if !store.ValidPublicKey(string(got)) {
			t.Errorf("Key(%v, %q) = %q, not a valid public key", tt.service, tt.parts, got)
		}
	}
}

func TestKeyTooLongOrEmpty(t *testing.T) {
	long := strings.Repeat("a", store.MaxKeyBytes-len(nsGHPVC))
	if k, ok := Key(GHPVC, long); !ok || len(k) != store.MaxKeyBytes {
		t.Errorf("Key of exactly %d bytes = %d bytes, %v; want it taken", store.MaxKeyBytes, len(k), ok)
	}
	if _, ok := Key(GHPVC, long+"a"); ok {
		t.Errorf("Key of %d bytes taken", store.MaxKeyBytes+1)
	}
	if _, ok := Key(GHPVC, long[1:]+"~"); ok {
		t.Error("Key whose escape passes the limit taken")
	}
	if _, ok := Key(CountAPI, "ns", ""); ok {
		t.Error("Key with an empty part taken")
	}
}

// unescape reads a segment back: what makes Key one-to-one.
func unescape(tb testing.TB, seg string) string {
	var b []byte
	for i := 0; i < len(seg); i++ {
		if seg[i] != '~' {
			b = append(b, seg[i])
			continue
		}
		var c byte
		for _, h := range seg[i+1 : i+3] {
			c = c<<4 | byte(strings.IndexRune(upperHex, h))
		}
		b = append(b, c)
		i += 2
	}
	return string(b)
}

// FuzzKey: every name makes a valid public key (or is too long), which
// reads back as the name: two names never share a key.
func FuzzKey(f *testing.F) {
	for _, s := range []string{"", ".", "..", "graph", "a/b", "~", "~7E", "https://x/y", "\xff\x00"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, name string) {
		k, ok := Key(VisitorBadge, name)
		if !ok {
			if name != "" && len(appendSegment(nil, name))+len(nsVisitorBadge) <= store.MaxKeyBytes {
				t.Fatalf("Key(%q) refused", name)
			}
			return
		}
		if !store.ValidPublicKey(string(k)) || !utf8.Valid(k) {
			t.Fatalf("Key(%q) = %q, not a valid public key", name, k)
		}
		if got := unescape(t, string(k[len(nsVisitorBadge):])); got != name {
			t.Fatalf("Key(%q) = %q reads back as %q", name, k, got)
		}
	})
}

func TestServices(t *testing.T) {
	tests := []struct {
		in, want string
		has      []Service
	}{
		{"all", "all", []Service{HITS, CountAPI, VisitorBadge, GHPVC}},
		{"none", "none", nil},
		{"countapi", "countapi", []Service{CountAPI}},
		{"ghpvc,hits", "hits,ghpvc", []Service{HITS, GHPVC}},
		{"hits, countapi, visitor-badge, ghpvc", "all", []Service{HITS, CountAPI, VisitorBadge, GHPVC}},
	}
	for _, tt := range tests {
		var s Services
		if err := s.Set(tt.in); err != nil || s.String() != tt.want {
			t.Errorf("Set(%q) = %v, %v; want %q", tt.in, s, err, tt.want)
		}
		for x := range numServices {
			want := false
			for _, h := range tt.has {
				want = want || h == x
			}
			if s.Has(x) != want {
				t.Errorf("Set(%q).Has(%v) = %v, want %v", tt.in, x, s.Has(x), want)
			}
		}
	}
	var s Services
	for _, bad := range []string{"hit", "hits,", "HITS", "countapi;ghpvc"} {
		if err := s.Set(bad); err == nil {
			t.Errorf("Set(%q) taken", bad)
		}
	}
}

func TestMatch(t *testing.T) {
	tests := []struct {
		path string
		on   Services
		want bool
	}{
		{"/api/count/incr/badge.svg", 1 << HITS, true},
		{"/api/count/keep/badge.svg", 1 << HITS, true},
		{"/api/count/incr/badge.svg", 1 << CountAPI, false},
		{"/api/v1/counters", AllServices, false},
		{"/hit/a/b", 1 << CountAPI, true},
		{"/get/a", 1 << CountAPI, true},
		{"/hi", AllServices, false},
		{"/hit", AllServices, false},
		{"/badge", 1 << VisitorBadge, true},
		{"/badge/x", AllServices, false},
		{"/ghpvc/", 1 << GHPVC, true},
		{"/ghpvc", 1 << GHPVC, true},
		{"/ghpvc/x", AllServices, false},
		{"/counter/a.svg", AllServices, false},
		{"/badge", 0, false},
	}
	for _, tt := range tests {
		if got := New(tt.on).Match(tt.path); got != tt.want {
			t.Errorf("New(%v).Match(%q) = %v, want %v", tt.on, tt.path, got, tt.want)
		}
	}
	h := New(AllServices)
	if n := testing.AllocsPerRun(100, func() { h.Match("/hit/a/b") }); n != 0 {
		t.Errorf("Match allocates %v times, want 0", n)
	}
}

func TestValidCallback(t *testing.T) {
	tests := []struct {
		name string
		want bool
	}{
		{"cb", true},
		{"jQuery123_456", true},
		{"my.ns.cb", true},
		{"$", true},
		{"_x9", true},
		{strings.Repeat("a", 64), true},
		{strings.Repeat("a", 65), false},
		{"", false},
		{"9cb", false},
		{".cb", false},
		{"alert(1)", false},
		{"cb;alert(1)", false},
		{"cb<script>", false},
		{"cb\n", false},
		{"é", false},
		{"a-b", false},
	}
	for _, tt := range tests {
		if got := validCallback(tt.name); got != tt.want {
			t.Errorf("validCallback(%q) = %v, want %v", tt.name, got, tt.want)
		}
	}
}
