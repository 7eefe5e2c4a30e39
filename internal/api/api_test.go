package api

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"visitors/internal/client"
	"visitors/internal/golden"
	"visitors/internal/servertest"
	"visitors/internal/store"
	"visitors/internal/store/memstore"
	"visitors/internal/store/storetest"
)

// rootSecret is the tests' root token.
const rootSecret = "root-token-for-the-tests-0123456789"

var day0 = storetest.At(3, "12:00")

// fixedUniques answers 7 unique visitors for every key.
type fixedUniques struct{}

func (fixedUniques) Today([]byte, time.Time) uint64 { return 7 }
func (fixedUniques) Held() [][]byte                 { return nil }
func (fixedUniques) Forget([][]byte) error          { return nil }

// env is a Handler over a fresh memory store, its log, and the secrets
// of the tokens made through it, by name.
type env struct {
	h      *Handler
	st     *memstore.Store
	log    *servertest.Buffer
	tokens map[string]string
}

// newEnv returns an env whose clock stands at day0 and whose secrets
// come from a seeded generator, so that answers are the same each run.
func newEnv(tb testing.TB, maxKeys int, mod func(*Config)) *env {
	tb.Helper()
	st := memstore.New(memstore.Options{MaxKeys: maxKeys, Now: func() time.Time { return day0 }})
	tb.Cleanup(func() { st.Close() })
	e := &env{st: st, log: new(servertest.Buffer), tokens: map[string]string{"root": rootSecret}}
	c := Config{
		Store:    st,
		RootHash: sha256.Sum256([]byte(rootSecret)),
		Log:      zerolog.New(e.log),
		Uniques:  fixedUniques{},
		Now:      func() time.Time { return day0 },
		Rand:     rand.NewChaCha8([32]byte{1}),
	}
	if mod != nil {
		mod(&c)
	}
	e.h = New(c)
	return e
}

// do serves one call as token (a name in e.tokens, or the literal
// Authorization header when it has a space, or "" for none) from
// remote, with body as JSON unless ct says otherwise.
func (e *env) do(method, target, token, body string, hdr ...string) *httptest.ResponseRecorder {
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	r := httptest.NewRequest(method, target, rd)
	r.RemoteAddr = "192.0.2.1:1234"
	if body != "" {
		r.Header.Set("Content-Type", "application/json")
	}
	switch secret, ok := e.tokens[token]; {
	case ok:
		r.Header.Set("Authorization", "Bearer "+secret)
	case strings.Contains(token, " "):
		r.Header.Set("Authorization", token)
	case token != "":
		r.Header.Set("Authorization", "Bearer "+token)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		r.Header.Set(hdr[i], hdr[i+1])
	}
	w := httptest.NewRecorder()
	e.h.ServeHTTP(w, r)
	return w
}

// step is one call of a transcript test: what it is called in the
// golden file, and the request e.do makes.
type step struct {
	title, method, target, token, body string
}

// transcribe writes s and its answer w to a transcript: the title, the
// request as s writes it (the token by name), the status, the headers a
// client acts on and the body, which must be JSON.
func transcribe(tb testing.TB, out *bytes.Buffer, s step, w *httptest.ResponseRecorder) {
	tb.Helper()
	fmt.Fprintf(out, "### %s\n%s %s", s.title, s.method, s.target)
	if s.token != "" {
		fmt.Fprintf(out, " (as %s)", s.token)
	}
	if s.body != "" {
		fmt.Fprintf(out, "\n%s", s.body)
	}
	fmt.Fprintf(out, "\n--> %d\n", w.Code)
	for _, h := range []string{"Allow", "Retry-After", "Www-Authenticate"} {
		if v := w.Header().Get(h); v != "" {
			fmt.Fprintf(out, "%s: %s\n", h, v)
		}
	}
	if !json.Valid(w.Body.Bytes()) {
		tb.Errorf("%s: the body is not JSON: %q", s.title, w.Body)
	}
	out.Write(w.Body.Bytes())
	out.WriteByte('\n')
}

