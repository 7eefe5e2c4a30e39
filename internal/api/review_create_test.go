package api

import (
	"context"
	"crypto/sha256"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"visitors/internal/store"
)

// countingStore counts the calls of Tokens, which reads every token.
type countingStore struct {
	Store
	tokens atomic.Int64
}

func (s *countingStore) Tokens(ctx context.Context) ([]store.Token, error) {
	s.tokens.Add(1)
	return s.Store.Tokens(ctx)
}

// TestReviewBadSecretsDoNotReadEveryToken: open creation makes one
// token per key, up to -max-keys of them. A secret without an id (any
// garbage an unauthenticated client sends, or the shape of a token from
// before ids) was compared with every token stored, read anew on each
// call: a store read of up to a million tokens per failed attempt. The
// tokens from before ids are the root's, at most MaxTokens: they are
// read at most once per legacyRefresh, and a match is confirmed by id,
// so that a revoke is still refused at once.
func TestReviewBadSecretsDoNotReadEveryToken(t *testing.T) {
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

// TestReviewPrefixOfAnotherKey: a key that starts another is a key of
// its own: it is created while the longer one exists (and the longer
// one while it exists), and an import that replaces and drops it
// revokes its token though a key it starts is kept, and keeps the
// longer key's.
func TestReviewPrefixOfAnotherKey(t *testing.T) {
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
	for name, code := range map[string]int{"a": 401, "a/b": 200, "a/b/c": 200} {
		if w := e.do("GET", "/api/v1/counters/"+name, name, ""); w.Code != code {
			t.Errorf("after the import, %s's token: %d %s, want %d", name, w.Code, w.Body, code)
		}
	}
	e.mustCreate(t, "a", "a2")
}

// TestReviewExactTokensDoNotCountTowardMaxTokens: open creation's
// tokens, one per counter, do not take the root's MaxTokens.
func TestReviewExactTokensDoNotCountTowardMaxTokens(t *testing.T) {
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
