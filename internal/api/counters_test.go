package api

import (
	"context"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestRouteKeysReadAndDeleteOnly: a key whose last segment names a route
// below a key (graph, daily, stream), made before the rule, can still be
// read and deleted, but no call makes or changes one.
func TestRouteKeysReadAndDeleteOnly(t *testing.T) {
	e := newEnv(t, 0, nil)
	if _, err := e.st.Set(context.Background(), []byte("ns/graph"), 5); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		method, target, body string
		code                 int
	}{
		{"PUT", "/api/v1/counters/ns/graph", `{"total":1}`, 400},
		{"POST", "/api/v1/counters/ns/graph/add", `{"n":1}`, 400},
		{"GET", "/api/v1/counters/ns/graph", "", 200},
		{"DELETE", "/api/v1/counters/ns/graph", "", 200},
	} {
		w := e.do(tt.method, tt.target, "root", tt.body)
		if w.Code != tt.code || (tt.code == 400 && !strings.Contains(w.Body.String(), "a key's last segment may not be daily, graph or stream")) {
			t.Errorf("%s %s: %d %s, want %d", tt.method, tt.target, w.Code, w.Body, tt.code)
		}
	}
}

// TestAPIMakesOnlyKeysABadgeShows: the owner API makes no key a badge
// could not show (store.ValidPublicKey): a set or an add that would make
// me/été, the empty key or a key with a space is 400 naming the rule, and
// makes nothing. A key that exists, as /hello makes any name, is still
// read, set, added to and deleted. Before, PUT me/été answered 200 and
// made a counter no /counter/ URL could show.
func TestAPIMakesOnlyKeysABadgeShows(t *testing.T) {
	e := newEnv(t, 0, nil)
	made := []struct{ method, target, body string }{
		{"PUT", "/api/v1/counters/me/%C3%A9t%C3%A9", `{"total":5}`},
		{"POST", "/api/v1/counters/me/%C3%A9t%C3%A9/add", `{"n":5}`},
		{"PUT", "/api/v1/counters/me/%C3%A9t%C3%A9", `{"locked":true}`},
		{"PUT", "/api/v1/counters/?key=", `{"total":5}`},
		{"PUT", "/api/v1/counters/a%20b", `{"total":5}`},
		{"POST", "/api/v1/counters/a//b/add", `{"n":1}`},
		{"PUT", "/api/v1/counters/?key=..", `{"total":5}`},
	}
	for _, tt := range made {
		w := e.do(tt.method, tt.target, "root", tt.body)
		if w.Code != 400 || !strings.Contains(w.Body.String(), "makes only keys a badge can show: key must be 1-128 bytes of A-Z a-z 0-9") {
			t.Errorf("%s %s: %d %s, want 400 naming the rule", tt.method, tt.target, w.Code, w.Body)
		}
	}
	if n := e.st.Keys(); n != 0 {
		t.Fatalf("after the refusals the store holds %d keys, want 0", n)
	}
	if w := e.do("PUT", "/api/v1/counters/me/ete", "root", `{"total":5}`); w.Code != 200 {
		t.Errorf("PUT me/ete: %d %s, want 200", w.Code, w.Body)
	}
	// A key /hello made: every call acts on it.
	ctx := context.Background()
	for _, k := range []string{"me/été", ""} {
		if _, _, err := e.st.Visit(ctx, []byte(k), true); err != nil {
			t.Fatal(err)
		}
	}
	for _, tt := range []struct {
		method, target, body string
	}{
		{"PUT", "/api/v1/counters/me/%C3%A9t%C3%A9", `{"total":7}`},
		{"POST", "/api/v1/counters/me/%C3%A9t%C3%A9/add", `{"n":1}`},
		{"GET", "/api/v1/counters/me/%C3%A9t%C3%A9", ""},
		{"PUT", "/api/v1/counters/?key=", `{"total":2}`},
		{"DELETE", "/api/v1/counters/me/%C3%A9t%C3%A9", ""},
	} {
		if w := e.do(tt.method, tt.target, "root", tt.body); w.Code != 200 {
			t.Errorf("%s %s on a key /hello made: %d %s, want 200", tt.method, tt.target, w.Code, w.Body)
		}
	}
	if w := e.do("PUT", "/api/v1/counters/me/%C3%A9t%C3%A9", "root", `{"total":1}`); w.Code != 400 {
		t.Errorf("PUT me/été once deleted: %d %s, want 400", w.Code, w.Body)
	}
}

