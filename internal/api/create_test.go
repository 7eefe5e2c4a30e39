package api

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"visitors/internal/client"
	"visitors/internal/golden"
	"visitors/internal/store"
	"visitors/internal/store/storetest"
	"visitors/internal/visit"
)

// openEnv is an env with open creation on, and a limit of three new
// counters an hour per client.
func openEnv(t *testing.T, maxKeys int) *env {
	t.Helper()
	rate := client.Rate{Events: 3, Per: time.Hour}
	return newEnv(t, maxKeys, func(c *Config) {
		c.OpenCreate = true
		c.NewKeys = visit.Budget{Limiter: client.NewLimiter(client.LimiterOptions{NewKeys: rate}), Rate: rate}
	})
}

// mustCreate creates key by open creation and keeps its token as name.
func (e *env) mustCreate(t *testing.T, key, name string) Created {
	t.Helper()
	w := e.do("POST", "/api/v1/counters/"+key, "", "")
	if w.Code != http.StatusCreated {
		t.Fatalf("create %s: %d %s", key, w.Code, w.Body)
	}
	var c Created
	if err := json.Unmarshal(w.Body.Bytes(), &c); err != nil {
		t.Fatal(err)
	}
	e.tokens[name] = c.Token.Token
	return c
}

// TestOpenCreateTranscript runs the story of a self-service counter and
// compares every answer with testdata/open.golden: created without a
// token, it is the key's alone; its token sets, adds, locks and deletes
// that key and no other; a key that exists answers 409, the same
// whatever it holds; the fourth creation within the hour is 429.
func TestOpenCreateTranscript(t *testing.T) {
	e := openEnv(t, 0)
	// The empty key, as /hello makes it: root adds to it below (the API
	// makes only keys a badge can show, and changes any that exists).
	if _, err := e.st.Set(context.Background(), nil, 0); err != nil {
		t.Fatal(err)
	}
	steps := []step{
		{"create", "POST", "/api/v1/counters/a/b", "", ""},
		{"again: it exists", "POST", "/api/v1/counters/a/b", "", ""},
		{"a key root made, locked", "PUT", "/api/v1/counters/locked", "root", `{"total":9,"locked":true}`},
		{"it exists: the same answer", "POST", "/api/v1/counters/locked", "", ""},
		{"a key with a token: refused, whatever the token", "POST", "/api/v1/counters/x", "root", ""},
		{"a body: refused", "POST", "/api/v1/counters/x", "", `{"total":5}`},
		{"a key /counter/ refuses", "POST", "/api/v1/counters/a%20b", "", ""},
		{"a dot segment", "POST", "/api/v1/counters/a/../b", "", ""},
		{"the empty key", "POST", "/api/v1/counters/?key=", "", ""},
		{"a parameter", "POST", "/api/v1/counters/y?x=1", "", ""},
		{"read it", "GET", "/api/v1/counters/a/b", "a/b", ""},
		{"add", "POST", "/api/v1/counters/a/b/add", "a/b", `{"n":5}`},
		{"take back, not below 0", "POST", "/api/v1/counters/a/b/add", "a/b", `{"n":-7}`},
		{"set", "PUT", "/api/v1/counters/a/b", "a/b", `{"total":100}`},
		{"lock", "PUT", "/api/v1/counters/a/b", "a/b", `{"locked":true}`},
		{"add to a locked key", "POST", "/api/v1/counters/a/b/add", "a/b", `{"n":-1}`},
		{"a key it starts: refused", "GET", "/api/v1/counters/a/bc", "a/b", ""},
		{"a key under it: refused", "PUT", "/api/v1/counters/a/b/c", "a/b", `{"total":1}`},
		{"add under it: refused", "POST", "/api/v1/counters/a/b/c/add", "a/b", `{"n":1}`},
		{"list: refused", "GET", "/api/v1/counters?prefix=a/b", "a/b", ""},
		{"tokens: refused", "GET", "/api/v1/tokens", "a/b", ""},
		{"root sees the token, without its secret", "GET", "/api/v1/tokens", "root", ""},
		{"no n", "POST", "/api/v1/counters/a/b/add", "a/b", `{}`},
		{"n not whole", "POST", "/api/v1/counters/a/b/add", "a/b", `{"n":1.5}`},
		{"n a string", "POST", "/api/v1/counters/a/b/add", "a/b", `{"n":"1"}`},
		{"n twice", "POST", "/api/v1/counters/a/b/add", "a/b", `{"n":1,"n":-100}`},
		{"n null", "POST", "/api/v1/counters/a/b/add", "a/b", `{"n":null}`},
		{"n too large", "POST", "/api/v1/counters/a/b/add", "a/b", `{"n":4611686018427387905}`},
		{"past a day's most", "POST", "/api/v1/counters/a/b/add", "a/b", `{"n":549755813889}`},
		{"another field", "POST", "/api/v1/counters/a/b/add", "a/b", `{"n":1,"total":2}`},
		{"add without a token", "POST", "/api/v1/counters/a/b/add", "", `{"n":1}`},
		{"GET reads the key that ends in /add", "GET", "/api/v1/counters/a/b/add", "root", ""},
		{"root adds to the empty key", "POST", "/api/v1/counters//add?key=", "root", `{"n":2}`},
		{"a key that ends in /add, created", "POST", "/api/v1/counters/c%2Fadd", "", ""},
		{"the third creation within the hour", "POST", "/api/v1/counters/d", "", ""},
		{"the fourth", "POST", "/api/v1/counters/e", "", ""},
		{"delete: its token goes with it", "DELETE", "/api/v1/counters/a/b", "a/b", ""},
		{"the token of the deleted key", "GET", "/api/v1/counters/a/b", "a/b", ""},
	}
	var out bytes.Buffer
	for _, s := range steps {
		w := e.do(s.method, s.target, s.token, s.body)
		transcribe(t, &out, s, w)
		if w.Code >= 500 {
			t.Errorf("%s: %d %s", s.title, w.Code, w.Body)
		}
		if s.method == "POST" && w.Code == http.StatusCreated {
			var c Created
			if err := json.Unmarshal(w.Body.Bytes(), &c); err != nil {
				t.Fatal(err)
			}
			e.tokens[c.Key] = c.Token.Token
		}
	}
	golden.Check(t, "testdata/open.golden", []byte(storetest.Undated(out.String())))
	ctx := context.Background()
	for key, want := range map[string]store.Counts{"a/b": {}, "a/bc": {}, "a/b/c": {}, "locked": {Total: 9, Locked: true}, "": {Total: 2, Today: 2}, "c/add": {}, "d": {}} {
		if got, _ := e.st.Get(ctx, []byte(key)); got != want {
			t.Errorf("after the story, %q = %+v, want %+v", key, got, want)
		}
	}
	if n := e.st.Keys(); n != 4 {
		t.Errorf("Keys() = %d, want 4 (locked, the empty key, c/add, d)", n)
	}
	ts, _ := e.st.Tokens(ctx)
	if len(ts) != 2 || ts[0].Prefix != "d" || ts[1].Prefix != "c/add" || !ts[0].Exact || !ts[1].Exact {
		t.Errorf("tokens after the story = %+v, want those of d and c/add: a/b's went with its key", ts)
	}
}