// TestTranscript runs the owner's story through every call and compares
// each answer with testdata/transcript.golden: the root token makes a
// scoped token; it sets, reads, locks, lists and deletes inside its
// prefix, and is refused outside it; revoked, it is refused at once.
func TestTranscript(t *testing.T) {
	e := newEnv(t, 0, nil)
	// Keys no badge shows, as /hello makes them: the API changes them,
	// and makes none.
	for _, k := range []string{"octocat/été", ""} {
		if _, err := e.st.Set(context.Background(), []byte(k), 0); err != nil {
			t.Fatal(err)
		}
	}
	steps := []step{
		{"no token", "GET", "/api/v1/counters", "", ""},
		{"root makes a token for octocat/", "POST", "/api/v1/tokens", "root", `{"name":"ci","prefix":"octocat/"}`},
		{"the empty prefix is root's", "POST", "/api/v1/tokens", "root", `{"name":"all","prefix":""}`},
		{"the scoped token may not make tokens", "POST", "/api/v1/tokens", "ci", `{"name":"x","prefix":"octocat/x"}`},
		{"root lists the tokens, without secrets", "GET", "/api/v1/tokens", "root", ""},
		{"a start value", "PUT", "/api/v1/counters/octocat/hello-world", "ci", `{"total":1200}`},
		{"read it", "GET", "/api/v1/counters/octocat/hello-world", "ci", ""},
		{"percent-encoded slash: the same key", "GET", "/api/v1/counters/octocat%2Fhello-world", "ci", ""},
		{"a key no badge shows, not made yet: refused", "PUT", "/api/v1/counters/octocat/%C3%BC", "ci", `{"total":5}`},
		{"another, which /hello made, made locked", "PUT", "/api/v1/counters/octocat/%C3%A9t%C3%A9", "ci", `{"total":5,"locked":true}`},
		{"outside the prefix", "PUT", "/api/v1/counters/torvalds/linux", "ci", `{"total":1}`},
		{"outside the prefix, as a parameter", "GET", "/api/v1/counters/?key=torvalds/linux", "ci", ""},
		{"list within the prefix", "GET", "/api/v1/counters?limit=1", "ci", ""},
		{"the next page", "GET", "/api/v1/counters?limit=1&after=octocat/hello-world", "ci", ""},
		{"list outside the prefix", "GET", "/api/v1/counters?prefix=torvalds/", "ci", ""},
		{"a reset", "PUT", "/api/v1/counters/octocat/hello-world", "ci", `{"total":0}`},
		{"unlock", "PUT", "/api/v1/counters/octocat/%C3%A9t%C3%A9", "ci", `{"locked":false}`},
		{"delete", "DELETE", "/api/v1/counters/octocat/hello-world", "ci", ""},
		{"delete again", "DELETE", "/api/v1/counters/octocat/hello-world", "ci", ""},
		{"root sets the empty key", "PUT", "/api/v1/counters/?key=", "root", `{"total":3}`},
		{"root lists everything", "GET", "/api/v1/counters", "root", ""},
		{"strictly after the empty key", "GET", "/api/v1/counters?after=", "root", ""},
		{"export on the memory store", "GET", "/api/v1/export", "root", ""},
		{"the scoped token may not export", "GET", "/api/v1/export", "ci", ""},
		{"revoke", "DELETE", "/api/v1/tokens/{ci}", "root", ""},
		{"the revoked token", "GET", "/api/v1/counters/octocat/x", "ci", ""},
		{"revoke again", "DELETE", "/api/v1/tokens/{ci}", "root", ""},
		{"an unknown path", "GET", "/api/v1/nope", "root", ""},
		{"a method the path does not take", "PATCH", "/api/v1/counters/octocat/x", "root", ""},
	}
	var out bytes.Buffer
	ids := map[string]string{}
	for _, s := range steps {
		target := s.target
		for name, id := range ids {
			target = strings.ReplaceAll(target, "{"+name+"}", id)
		}
		w := e.do(s.method, target, s.token, s.body)
		transcribe(t, &out, s, w)
		if ct := w.Header().Get("Content-Type"); ct != "application/json" {
			t.Errorf("%s: Content-Type %q, want application/json", s.title, ct)
		}
		if s.method == "POST" && w.Code == http.StatusCreated {
			var nt NewToken
			if err := json.Unmarshal(w.Body.Bytes(), &nt); err != nil {
				t.Fatal(err)
			}
			e.tokens[nt.Name], ids[nt.Name] = nt.Token, nt.ID
		}
	}
	golden.Check(t, "testdata/transcript.golden", []byte(storetest.Undated(out.String())))
	// After the story: what the store holds.
	ctx := context.Background()
	if c, _ := e.st.Get(ctx, []byte("octocat/été")); c != (store.Counts{Total: 5}) {
		t.Errorf("octocat/été = %+v, want total 5, unlocked", c)
	}
	if c, _ := e.st.Get(ctx, []byte("")); c.Total != 3 {
		t.Errorf("the empty key = %+v, want total 3", c)
	}
	if c, _ := e.st.Get(ctx, []byte("torvalds/linux")); c != (store.Counts{}) {
		t.Errorf("torvalds/linux = %+v, want nothing: the call was refused", c)
	}
	if e.st.Keys() != 2 {
		t.Errorf("Keys() = %d, want 2 (the deleted key is gone)", e.st.Keys())
	}
}

