package api

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"visitors/internal/store"
)

type whoKey struct{}

// orphanRace is the memory store that orders two creations replacing
// one orphan token: both read it, then A revokes it and adds its own,
// and only then B revokes (A's) and adds its own.
type orphanRace struct {
	Store
	read    sync.WaitGroup
	aAdded  chan struct{}
	onceAdd sync.Once
}

func (s *orphanRace) Token(ctx context.Context, id string) (store.Token, bool, error) {
	t, ok, err := s.Store.Token(ctx, id)
	if ctx.Value(whoKey{}) != nil {
		s.read.Done()
		s.read.Wait()
	}
	return t, ok, err
}

func (s *orphanRace) DeleteToken(ctx context.Context, id string) (bool, error) {
	if ctx.Value(whoKey{}) == "B" {
		<-s.aAdded
	}
	return s.Store.DeleteToken(ctx, id)
}

func (s *orphanRace) DeleteTokenIf(ctx context.Context, id string, hash [32]byte) (bool, error) {
	if ctx.Value(whoKey{}) == "B" {
		<-s.aAdded
	}
	return s.Store.DeleteTokenIf(ctx, id, hash)
}

func (s *orphanRace) AddToken(ctx context.Context, t store.Token) (bool, error) {
	ok, err := s.Store.AddToken(ctx, t)
	if ctx.Value(whoKey{}) == "A" && ok {
		s.onceAdd.Do(func() { close(s.aAdded) })
	}
	return ok, err
}

// TestOrphanRaceOneWinner: replaceOrphan promised that of
// creations racing to replace an orphan token one wins, but it revoked
// by id, whatever token the id held then: B's revoke of the orphan it
// read removed A's new token. Both answered 201; A's token was refused.
// Fixed by store.TokenStore.DeleteTokenIf: the orphan is revoked by its hash.
// Found by review (was TestReviewOrphanRaceOneWinner).
func TestOrphanRaceOneWinner(t *testing.T) {
	var rs *orphanRace
	e := newEnv(t, 0, func(c *Config) {
		c.NoFailureLimit, c.OpenCreate = true, true
		rs = &orphanRace{Store: c.Store, aAdded: make(chan struct{})}
		rs.read.Add(2)
		c.Store = rs
	})
	ctx := context.Background()
	if err := rs.Store.PutToken(ctx, store.Token{ID: exactID("k"), Name: OpenName, Prefix: "k", Exact: true,
		Hash: sha256.Sum256([]byte("orphan")), Created: day0.Add(-time.Hour)}); err != nil {
		t.Fatal(err)
	}
	answers := make([]*httptest.ResponseRecorder, 2)
	var wg sync.WaitGroup
	for i, who := range []string{"A", "B"} {
		wg.Go(func() {
			r := httptest.NewRequest("POST", "/api/v1/counters/k", nil)
			r = r.WithContext(context.WithValue(r.Context(), whoKey{}, who))
			r.RemoteAddr = "192.0.2.1:1234"
			answers[i] = httptest.NewRecorder()
			e.h.ServeHTTP(answers[i], r)
		})
	}
	wg.Wait()
	won := 0
	for i, w := range answers {
		if w.Code != http.StatusCreated {
			continue
		}
		won++
		var c Created
		if err := json.Unmarshal(w.Body.Bytes(), &c); err != nil {
			t.Fatal(err)
		}
		if g := e.do("GET", "/api/v1/counters/k", "Bearer "+c.Token.Token, ""); g.Code != 200 {
			t.Errorf("creator %d answered 201, but its token is refused: %d %s", i, g.Code, g.Body)
		}
	}
	if won != 1 {
		t.Errorf("%d creations answered 201, want 1", won)
	}
}

// hook runs then, once, where a store double fires it.
type hook struct{ then func() }

func (h *hook) fire() {
	if f := h.then; f != nil {
		h.then = nil
		f()
	}
}