// TestOpenCreateOff: without Config.OpenCreate, POST on a counter is
// what it was, a 405 that does not name POST, and creates nothing.
func TestOpenCreateOff(t *testing.T) {
	e := newEnv(t, 0, nil)
	for _, token := range []string{"", "root"} {
		w := e.do("POST", "/api/v1/counters/a", token, "")
		if w.Code != 405 || w.Header().Get("Allow") != "GET, PUT, DELETE" {
			t.Errorf("POST as %q: %d, Allow %q; want 405, GET, PUT, DELETE", token, w.Code, w.Header().Get("Allow"))
		}
	}
	if e.st.Keys() != 0 {
		t.Errorf("Keys() = %d, want 0", e.st.Keys())
	}
	// The add route does not depend on it.
	if w := e.do("POST", "/api/v1/counters/a/add", "root", `{"n":3}`); w.Code != 200 || !strings.Contains(w.Body.String(), `"total": 3`) {
		t.Errorf("add as root: %d %s", w.Code, w.Body)
	}
}

// TestOpenCreateNoHijack: a key deleted and created again by someone
// else is theirs alone: the first creator's token, which named the same
// token id, is refused on it.
func TestOpenCreateNoHijack(t *testing.T) {
	e := newEnv(t, 0, func(c *Config) { c.OpenCreate, c.NoFailureLimit = true, true })
	first := e.mustCreate(t, "k", "alice")
	for _, deleter := range []string{"alice", "root"} {
		if deleter == "root" {
			first = e.mustCreate(t, "k", "alice")
		}
		if w := e.do("DELETE", "/api/v1/counters/k", deleter, ""); w.Code != 200 {
			t.Fatalf("delete as %s: %d %s", deleter, w.Code, w.Body)
		}
		second := e.mustCreate(t, "k", "bob")
		if second.Token.ID != first.Token.ID || second.Token.Token == first.Token.Token {
			t.Fatalf("ids %s, %s: want one id per key, two secrets", first.Token.ID, second.Token.ID)
		}
		for _, call := range []struct{ method, target, body string }{
			{"GET", "/api/v1/counters/k", ""},
			{"PUT", "/api/v1/counters/k", `{"total":1}`},
			{"POST", "/api/v1/counters/k/add", `{"n":1}`},
			{"DELETE", "/api/v1/counters/k", ""},
		} {
			if w := e.do(call.method, call.target, "alice", call.body); w.Code != 401 {
				t.Errorf("deleted by %s: alice's old token: %s %s = %d, want 401", deleter, call.method, call.target, w.Code)
			}
		}
		if w := e.do("POST", "/api/v1/counters/k/add", "bob", `{"n":4}`); w.Code != 200 {
			t.Errorf("bob adds: %d %s", w.Code, w.Body)
		}
		if w := e.do("DELETE", "/api/v1/counters/k", "bob", ""); w.Code != 200 {
			t.Fatalf("bob deletes: %d %s", w.Code, w.Body)
		}
	}
}