// TestAudit: every change writes one audit line with the token's name,
// the call, the key, before and after; no line holds a secret.
func TestAudit(t *testing.T) {
	e := newEnv(t, 0, nil)
	w := e.do("POST", "/api/v1/tokens", "root", `{"name":"ci","prefix":"a/"}`)
	var nt NewToken
	if err := json.Unmarshal(w.Body.Bytes(), &nt); err != nil || w.Code != 201 {
		t.Fatalf("create = %d %s", w.Code, w.Body)
	}
	e.tokens["ci"] = nt.Token
	e.do("PUT", "/api/v1/counters/a/b", "ci", `{"total":10}`)
	e.do("PUT", "/api/v1/counters/a/b", "ci", `{"locked":true}`)
	e.do("PUT", "/api/v1/counters/z", "ci", `{"total":10}`) // refused: no line
	e.do("GET", "/api/v1/counters/a/b", "ci", "")           // a read: no line
	e.do("DELETE", "/api/v1/counters/a/b", "ci", "")
	e.do("DELETE", "/api/v1/tokens/"+nt.ID, "root", "")
	var lines []map[string]any
	for l := range strings.Lines(e.log.String()) {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("log line %q: %v", l, err)
		}
		lines = append(lines, m)
	}
	want := []string{
		`{"after":{"id":"` + nt.ID + `","name":"ci","prefix":"a/"},"audit":"create token","call":"POST /api/v1/tokens","level":"info","message":"api change","token":"root"}`,
		`{"after":{"locked":false,"today":0,"total":10},"audit":"set","before":{"locked":false,"today":0,"total":0},"call":"PUT /api/v1/counters/a/b","key":"a/b","level":"info","message":"api change","token":"ci","token_id":"` + nt.ID + `"}`,
		`{"after":{"locked":true,"today":0,"total":10},"audit":"set","before":{"locked":false,"today":0,"total":10},"call":"PUT /api/v1/counters/a/b","key":"a/b","level":"info","message":"api change","token":"ci","token_id":"` + nt.ID + `"}`,
		`{"audit":"delete","before":{"locked":true,"today":0,"total":10},"call":"DELETE /api/v1/counters/a/b","key":"a/b","level":"info","message":"api change","token":"ci","token_id":"` + nt.ID + `"}`,
		`{"audit":"revoke token","before":{"id":"` + nt.ID + `","name":"ci","prefix":"a/"},"call":"DELETE /api/v1/tokens/` + nt.ID + `","level":"info","message":"api change","token":"root"}`,
	}
	if len(lines) != len(want) {
		t.Fatalf("%d log lines, want %d:\n%s", len(lines), len(want), e.log)
	}
	for i, m := range lines {
		got, _ := json.Marshal(m) // keys sorted
		if string(got) != want[i] {
			t.Errorf("line %d:\n got %s\nwant %s", i, got, want[i])
		}
	}
	for _, secret := range []string{rootSecret, nt.Token, nt.Token[len(TokenPrefix):]} {
		if strings.Contains(e.log.String(), secret) {
			t.Errorf("the log holds a secret %q", secret)
		}
	}
}

// TestAuth: a missing, malformed, wrong or revoked token is 401 with
// WWW-Authenticate; past five failures a client gets 429 with
// Retry-After, its right token included, until its budget refills;
// another client is not affected.
func TestAuth(t *testing.T) {
	now := day0
	e := newEnv(t, 0, func(c *Config) { c.Now = func() time.Time { return now } })
	tests := []struct {
		name, auth string
		code       int
		challenge  string
	}{
		{"root", "root", 200, ""},
		{"no header", "", 401, `Bearer realm="visitors"`},
		{"another scheme", "Basic dXNlcjpwYXNz", 401, `Bearer realm="visitors"`},
		{"an empty token", "Bearer ", 401, `Bearer realm="visitors"`},
		{"scheme in lower case", "bearer " + rootSecret, 200, ""},
		{"wrong", "vt_wrong", 401, `Bearer realm="visitors", error="invalid_token"`},
		{"the root token's prefix", rootSecret[:20], 401, `Bearer realm="visitors", error="invalid_token"`},
		{"the root token and more", rootSecret + "x", 401, `Bearer realm="visitors", error="invalid_token"`},
	}
	for _, tt := range tests {
		w := e.do("GET", "/api/v1/counters", tt.auth, "")
		if w.Code != tt.code || w.Header().Get("WWW-Authenticate") != tt.challenge {
			t.Errorf("%s: %d, WWW-Authenticate %q; want %d, %q", tt.name, w.Code, w.Header().Get("WWW-Authenticate"), tt.code, tt.challenge)
		}
	}
	// Three failures so far; two more are 401, then 429, right token or not.
	for i := range 2 {
		if w := e.do("GET", "/api/v1/counters", "wrong-again", ""); w.Code != 401 {
			t.Fatalf("failure %d: %d, want 401", 4+i, w.Code)
		}
	}
	for _, tok := range []string{"wrong-again", "root", ""} {
		w := e.do("GET", "/api/v1/counters", tok, "")
		if w.Code != 429 || w.Header().Get("Retry-After") != "12" || !strings.Contains(w.Body.String(), "too many failed attempts") {
			t.Errorf("past five failures, as %q: %d Retry-After %q %s; want 429, Retry-After 12", tok, w.Code, w.Header().Get("Retry-After"), w.Body)
		}
	}
	r := httptest.NewRequest("GET", "/api/v1/counters", nil)
	r.RemoteAddr = "198.51.100.9:1"
	r.Header.Set("Authorization", "Bearer "+rootSecret)
	w := httptest.NewRecorder()
	e.h.ServeHTTP(w, r)
	if w.Code != 200 {
		t.Errorf("another client: %d, want 200", w.Code)
	}
	now = now.Add(12 * time.Second)
	if w := e.do("GET", "/api/v1/counters", "root", ""); w.Code != 200 {
		t.Errorf("12 s later: %d, want 200", w.Code)
	}
}