// hookedEnv is an env with open creation, the clock *now, on the store
// wrap makes of the memory store.
func hookedEnv(t *testing.T, now *time.Time, wrap func(Store) Store) *env {
	return newEnv(t, 0, func(c *Config) {
		c.NoFailureLimit, c.OpenCreate = true, true
		c.Now = func() time.Time { return *now }
		c.Store = wrap(c.Store)
	})
}

// deleteHook is the memory store that fires its hook after a Delete.
type deleteHook struct {
	Store
	hook
}

func (s *deleteHook) Delete(ctx context.Context, key []byte) (bool, error) {
	ok, err := s.Store.Delete(ctx, key)
	s.fire()
	return ok, err
}

// TestDeleteKeepsTheNextOwnersToken: deleting a counter
// deleted the key, then revoked the token id of the key. A creation of
// the key between the two (the old token, over a minute old, is taken
// for an orphan and replaced) got a 201 and a token the delete then
// revoked: the new owner was locked out of its own counter, which no one
// may create again (409). Fixed by reading the token before the delete
// and revoking it by its hash (store.TokenStore.DeleteTokenIf).
// Found by review (was TestReviewDeleteKeepsTheNextOwnersToken).
func TestDeleteKeepsTheNextOwnersToken(t *testing.T) {
	now := day0
	var hs *deleteHook
	e := hookedEnv(t, &now, func(st Store) Store { hs = &deleteHook{Store: st}; return hs })
	e.mustCreate(t, "k", "alice")
	e.nextOwnerDuring(t, &now, &hs.hook, "k", "DELETE", "/api/v1/counters/k", "alice", "")
}

// nextOwnerDuring lets two minutes pass (an exact token is then old
// enough to be taken for an orphan's), then makes the call method
// target as token with body, during which h creates key anew as bob:
// the call succeeds, and bob's token acts on key after it.
func (e *env) nextOwnerDuring(t *testing.T, now *time.Time, h *hook, key, method, target, token, body string) {
	t.Helper()
	*now = now.Add(2 * time.Minute)
	var bob Created
	h.then = func() { bob = e.mustCreate(t, key, "bob") }
	if w := e.do(method, target, token, body); w.Code != 200 {
		t.Fatalf("%s %s: %d %s", method, target, w.Code, w.Body)
	}
	if bob.Token.Token == "" {
		t.Fatalf("no creation ran during %s %s", method, target)
	}
	if w := e.do("GET", "/api/v1/counters/"+key, "Bearer "+bob.Token.Token, ""); w.Code != 200 {
		t.Errorf("bob created %s during %s %s, and his token is refused: %d %s", key, method, target, w.Code, w.Body)
	}
}

// listHook is replaceDouble that fires its hook after a List of prefix.
type listHook struct {
	replaceDouble
	hook
	prefix string
}

func (s *listHook) List(ctx context.Context, prefix, after []byte, limit int) ([]store.Entry, error) {
	es, err := s.replaceDouble.List(ctx, prefix, after, limit)
	if string(prefix) == s.prefix {
		s.fire()
	}
	return es, err
}

// TestImportKeepsTheNextOwnersToken: an import that replaces
// revokes the tokens of the keys it dropped; a creation of such a key
// between the revoke's check that the key is gone and the revoke keeps
// its own token.
// Found by review (was TestReviewImportKeepsTheNextOwnersToken).
func TestImportKeepsTheNextOwnersToken(t *testing.T) {
	now := day0
	var hs *listHook
	e := hookedEnv(t, &now, func(st Store) Store { hs = &listHook{replaceDouble: replaceDouble{st}, prefix: "gone"}; return hs })
	e.mustCreate(t, "gone", "alice")
	e.mustCreate(t, "kept", "kept")
	e.nextOwnerDuring(t, &now, &hs.hook, "gone", "POST", "/api/v1/import?replace=true", "root", "kept")
}