// TestOpenCreateFull: a store at -max-keys refuses the creation, and
// keeps no token for it.
func TestOpenCreateFull(t *testing.T) {
	e := newEnv(t, 1, func(c *Config) { c.OpenCreate = true })
	e.mustCreate(t, "one", "one")
	w := e.do("POST", "/api/v1/counters/two", "", "")
	if w.Code != 409 || !strings.Contains(w.Body.String(), "-max-keys") {
		t.Errorf("create on a full store: %d %s; want 409 naming -max-keys", w.Code, w.Body)
	}
	ts, _ := e.st.Tokens(context.Background())
	if len(ts) != 1 {
		t.Errorf("tokens = %+v, want one's alone", ts)
	}
	// Deleting one frees its place: two is created, with a token.
	if w := e.do("DELETE", "/api/v1/counters/one", "one", ""); w.Code != 200 {
		t.Fatalf("delete: %d", w.Code)
	}
	e.mustCreate(t, "two", "two")
}

// TestOpenCreateTrustedProxy: the limit on new counters is per client,
// as -trusted-proxies names it, and shared with the web layer's: a
// limiter with no token left refuses the API's creation too.
func TestOpenCreateTrustedProxy(t *testing.T) {
	var proxies client.Proxies
	if err := proxies.Set("192.0.2.0/24"); err != nil {
		t.Fatal(err)
	}
	rate := client.Rate{Events: 1, Per: time.Hour}
	lim := client.NewLimiter(client.LimiterOptions{NewKeys: rate})
	e := newEnv(t, 0, func(c *Config) {
		c.OpenCreate, c.NewKeys, c.Trusted = true, visit.Budget{Limiter: lim, Rate: rate}, &proxies
	})
	if w := e.do("POST", "/api/v1/counters/a", "", "", "X-Forwarded-For", "203.0.113.1"); w.Code != 201 {
		t.Fatalf("first client: %d %s", w.Code, w.Body)
	}
	if w := e.do("POST", "/api/v1/counters/b", "", "", "X-Forwarded-For", "203.0.113.1"); w.Code != 429 || w.Header().Get("Retry-After") != "3600" {
		t.Errorf("first client again: %d Retry-After %q; want 429, 3600", w.Code, w.Header().Get("Retry-After"))
	}
	if w := e.do("POST", "/api/v1/counters/b", "", "", "X-Forwarded-For", "203.0.113.2"); w.Code != 201 {
		t.Errorf("another client behind the proxy: %d %s", w.Code, w.Body)
	}
	// The web layer took the third client's token: the API refuses it.
	third := client.Identify("198.51.100.7:1", http.Header{}, &proxies)
	lim.Created(third, day0)
	r := httptest.NewRequest("POST", "/api/v1/counters/c", nil)
	r.RemoteAddr = "198.51.100.7:1"
	w := httptest.NewRecorder()
	e.h.ServeHTTP(w, r)
	if w.Code != 429 {
		t.Errorf("a client whose budget the badges spent: %d %s, want 429", w.Code, w.Body)
	}
}