// TestRefusals: every malformed call is a 4xx with a JSON error that
// says what is wrong, and changes nothing.
func TestRefusals(t *testing.T) {
	e := newEnv(t, 2, nil)
	if w := e.do("PUT", "/api/v1/counters/a", "root", `{"total":1}`); w.Code != 200 {
		t.Fatalf("setup: %d %s", w.Code, w.Body)
	}
	long := strings.Repeat("k", store.MaxKeyBytes)
	tests := []struct {
		name, method, target, body string
		hdr                        []string
		code                       int
		want                       string
	}{
		{"no content type", "PUT", "/api/v1/counters/a", `{"total":1}`, []string{"Content-Type", ""}, 415, "Content-Type: application/json"},
		{"text", "PUT", "/api/v1/counters/a", `{"total":1}`, []string{"Content-Type", "text/plain"}, 415, "Content-Type: application/json"},
		{"json with charset", "PUT", "/api/v1/counters/a", `{"total":2}`, []string{"Content-Type", "application/json; charset=utf-8"}, 200, `"total": 2`},
		{"unknown field", "PUT", "/api/v1/counters/a", `{"total":1,"color":"red"}`, nil, 400, `unknown field \"color\"`},
		{"a field in another case", "PUT", "/api/v1/counters/a", `{"Total":1}`, nil, 400, `unknown field \"Total\"`},
		{"null", "PUT", "/api/v1/counters/a", `{"total":null}`, nil, 400, `field \"total\" is null`},
		{"a field twice", "PUT", "/api/v1/counters/a", `{"total":-1,"total":5}`, nil, 400, `field \"total\" given twice`},
		{"a field twice, the same", "PUT", "/api/v1/counters/a", `{"locked":true,"locked":true}`, nil, 400, `field \"locked\" given twice`},
		{"a token field twice", "POST", "/api/v1/tokens", `{"name":"a","prefix":"","prefix":"a"}`, nil, 400, `field \"prefix\" given twice`},
		{"negative", "PUT", "/api/v1/counters/a", `{"total":-1}`, nil, 400, `field \"total\": want a whole number`},
		{"fraction", "PUT", "/api/v1/counters/a", `{"total":1.5}`, nil, 400, `field \"total\": want a whole number`},
		{"string", "PUT", "/api/v1/counters/a", `{"total":"1"}`, nil, 400, `field \"total\": want a whole number`},
		{"too large", "PUT", "/api/v1/counters/a", `{"total":4611686018427387905}`, nil, 400, "at most 4611686018427387904"},
		{"past uint64", "PUT", "/api/v1/counters/a", `{"total":18446744073709551616}`, nil, 400, `field \"total\"`},
		{"locked not a bool", "PUT", "/api/v1/counters/a", `{"locked":"yes"}`, nil, 400, `field \"locked\": want true or false`},
		{"nothing to change", "PUT", "/api/v1/counters/a", `{}`, nil, 400, "nothing to change"},
		{"not an object", "PUT", "/api/v1/counters/a", `[1]`, nil, 400, "a JSON array where an object is wanted"},
		{"two values", "PUT", "/api/v1/counters/a", `{"total":1}{"total":2}`, nil, 400, "more than one JSON value"},
		{"cut", "PUT", "/api/v1/counters/a", `{"total":1`, nil, 400, "not a JSON object"},
		{"empty body", "PUT", "/api/v1/counters/a", "", []string{"Content-Type", "application/json"}, 400, "not a JSON object"},
		{"null body", "PUT", "/api/v1/counters/a", "null", nil, 400, "not a JSON object"},
		{"not UTF-8", "PUT", "/api/v1/counters/a", "{\"total\":1,\"\xff\":1}", nil, 400, "not valid UTF-8"},
		{"over 1 MiB", "PUT", "/api/v1/counters/a", `{"total":1` + strings.Repeat(" ", MaxBodyBytes) + `}`, nil, 413, "larger than 1048576 bytes"},
		{"a new key past -max-keys", "PUT", "/api/v1/counters/b", `{"total":1}`, nil, 200, `"total": 1`},
		{"another past -max-keys", "PUT", "/api/v1/counters/c", `{"total":1}`, nil, 409, "-max-keys"},
		{"a key of 129 bytes", "GET", "/api/v1/counters/" + long + "k", "", nil, 400, "at most 128 bytes"},
		{"a key of 128 bytes", "GET", "/api/v1/counters/" + long, "", nil, 200, `"key": "` + long + `"`},
		{"not UTF-8 key", "GET", "/api/v1/counters/%FF", "", nil, 400, "valid UTF-8"},
		{"no key", "GET", "/api/v1/counters/", "", nil, 400, "?key=KEY"},
		{"two keys", "GET", "/api/v1/counters/a?key=b", "", nil, 400, "give one"},
		{"unknown parameter", "GET", "/api/v1/counters/a?color=red", "", nil, 400, `unknown parameter \"color\"`},
		{"repeated parameter", "GET", "/api/v1/counters?limit=1&limit=2", "", nil, 400, `\"limit\" given 2 times`},
		{"limit 0", "GET", "/api/v1/counters?limit=0", "", nil, 400, "from 1 to 1000"},
		{"limit 1001", "GET", "/api/v1/counters?limit=1001", "", nil, 400, "from 1 to 1000"},
		{"prefix too long", "GET", "/api/v1/counters?prefix=" + long + "k", "", nil, 400, "parameter prefix"},
		{"bad query", "GET", "/api/v1/counters?prefix=%zz", "", nil, 400, "not valid URL encoding"},
		{"token without a name", "POST", "/api/v1/tokens", `{"prefix":"a"}`, nil, 400, `field \"name\"`},
		{"token without a prefix", "POST", "/api/v1/tokens", `{"name":"a"}`, nil, 400, `field \"prefix\"`},
		{"token with a control character", "POST", "/api/v1/tokens", `{"name":"a\u0007","prefix":"a"}`, nil, 400, "control"},
		{"token name too long", "POST", "/api/v1/tokens", `{"name":"` + strings.Repeat("n", 65) + `","prefix":"a"}`, nil, 400, "1 to 64 bytes"},
		{"import replace=yes", "POST", "/api/v1/import?replace=yes", "{}", nil, 400, "want true or false"},
		{"revoke an unknown token", "DELETE", "/api/v1/tokens/nope", "", nil, 404, "no such token"},
		{"a token id with a slash", "DELETE", "/api/v1/tokens/a/b", "", nil, 404, "no such API path"},
		{"the API's root", "GET", "/api/v1/", "", nil, 404, "no such API path"},
		{"another version", "GET", "/api/v2/counters", "", nil, 404, "no such API path"},
		{"a method", "POST", "/api/v1/counters", "", nil, 405, "takes GET"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := snapshot(t, e.st)
			w := e.do(tt.method, tt.target, "root", tt.body, tt.hdr...)
			if w.Code != tt.code || !strings.Contains(w.Body.String(), tt.want) {
				t.Errorf("%s %s = %d %s; want %d with %s", tt.method, tt.target, w.Code, w.Body, tt.code, tt.want)
			}
			if w.Code >= 400 {
				if after := snapshot(t, e.st); after != before {
					t.Errorf("a refused call changed the store:\nbefore %s\nafter  %s", before, after)
				}
				var v struct{ Error string }
				if err := json.Unmarshal(w.Body.Bytes(), &v); err != nil || v.Error == "" {
					t.Errorf("the refusal is not {\"error\":…}: %s", w.Body)
				}
			}
		})
	}
}

