package api

import (
	"context"
	"crypto/sha256"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"visitors/internal/store"
)

// countingStore counts the calls of Tokens, which reads every token.
type countingStore struct {
	store.Store
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