// TestTokensFromBefore: a token made before secrets named their id still
// works, compared with every token; a secret that names an id is
// checked against that token alone, so a right id with a wrong secret,
// or the secret of another token under its id, is refused.
func TestTokensFromBefore(t *testing.T) {
	e := newEnv(t, 0, func(c *Config) { c.NoFailureLimit, c.OpenCreate = true, true })
	old := "vt_auZ4P0-96RtuuItzpI7SR9vliC4leWg0MsG_xSVFSt0" // the form of before: no id
	if err := e.st.PutToken(context.Background(), store.Token{ID: "0cd87274d67084ca", Name: "ci", Prefix: "a/", Hash: sha256.Sum256([]byte(old))}); err != nil {
		t.Fatal(err)
	}
	c := e.mustCreate(t, "a/b", "ab")
	secret := c.Token.Token[strings.Index(c.Token.Token, ".")+1:]
	tests := []struct {
		name, token string
		code        int
	}{
		{"a token from before", old, 200},
		{"a token from before, cut", old[:len(old)-1], 401},
		{"the exact token", c.Token.Token, 200},
		{"its secret without its id", secret, 401},
		{"its id, another secret", "vt_" + c.Token.ID + ".x" + secret[1:], 401},
		{"the old token's id with the exact one's secret", "vt_0cd87274d67084ca." + secret, 401},
		{"an id that is not there", "vt_nope." + secret, 401},
		{"an empty id", "vt_." + secret, 401},
	}
	for _, tt := range tests {
		if w := e.do("GET", "/api/v1/counters/a/b", "Bearer "+tt.token, ""); w.Code != tt.code {
			t.Errorf("%s: %d %s, want %d", tt.name, w.Code, w.Body, tt.code)
		}
	}
}