// snapshot returns every counter and token st holds, and its key count,
// as text.
func snapshot(tb testing.TB, st store.Store) string {
	tb.Helper()
	return snapshotBut(tb, st, nil)
}

// snapshotBut is snapshot without key's counter, if key is not nil, nor
// its open-creation token, nor the count of keys.
func snapshotBut(tb testing.TB, st store.Store, key *string) string {
	tb.Helper()
	ctx := context.Background()
	var b strings.Builder
	var after []byte
	for {
		es, err := st.List(ctx, nil, after, store.MaxList)
		if err != nil {
			tb.Fatal(err)
		}
		for _, e := range es {
			if key == nil || string(e.Key) != *key {
				fmt.Fprintf(&b, "%q=%+v ", e.Key, e.Counts)
			}
		}
		if len(es) < store.MaxList {
			break
		}
		after = es[len(es)-1].Key
	}
	ts, err := st.Tokens(ctx)
	if err != nil {
		tb.Fatal(err)
	}
	for _, t := range ts {
		if key == nil || t.ID != exactID(*key) {
			fmt.Fprintf(&b, "token %s %q %q %v %x ", t.ID, t.Name, t.Prefix, t.Exact, t.Hash)
		}
	}
	if key == nil {
		fmt.Fprintf(&b, "keys %d", st.Keys())
	}
	return b.String()
}

