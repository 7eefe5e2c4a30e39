package api

import (
	"context"
	"encoding/json"
	"net/url"
	"slices"
	"strings"
	"testing"
)

// TestScopedListStaysInItsPrefix: a token scoped to "team/" lists keys
// that start with "team/" only, whatever prefix it asks for: a prefix
// inside its own narrows the list; one its own starts with ("", "t",
// "team") lists its own prefix; any other is 403, and lists nothing.
// Followed page by page (limit 2), from any cursor, the pages hold
// exactly the keys of that prefix, and the last has no next.
func TestScopedListStaysInItsPrefix(t *testing.T) {
	e := newEnv(t, 0, nil)
	keys := []string{"", "a", "t", "tea", "team", "team/", "team/a", "team/b/c", "team/é", "team0", "team\u00a0/x", "teamz/q", "tzz", "zzz"}
	// Made as /hello or an import makes them: the API makes only keys a
	// badge can show, and "team/" or "team/é" is none.
	for _, k := range keys {
		if k == "" {
			continue // listed by no prefix but its own
		}
		if _, err := e.st.Set(context.Background(), []byte(k), 1); err != nil {
			t.Fatalf("Set(%q): %v", k, err)
		}
	}
	w := e.do("POST", "/api/v1/tokens", "root", `{"name":"team","prefix":"team/"}`)
	var nt NewToken
	if err := json.Unmarshal(w.Body.Bytes(), &nt); err != nil || w.Code != 201 {
		t.Fatalf("root makes a token for team/: %d %s", w.Code, w.Body)
	}
	e.tokens["team"] = nt.Token
	under := func(p string) []string {
		var ks []string
		for _, k := range keys {
			if strings.HasPrefix(k, p) && k != "" {
				ks = append(ks, k)
			}
		}
		return ks
	}
	tests := []struct {
		prefix *string // nil: no prefix parameter
		want   []string
	}{
		{nil, under("team/")},
		{ptr(""), under("team/")},
		{ptr("t"), under("team/")},
		{ptr("tea"), under("team/")},
		{ptr("team"), under("team/")},
		{ptr("team/"), under("team/")},
		{ptr("team/b"), under("team/b")},
		{ptr("team/é"), under("team/é")},
		{ptr("team/zz"), nil},
		{ptr("team0"), nil},
		{ptr("teamz"), nil},
		{ptr("team\u00a0"), nil},
		{ptr("a"), nil},
		{ptr("zzz"), nil},
		{ptr("team//"), nil},
	}
	for _, tt := range tests {
		for _, after := range []*string{nil, ptr(""), ptr("a"), ptr("team"), ptr("team/a")} {
			q := url.Values{"limit": {"2"}}
			if tt.prefix != nil {
				q.Set("prefix", *tt.prefix)
			}
			refused := tt.prefix != nil && !strings.HasPrefix(*tt.prefix, "team/") && !strings.HasPrefix("team/", *tt.prefix)
			var got []string
			cursor := after
			for page := 0; ; page++ {
				if cursor != nil {
					q.Set("after", *cursor)
				}
				target := "/api/v1/counters?" + q.Encode()
				w := e.do("GET", target, "team", "")
				if refused {
					if w.Code != 403 {
						t.Errorf("GET %s as team/ = %d %s, want 403", target, w.Code, w.Body)
					}
					break
				}
				var p Page
				if err := json.Unmarshal(w.Body.Bytes(), &p); err != nil || w.Code != 200 {
					t.Fatalf("GET %s as team/ = %d %s, want 200", target, w.Code, w.Body)
				}
				if page > 0 && len(p.Counters) == 0 {
					t.Errorf("GET %s as team/: an empty page after a next; the last page within the prefix has no next", target)
				}
				for _, c := range p.Counters {
					got = append(got, c.Key)
				}
				if p.Next == nil || page > len(keys) {
					break
				}
				cursor = p.Next
			}
			want := tt.want
			if after != nil {
				want = slices.DeleteFunc(slices.Clone(want), func(k string) bool { return k <= *after })
			}
			for _, k := range got {
				if !strings.HasPrefix(k, "team/") {
					t.Errorf("prefix %s, after %s: token team/ listed %q, outside its prefix", show(tt.prefix), show(after), k)
				}
			}
			if !refused && !slices.Equal(got, want) {
				t.Errorf("prefix %s, after %s: token team/ listed %q, want %q", show(tt.prefix), show(after), got, want)
			}
		}
	}
}