// TestOpenCreateOrphan: a key's token left without its key (a revoke
// that failed after a delete) is replaced by the next creation, however
// young: the store makes the key and its token in one step, so a token
// without its key is never a creation in progress. Its secret is
// refused from then on.
func TestOpenCreateOrphan(t *testing.T) {
	e := newEnv(t, 0, func(c *Config) { c.OpenCreate, c.NoFailureLimit = true, true })
	ctx := context.Background()
	for _, tt := range []struct {
		name string
		age  time.Duration
		code int
	}{
		{"a young orphan", time.Second, 201},
		{"an old orphan", time.Hour, 201},
	} {
		key := strings.ReplaceAll(tt.name, " ", "-")
		orphan := "vt_" + exactID(key) + ".orphan-secret"
		if err := e.st.PutToken(ctx, store.Token{ID: exactID(key), Name: OpenName, Prefix: key, Exact: true,
			Hash: sha256.Sum256([]byte(orphan)), Created: day0.Add(-tt.age)}); err != nil {
			t.Fatal(err)
		}
		if w := e.do("POST", "/api/v1/counters/"+key, "", ""); w.Code != tt.code {
			t.Errorf("%s: create = %d %s, want %d", tt.name, w.Code, w.Body, tt.code)
		}
		want := 200
		if tt.code == 201 {
			want = 401
		}
		if w := e.do("GET", "/api/v1/counters/"+key, "Bearer "+orphan, ""); w.Code != want {
			t.Errorf("%s: the old token = %d, want %d", tt.name, w.Code, want)
		}
	}
}

// countingStore counts the calls of Tokens, which reads every token.
type countingStore struct {
	Store
	tokens atomic.Int64
}

func (s *countingStore) Tokens(ctx context.Context) ([]store.Token, error) {
	s.tokens.Add(1)
	return s.Store.Tokens(ctx)
}

// TestBadSecretsDoNotReadEveryToken: open creation makes one
// token per key, up to -max-keys of them. A secret without an id (any
// garbage an unauthenticated client sends, or the shape of a token from
// before ids) was compared with every token stored, read anew on each
// call: a store read of up to a million tokens per failed attempt. The
// tokens from before ids are the root's, at most MaxTokens: they are
// read at most once per legacyRefresh, and a match is confirmed by id,
// so that a revoke is still refused at once.
// Found by review (was TestReviewBadSecretsDoNotReadEveryToken).
func TestBadSecretsDoNotReadEveryToken(t *testing.T) {
	var cs *countingStore
	e := newEnv(t, 0, func(c *Config) {
		c.NoFailureLimit, c.OpenCreate = true, true
		cs = &countingStore{Store: c.Store}
		c.Store = cs
	})
	ctx := context.Background()
	for i := range 50 {
		e.mustCreate(t, fmt.Sprint("k", i), fmt.Sprint("k", i))
	}
	old := "vt_auZ4P0-96RtuuItzpI7SR9vliC4leWg0MsG_xSVFSt0" // the form of before: no id
	if err := e.st.PutToken(ctx, store.Token{ID: "0cd87274d67084ca", Name: "ci", Prefix: "k", Hash: sha256.Sum256([]byte(old))}); err != nil {
		t.Fatal(err)
	}
	if w := e.do("GET", "/api/v1/counters/k1", "Bearer "+old, ""); w.Code != 200 {
		t.Fatalf("the token from before: %d %s", w.Code, w.Body)
	}
	before := cs.tokens.Load()
	for i := range 100 {
		for _, junk := range []string{"garbage", "vt_" + strings.Repeat("A", 43), fmt.Sprint("vt_x", i)} {
			if w := e.do("GET", "/api/v1/counters/k1", "Bearer "+junk, ""); w.Code != http.StatusUnauthorized {
				t.Fatalf("%q: %d %s", junk, w.Code, w.Body)
			}
		}
		if w := e.do("GET", "/api/v1/counters/k1", "Bearer "+old, ""); w.Code != 200 {
			t.Fatalf("the token from before: %d %s", w.Code, w.Body)
		}
	}
	if n := cs.tokens.Load() - before; n > 0 {
		t.Errorf("400 calls with secrets without an id read every token %d times; want none within legacyRefresh", n)
	}
	// Revoked, the token from before is refused at once.
	if w := e.do("DELETE", "/api/v1/tokens/0cd87274d67084ca", "root", ""); w.Code != 200 {
		t.Fatalf("revoke: %d %s", w.Code, w.Body)
	}
	if w := e.do("GET", "/api/v1/counters/k1", "Bearer "+old, ""); w.Code != http.StatusUnauthorized {
		t.Errorf("the revoked token from before: %d %s, want 401", w.Code, w.Body)
	}
}