// TestHostileKeys: every key a store must take (storetest.HostileKeys:
// the empty key, 128 bytes, odd UTF-8) is set, read, listed and deleted
// through the API, addressed in the path (percent-encoded) or, for the
// empty key, with ?key=.
func TestHostileKeys(t *testing.T) {
	e := newEnv(t, 0, nil)
	for i, k := range storetest.HostileKeys() {
		target := "/api/v1/counters/" + pathEscape(string(k))
		if len(k) == 0 {
			target = "/api/v1/counters/?key="
		}
		// Made as /hello makes any name: the API makes only keys a
		// badge can show, and changes any key that exists.
		if _, _, err := e.st.Visit(context.Background(), k, true); err != nil {
			t.Fatal(err)
		}
		want := fmt.Sprintf(`"total": %d`, 100+i)
		if w := e.do("PUT", target, "root", fmt.Sprintf(`{"total":%d}`, 100+i)); w.Code != 200 || !strings.Contains(w.Body.String(), want) {
			t.Fatalf("PUT %q = %d %s", k, w.Code, w.Body)
		}
		w := e.do("GET", target, "root", "")
		var c Counter
		if err := json.Unmarshal(w.Body.Bytes(), &c); err != nil || w.Code != 200 || c.Key != string(k) || c.Total != uint64(100+i) {
			t.Errorf("GET %q = %d %s, want the key and total %d", k, w.Code, w.Body, 100+i)
		}
	}
	// Page through them one at a time: each comes back once, in order.
	var got []string
	after := ""
	for q := "/api/v1/counters?limit=1"; ; {
		w := e.do("GET", q, "root", "")
		var p Page
		if err := json.Unmarshal(w.Body.Bytes(), &p); err != nil || w.Code != 200 {
			t.Fatalf("GET %s = %d %s", q, w.Code, w.Body)
		}
		for _, c := range p.Counters {
			got = append(got, c.Key)
		}
		if p.Next == nil {
			break
		}
		after = *p.Next
		q = "/api/v1/counters?limit=1&after=" + queryEscape(after)
	}
	var want []string
	for _, k := range storetest.HostileKeys() {
		want = append(want, string(k))
	}
	slices.Sort(want) // byte order
	if strings.Join(got, "\x00|") != strings.Join(want, "\x00|") {
		t.Errorf("paging one at a time gave %q, want %q", got, want)
	}
	for _, k := range storetest.HostileKeys() {
		target := "/api/v1/counters/" + pathEscape(string(k))
		if len(k) == 0 {
			target = "/api/v1/counters/?key="
		}
		if w := e.do("DELETE", target, "root", ""); w.Code != 200 {
			t.Errorf("DELETE %q = %d %s", k, w.Code, w.Body)
		}
	}
	if e.st.Keys() != 0 {
		t.Errorf("Keys() = %d after deleting every key", e.st.Keys())
	}
}

// pathEscape percent-encodes every byte of s but unreserved ones and
// '/'.
func pathEscape(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || strings.IndexByte("-._~/", c) >= 0 {
			b.WriteByte(c)
		} else {
			fmt.Fprintf(&b, "%%%02X", c)
		}
	}
	return b.String()
}

// queryEscape percent-encodes every byte of s but unreserved ones.
func queryEscape(s string) string {
	return strings.ReplaceAll(pathEscape(s), "/", "%2F")
}

// TestCheckRoot: a root token is at least MinRootBytes bytes of
// printable ASCII without spaces, '!' to '~' both included; the refusal
// names the first bad byte and where it is.
func TestCheckRoot(t *testing.T) {
	ok := strings.Repeat("a", MinRootBytes)
	tests := []struct {
		name, secret string
		want         string // "" for accepted
	}{
		{"empty", "", "empty"},
		{"one byte short", ok[1:], "is 15 bytes; want at least 16"},
		{"the shortest", ok, ""},
		{"long", strings.Repeat("x", 100), ""},
		{"'!' and '~', the ends of the range", "!" + ok + "~", ""},
		{"a space", ok + " ", "byte 0x20 at 16"},
		{"a tab first", "\t" + ok, "byte 0x9 at 0"},
		{"DEL", ok + "\x7f", "byte 0x7f at 16"},
		{"UTF-8", ok + "é", "byte 0xc3 at 16"},
		{"a control character", "ab\x00" + ok, "byte 0x0 at 2"},
	}
	for _, tt := range tests {
		err := CheckRoot(tt.secret)
		switch {
		case tt.want == "" && err != nil:
			t.Errorf("%s: CheckRoot(%q) = %v, want it accepted", tt.name, tt.secret, err)
		case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
			t.Errorf("%s: CheckRoot(%q) = %v, want an error with %q", tt.name, tt.secret, err, tt.want)
		}
	}
}

