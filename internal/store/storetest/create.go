package storetest

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"sync"
	"testing"

	"visitors/internal/store"
)

// openToken is the token Create stores for key, with secret.
func openToken(key, secret string) store.Token {
	return store.Token{ID: "key-" + key, Name: "open-create", Prefix: key, Exact: true,
		Hash: sha256.Sum256([]byte(secret)), Created: At(0, "12:00")}
}

func mustCreate(t *testing.T, st store.Store, key string, tok store.Token) bool {
	t.Helper()
	made, err := st.Create(ctx, []byte(key), tok)
	if err != nil {
		t.Fatalf("Create(%q): %v", key, err)
	}
	return made
}

// createIfAbsent: Create makes a key that is not there, at 0, with its
// token, and refuses a key that is, however it came to be: a visit (in
// batch mode, one not yet written), Set, Lock, Add, another Create. A
// deleted key is made anew, its orphan token replaced. Over a reopen the
// key and the token stay. Within -max-keys.
func (s suite) createIfAbsent(t *testing.T) {
	c := Config{Dir: t.TempDir()}
	st := s.open(t, c)
	tok := openToken("made", "one")
	if !mustCreate(t, st, "made", tok) {
		t.Fatal("Create(a new key) = false, want true")
	}
	if got := mustGet(t, st, []byte("made")); got != (store.Counts{}) {
		t.Errorf("Get(made) = %+v, want zero", got)
	}
	if got, ok, err := st.Token(ctx, tok.ID); err != nil || !ok || got.Hash != tok.Hash {
		t.Errorf("Token(%q) = %+v, %v, %v; want the created one", tok.ID, got, ok, err)
	}
	mustIncr(t, st, []byte("visited"))
	if _, err := st.Set(ctx, []byte("set"), 0); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Lock(ctx, []byte("locked"), true); err != nil {
		t.Fatal(err)
	}
	mustAdd(t, st, []byte("added"), 0)
	for _, k := range []string{"made", "visited", "set", "locked", "added"} {
		thief := openToken(k, "thief")
		if mustCreate(t, st, k, thief) {
			t.Errorf("Create(%q, a key there) = true, want false", k)
		}
		if got, ok, _ := st.Token(ctx, thief.ID); ok && got.Hash == thief.Hash {
			t.Errorf("Create(%q, a key there) stored its token", k)
		}
	}
	if ok, err := st.Delete(ctx, []byte("made")); err != nil || !ok {
		t.Fatalf("Delete(made) = %v, %v", ok, err)
	}
	again := openToken("made", "two") // the first token, left behind: an orphan
	if !mustCreate(t, st, "made", again) {
		t.Fatal("Create(a deleted key) = false, want true")
	}
	if got, _, _ := st.Token(ctx, again.ID); got.Hash != again.Hash {
		t.Errorf("Create of a deleted key kept the orphan token")
	}
	if s.b.Durable {
		st = s.reopen(t, st, c)
		if got, ok, _ := st.Token(ctx, again.ID); !ok || got.Hash != again.Hash {
			t.Errorf("after a reopen Token(%q) = %+v, %v; want the created one", again.ID, got, ok)
		}
		if es, err := st.List(ctx, []byte("made"), nil, 1); err != nil || len(es) != 1 || string(es[0].Key) != "made" {
			t.Errorf("after a reopen List(made) = %v, %v; want the key", es, err)
		}
		if mustCreate(t, st, "made", openToken("made", "three")) {
			t.Error("after a reopen Create(made) = true, want false")
		}
	}
	mustClose(t, st)

	full := s.open(t, Config{MaxKeys: 1})
	defer mustClose(t, full)
	mustIncr(t, full, []byte("one"))
	if made, err := full.Create(ctx, []byte("two"), openToken("two", "x")); made || !errors.Is(err, store.ErrTooManyKeys) {
		t.Errorf("Create(a new key, store full) = %v, %v; want ErrTooManyKeys", made, err)
	}
}

// createRacesFirstVisit: round after round a key's first visit races
// its creation. Either the creation made the key and the visit counts
// after it, or the key was there; either way the visit counts once, and
// a creation that made the key stored its token. Caught on main: the
// owner API checked, stored the token and made the key in three steps,
// and answered 201 for a counter that held the visit.
func (s suite) createRacesFirstVisit(t *testing.T) {
	st := s.open(t, Config{})
	defer mustClose(t, st)
	const rounds = 100
	made := 0
	for i := range rounds {
		key := fmt.Sprintf("race/%d", i)
		tok := openToken(key, "secret")
		var (
			wg      sync.WaitGroup
			visit   store.Counts
			verr    error
			created bool
			cerr    error
		)
		wg.Go(func() { visit, verr = Incr(ctx, st, []byte(key)) })
		wg.Go(func() { created, cerr = st.Create(ctx, []byte(key), tok) })
		wg.Wait()
		if verr != nil || cerr != nil {
			t.Fatalf("round %d: Incr = %v, Create = %v", i, verr, cerr)
		}
		if visit.Total != 1 {
			t.Errorf("round %d: the first visit answered %+v, want total 1", i, visit)
		}
		if got := mustGet(t, st, []byte(key)); got.Total != 1 {
			t.Errorf("round %d: Get = %+v after one visit and a creation, want total 1", i, got)
		}
		got, ok, err := st.Token(ctx, tok.ID)
		switch {
		case err != nil:
			t.Fatal(err)
		case created && (!ok || got.Hash != tok.Hash):
			t.Errorf("round %d: Create made the key but its token is %+v, %v", i, got, ok)
		case !created && ok:
			t.Errorf("round %d: Create refused the key but stored its token", i)
		}
		if created {
			made++
		}
	}
	t.Logf("%d rounds: %d created, %d refused", rounds, made, rounds-made)
}