// TestLegacyTokensReadAgainAfterTheirRefresh: the tokens from before ids
// are read again once legacyRefresh has passed since the last read, to
// the nanosecond, and not before, nor when the clock went back.
func TestLegacyTokensReadAgainAfterTheirRefresh(t *testing.T) {
	var cs *countingStore
	var now atomic.Int64 // nanoseconds after day0
	e := newEnv(t, 0, func(c *Config) {
		c.NoFailureLimit, c.OpenCreate = true, true
		cs = &countingStore{Store: c.Store}
		c.Store = cs
		at := c.Now()
		c.Now = func() time.Time { return at.Add(time.Duration(now.Load())) }
	})
	old := "vt_auZ4P0-96RtuuItzpI7SR9vliC4leWg0MsG_xSVFSt0" // the form of before: no id
	if err := e.st.PutToken(context.Background(), store.Token{ID: "0cd87274d67084ca", Name: "ci", Prefix: "k", Hash: sha256.Sum256([]byte(old))}); err != nil {
		t.Fatal(err)
	}
	e.mustCreate(t, "k1", "k1")
	for _, tt := range []struct {
		at   time.Duration
		read bool
	}{
		{0, true},
		{0, false}, // the same instant
		{legacyRefresh - 1, false},
		{legacyRefresh, true},
		{2*legacyRefresh - 1, false},
		{legacyRefresh - 1, true}, // the clock went back
	} {
		now.Store(int64(tt.at))
		before := cs.tokens.Load()
		if w := e.do("GET", "/api/v1/counters/k1", "Bearer "+old, ""); w.Code != 200 {
			t.Fatalf("the token from before at %v: %d %s", tt.at, w.Code, w.Body)
		}
		if read := cs.tokens.Load() > before; read != tt.read {
			t.Errorf("at %v after day0: the tokens read %v, want %v", tt.at, read, tt.read)
		}
	}
}

// replaceDouble is the memory store whose Import with replace keeps the
// keys the body names, one a line, and deletes every other.
type replaceDouble struct{ Store }

func (d replaceDouble) Export(context.Context, io.Writer) error { return nil }

func (d replaceDouble) Import(ctx context.Context, r io.Reader, replace bool) error {
	data, err := io.ReadAll(r)
	if err != nil || !replace {
		return fmt.Errorf("want a replace: %w", store.ErrInvalidDump)
	}
	keep := map[string]bool{}
	for _, k := range strings.Split(string(data), "\n") {
		keep[k] = true
	}
	es, err := d.List(ctx, nil, nil, store.MaxList)
	if err != nil {
		return err
	}
	for _, e := range es {
		if !keep[string(e.Key)] {
			if _, err := d.Delete(ctx, e.Key); err != nil {
				return err
			}
		}
	}
	return nil
}