// heldUniques holds today's unique visitors of some keys, and records
// what it is told to forget.
type heldUniques struct {
	mu     sync.Mutex
	held   [][]byte
	forgot [][]string
}

func (u *heldUniques) Today([]byte, time.Time) uint64 { return 0 }

func (u *heldUniques) Held() [][]byte {
	u.mu.Lock()
	defer u.mu.Unlock()
	return slices.Clone(u.held)
}

func (u *heldUniques) Forget(keys [][]byte) error {
	u.mu.Lock()
	defer u.mu.Unlock()
	var call []string
	for _, k := range keys {
		call = append(call, string(k))
		u.held = slices.DeleteFunc(u.held, func(h []byte) bool { return string(h) == string(k) })
	}
	u.forgot = append(u.forgot, call)
	return nil
}

// TestDeletedCountersForgetTheirUniques: deleting a counter, or an
// import replacing the store without it, forgets its unique visitors of
// today, so that a counter made anew starts with none; an import that
// drops nothing forgets nothing.
func TestDeletedCountersForgetTheirUniques(t *testing.T) {
	u := &heldUniques{held: [][]byte{[]byte("a"), []byte("b"), []byte("c")}}
	e := newEnv(t, 0, func(c *Config) {
		c.Uniques = u
		c.Store = replaceDouble{c.Store}
	})
	for _, k := range []string{"a", "b", "c"} {
		if w := e.do("PUT", "/api/v1/counters/"+k, "root", `{"total":1}`); w.Code/100 != 2 {
			t.Fatalf("PUT %s: %d %s", k, w.Code, w.Body)
		}
	}
	if w := e.do("DELETE", "/api/v1/counters/a", "root", ""); w.Code != http.StatusOK {
		t.Fatalf("DELETE a: %d %s", w.Code, w.Body)
	}
	if w := e.do("POST", "/api/v1/import?replace=true", "root", "b\nc"); w.Code != http.StatusOK {
		t.Fatalf("an import keeping b and c: %d %s", w.Code, w.Body)
	}
	if w := e.do("POST", "/api/v1/import?replace=true", "root", "b"); w.Code != http.StatusOK {
		t.Fatalf("an import keeping b: %d %s", w.Code, w.Body)
	}
	if want := [][]string{{"a"}, {"c"}}; !slices.EqualFunc(u.forgot, want, slices.Equal) {
		t.Errorf("forgot %q, want %q", u.forgot, want)
	}
}

// TestDeleteLogsTheTokenItRevoked: deleting a counter made by open
// creation revokes its token, and the call's log line names it.
func TestDeleteLogsTheTokenItRevoked(t *testing.T) {
	e := newEnv(t, 0, func(c *Config) { c.NoFailureLimit, c.OpenCreate = true, true })
	c := e.mustCreate(t, "k", "k")
	if w := e.do("DELETE", "/api/v1/counters/k", "k", ""); w.Code != 200 {
		t.Fatalf("DELETE k: %d %s", w.Code, w.Body)
	}
	if log := e.log.String(); !strings.Contains(log, `"revoked":"`+c.Token.ID+`"`) || strings.Contains(log, "revoke the deleted counter's token") {
		t.Errorf("the delete's log does not name the token %s it revoked, or says an error:\n%s", c.Token.ID, log)
	}
	if w := e.do("GET", "/api/v1/counters/k", "k", ""); w.Code != http.StatusUnauthorized {
		t.Errorf("the deleted counter's token: %d, want 401", w.Code)
	}
}