// TestFailuresConfigured: a Failures rate other than the zero one is
// the client's budget of failed attempts, not DefaultFailures'.
func TestFailuresConfigured(t *testing.T) {
	e := newEnv(t, 0, func(c *Config) { c.Failures = client.Rate{Events: 2, Per: time.Minute} })
	for i := range 2 {
		if w := e.do("GET", "/api/v1/counters", "wrong", ""); w.Code != 401 {
			t.Fatalf("failure %d of 2: %d, want 401", i+1, w.Code)
		}
	}
	if w := e.do("GET", "/api/v1/counters", "root", ""); w.Code != 429 || w.Header().Get("Retry-After") != "30" {
		t.Errorf("past 2 failures with a budget of 2 a minute: %d Retry-After %q, want 429, 30", w.Code, w.Header().Get("Retry-After"))
	}
}

// failingStore is the memory store whose Get fails with err: it proves
// how the handler answers a store's failure.
type failingStore struct {
	Store
	err error
}

func (f failingStore) Get(context.Context, []byte) (store.Counts, error) {
	return store.Counts{}, f.err
}

// TestStoreFailure: a store that fails is a 503 that does not show the
// cause, which goes to the log with the call; a request canceled by its
// client is a 499, not a failure of the store.
func TestStoreFailure(t *testing.T) {
	tests := []struct {
		name, cause string
		err         error
		code        int
		msg         string
	}{
		{"failed", "disk on fire", errors.New("disk on fire"), 503, "the counter store is unavailable; try again"},
		{"canceled", "context canceled", fmt.Errorf("get: %w", context.Canceled), 499, "request canceled"},
	}
	for _, tt := range tests {
		e := newEnv(t, 0, func(c *Config) { c.Store = failingStore{c.Store, tt.err} })
		w := e.do("GET", "/api/v1/counters/a", "root", "")
		var v struct{ Error string }
		if err := json.Unmarshal(w.Body.Bytes(), &v); err != nil || w.Code != tt.code || v.Error != tt.msg {
			t.Errorf("%s: %d %s, want %d {\"error\":%q}", tt.name, w.Code, w.Body, tt.code, tt.msg)
		}
		if strings.Contains(w.Body.String(), tt.cause) && tt.code == 503 {
			t.Errorf("%s: the answer shows the cause: %s", tt.name, w.Body)
		}
		var line struct{ Level, Error, Method, Path, Message string }
		json.Unmarshal([]byte(e.log.String()), &line)
		if tt.code == 503 {
			want := "503 the counter store is unavailable; try again: get: disk on fire"
			if line.Level != "error" || line.Error != want || line.Method != "GET" || line.Path != "/api/v1/counters/a" {
				t.Errorf("%s: the log holds %q, want an error line with %q, the method and the path", tt.name, e.log, want)
			}
		}
	}
}