// TestPrefixOfAnotherKey: a key that starts another is a key of
// its own: it is created while the longer one exists (and the longer
// one while it exists), and an import that replaces and drops it
// revokes its token though a key it starts is kept, and keeps the
// longer key's, and its log line says one token was revoked.
// Found by review (was TestReviewPrefixOfAnotherKey).
func TestPrefixOfAnotherKey(t *testing.T) {
	e := newEnv(t, 0, func(c *Config) {
		c.NoFailureLimit, c.OpenCreate = true, true
		c.Store = replaceDouble{c.Store}
	})
	e.mustCreate(t, "a/b", "a/b")
	e.mustCreate(t, "a", "a")                                            // starts a/b, which exists
	e.mustCreate(t, "a/b/c", "a/b/c")                                    // a/b, which starts it, exists
	if w := e.do("POST", "/api/v1/counters/a/", "", ""); w.Code != 400 { // not a key /counter/ takes
		t.Errorf("create a/: %d %s, want 400", w.Code, w.Body)
	}
	for _, name := range []string{"a", "a/b", "a/b/c"} {
		if w := e.do("POST", "/api/v1/counters/"+name+"/add", name, `{"n":1}`); w.Code != 200 {
			t.Errorf("add to %s: %d %s", name, w.Code, w.Body)
		}
	}
	if w := e.do("POST", "/api/v1/import?replace=true", "root", "a/b\na/b/c"); w.Code != 200 {
		t.Fatalf("import: %d %s", w.Code, w.Body)
	}
	if log := e.log.String(); !strings.Contains(log, `"tokens_revoked":1`) || strings.Contains(log, "revoke the token of a deleted counter") {
		t.Errorf("the import's log says another number of tokens revoked than 1, or an error:\n%s", log)
	}
	for name, code := range map[string]int{"a": 401, "a/b": 200, "a/b/c": 200} {
		if w := e.do("GET", "/api/v1/counters/"+name, name, ""); w.Code != code {
			t.Errorf("after the import, %s's token: %d %s, want %d", name, w.Code, w.Body, code)
		}
	}
	e.mustCreate(t, "a", "a2")
}

// TestExactTokensDoNotCountTowardMaxTokens: open creation's
// tokens, one per counter, do not take the root's MaxTokens.
// Found by review (was TestReviewExactTokensDoNotCountTowardMaxTokens).
func TestExactTokensDoNotCountTowardMaxTokens(t *testing.T) {
	e := newEnv(t, 0, func(c *Config) { c.OpenCreate = true })
	ctx := context.Background()
	for i := range MaxTokens - 1 {
		if err := e.st.PutToken(ctx, store.Token{ID: fmt.Sprintf("t%04d", i), Name: "n", Prefix: "a"}); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 3 {
		e.mustCreate(t, fmt.Sprint("k", i), fmt.Sprint("k", i))
	}
	if w := e.do("POST", "/api/v1/tokens", "root", `{"name":"last","prefix":"b"}`); w.Code != 201 {
		t.Errorf("the root's %dth token with 3 exact ones stored: %d %s", MaxTokens, w.Code, w.Body)
	}
	if w := e.do("POST", "/api/v1/tokens", "root", `{"name":"past","prefix":"b"}`); w.Code != 409 {
		t.Errorf("the root's %dth token: %d %s, want 409", MaxTokens+1, w.Code, w.Body)
	}
}

// TestAddTakesNUpToMaxTotal: add takes n from -MaxTotal to MaxTotal,
// both included (MaxTotal visits in one day then pass the store's day
// bound: 409), and refuses one past either with the range (400).
func TestAddTakesNUpToMaxTotal(t *testing.T) {
	e := newEnv(t, 0, nil)
	msg := fmt.Sprintf(`field \"n\": from %d to %d`, -int64(MaxTotal), int64(MaxTotal))
	for _, tt := range []struct {
		n    string
		code int
	}{
		{fmt.Sprint(int64(MaxTotal)), 409},
		{fmt.Sprint(-int64(MaxTotal)), 200},
		{fmt.Sprint(int64(MaxTotal) + 1), 400},
		{fmt.Sprint(-int64(MaxTotal) - 1), 400},
	} {
		w := e.do("POST", "/api/v1/counters/k/add", "root", `{"n":`+tt.n+`}`)
		if w.Code != tt.code || (tt.code == 400 && !strings.Contains(w.Body.String(), msg)) {
			t.Errorf("add %s: %d %s, want %d", tt.n, w.Code, w.Body, tt.code)
		}
	}
}
