package compat

import (
	"strings"
	"testing"
)

func TestCheckKey(t *testing.T) {
	tests := []struct {
		key  string
		want string // a substring of the error; "" for none
	}{
		{"hits/https~3A~2F~2Fgithub.com~2Fo~2Fr", ""},
		{"countapi/mysite.com/visits", ""},
		{"visitor-badge/~2E~2E", ""},
		{"ghpvc/~67raph", ""},
		{"mine/anything here", ""}, // no service's namespace
		{"hitsx/a", ""},
		{"hits/https://github.com/o/r", `did you mean "hits/https~3A~2F~2Fgithub.com~2Fo~2Fr"?`},
		{"countapi/ns/a b", `did you mean "countapi/ns/a~20b"?`},
		{"countapi/visits", "no URL of countapi counts into it"},
		{"countapi/a/b/c", "no URL of countapi counts into it"},
		{"ghpvc/", "no URL of ghpvc"},
		{"ghpvc/a~2fb", "no URL of ghpvc"},
		{"ghpvc/a~2", "no URL of ghpvc"},
		{"ghpvc/~61", "no URL of ghpvc"}, // "a" escaped: not the key /ghpvc/?username=a counts into
		{"ghpvc/..", "no URL of ghpvc"},
		{"visitor-badge/graph", "no URL of visitor-badge"},
	}
	for _, tt := range tests {
		err := CheckKey(tt.key)
		if tt.want == "" && err != nil || tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)) {
			t.Errorf("CheckKey(%q) = %v, want %q", tt.key, err, tt.want)
		}
	}
}

// FuzzCheckKey: every key a URL counts into passes CheckKey.
func FuzzCheckKey(f *testing.F) {
	for _, s := range []string{"", ".", "..", "graph", "a/b", "~", "~7E", "https://x/y", "\xff\x00"} {
		f.Add(s, s)
	}
	f.Fuzz(func(t *testing.T, a, b string) {
		for s := range numServices {
			parts := []string{a, b}[:namespaceParts[s]]
			if k, ok := Key(s, parts...); ok {
				if err := CheckKey(string(k)); err != nil {
					t.Fatalf("CheckKey(Key(%v, %q) = %q) = %v", s, parts, k, err)
				}
			}
		}
	})
}