// TestQuoteInRefusal: a prefix named in a 403 is quoted as JSON would:
// a quote, a backslash and a control character escaped, a space and
// other text as they are.
func TestQuoteInRefusal(t *testing.T) {
	tests := []struct{ in, want string }{
		{"a/", `"a/"`},
		{`q"b\`, `"q\"b\\"`},
		{"a b~é", `"a b~é"`},
		{"t\tn\n\x1f", `"t\u0009n\u000a\u001f"`},
	}
	for _, tt := range tests {
		if got := quote(tt.in); got != tt.want {
			t.Errorf("quote(%q) = %s, want %s", tt.in, got, tt.want)
		}
	}
	e := newEnv(t, 0, nil)
	e.st.PutToken(context.Background(), store.Token{ID: "q", Name: "q", Prefix: "a \"", Hash: sha256.Sum256([]byte("q-secret"))})
	w := e.do("GET", "/api/v1/counters/b", "q-secret", "")
	var v struct{ Error string }
	if err := json.Unmarshal(w.Body.Bytes(), &v); err != nil || w.Code != 403 || v.Error != `the key is outside this token's prefix "a \""` {
		t.Errorf("a key outside the prefix a \": %d %s", w.Code, w.Body)
	}
}

// TestLimits: each bound is inclusive: a total of exactly MaxTotal, a
// page of exactly MaxLimit, a token name of exactly MaxNameBytes, the
// MaxTokens-th token and an import of exactly ImportMaxBytes are taken;
// one more is refused.
func TestLimits(t *testing.T) {
	e := newEnv(t, 0, nil)
	max := fmt.Sprint(uint64(MaxTotal))
	if w := e.do("PUT", "/api/v1/counters/a", "root", `{"total":`+max+`}`); w.Code != 200 || !strings.Contains(w.Body.String(), `"total": `+max) {
		t.Errorf("a total of MaxTotal: %d %s, want 200", w.Code, w.Body)
	}
	if w := e.do("GET", fmt.Sprintf("/api/v1/counters?limit=%d", MaxLimit), "root", ""); w.Code != 200 {
		t.Errorf("limit=%d: %d %s, want 200", MaxLimit, w.Code, w.Body)
	}
	name := strings.Repeat("n", MaxNameBytes)
	if w := e.do("POST", "/api/v1/tokens", "root", `{"name":"`+name+`","prefix":"a"}`); w.Code != 201 {
		t.Errorf("a name of %d bytes: %d %s, want 201", MaxNameBytes, w.Code, w.Body)
	}
	ctx := context.Background()
	for i := 1; i < MaxTokens-1; i++ { // one made above, one more below
		e.st.PutToken(ctx, store.Token{ID: fmt.Sprintf("t%04d", i), Name: "n", Prefix: "a"})
	}
	if w := e.do("POST", "/api/v1/tokens", "root", `{"name":"last","prefix":"a"}`); w.Code != 201 {
		t.Errorf("the %dth token: %d %s, want 201", MaxTokens, w.Code, w.Body)
	}
	if w := e.do("POST", "/api/v1/tokens", "root", `{"name":"more","prefix":"a"}`); w.Code != 409 || !strings.Contains(w.Body.String(), "the most tokens") {
		t.Errorf("token %d: %d %s, want 409", MaxTokens+1, w.Code, w.Body)
	}
	if ts, _ := e.st.Tokens(ctx); len(ts) != MaxTokens {
		t.Errorf("the store holds %d tokens, want %d", len(ts), MaxTokens)
	}

	b := newEnv(t, 0, func(c *Config) { c.Store, c.ImportMaxBytes = &backupDouble{Store: c.Store}, 2 })
	if w := b.do("POST", "/api/v1/import", "root", "ok"); w.Code != 200 {
		t.Errorf("an import of exactly ImportMaxBytes: %d %s, want 200", w.Code, w.Body)
	}
}

// TestUnknownParameterNamesWhatIsTaken: a refused parameter's message
// names the parameters the call takes, or says it takes none.
func TestUnknownParameterNamesWhatIsTaken(t *testing.T) {
	e := newEnv(t, 0, nil)
	tests := []struct{ target, want string }{
		{"/api/v1/counters/a?x=1", `unknown parameter "x": this call takes key`},
		{"/api/v1/counters?x=1", `unknown parameter "x": this call takes prefix, after, limit`},
		{"/api/v1/tokens?x=1", `unknown parameter "x": this call takes none`},
	}
	for _, tt := range tests {
		w := e.do("GET", tt.target, "root", "")
		var v struct{ Error string }
		if err := json.Unmarshal(w.Body.Bytes(), &v); err != nil || w.Code != 400 || v.Error != tt.want {
			t.Errorf("GET %s = %d %s, want 400 %q", tt.target, w.Code, w.Body, tt.want)
		}
	}
}

// TestLastFullPageHasNoNext: a page that ends with the last key has a
// null next, even when it is full: a client never asks for an empty
// page.
func TestLastFullPageHasNoNext(t *testing.T) {
	e := newEnv(t, 0, nil)
	for _, k := range []string{"a", "b", "c"} {
		e.do("PUT", "/api/v1/counters/"+k, "root", `{"total":1}`)
	}
	for _, tt := range []struct {
		target string
		next   *string
	}{
		{"/api/v1/counters?limit=2", ptr("b")},
		{"/api/v1/counters?limit=3", nil},
		{"/api/v1/counters?limit=2&after=a", nil},
		{"/api/v1/counters?limit=1&after=b", nil},
	} {
		w := e.do("GET", tt.target, "root", "")
		var p Page
		if err := json.Unmarshal(w.Body.Bytes(), &p); err != nil || w.Code != 200 {
			t.Fatalf("GET %s = %d %s", tt.target, w.Code, w.Body)
		}
		if (p.Next == nil) != (tt.next == nil) || p.Next != nil && *p.Next != *tt.next {
			t.Errorf("GET %s: next %s, want %s", tt.target, show(p.Next), show(tt.next))
		}
	}
}

func ptr(s string) *string { return &s }

func show(s *string) string {
	if s == nil {
		return "null"
	}
	return fmt.Sprintf("%q", *s)
}
