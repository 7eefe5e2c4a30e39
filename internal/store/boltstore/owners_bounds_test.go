package boltstore

import (
	"errors"
	"strings"
	"testing"

	"visitors/internal/store"
	"visitors/internal/store/storetest"
)

// TestCreateAtTheKeyBound: Create makes a key of exactly
// store.MaxKeyBytes, with its token, and refuses one byte more with
// store.ErrKeyTooLong. (Mutation testing, issue 28: with `>=` for `>`,
// owners.go:655:14, Create refused the longest key and every test still
// passed.)
func TestCreateAtTheKeyBound(t *testing.T) {
	dir := t.TempDir()
	s := mustOpen(t, Options{Dir: dir})
	longest := strings.Repeat("k", store.MaxKeyBytes)
	tok := store.Token{ID: "t1", Name: "owner", Prefix: longest, Created: storetest.At(0, "12:00")}
	made, err := s.Create(ctx, []byte(longest), tok)
	if err != nil || !made {
		t.Fatalf("Create(a key of %d bytes) = %v, %v; want true, nil", len(longest), made, err)
	}
	tok.ID = "t2"
	if made, err := s.Create(ctx, []byte(longest+"k"), tok); !errors.Is(err, store.ErrKeyTooLong) || made {
		t.Errorf("Create(a key of %d bytes) = %v, %v; want false, %v", len(longest)+1, made, err, store.ErrKeyTooLong)
	}
	s = reopen(t, s, Options{Dir: dir})
	defer mustClose(t, s)
	wantKeys(t, s, 1, "after a restart")
	if _, ok, err := s.Token(ctx, "t1"); err != nil || !ok {
		t.Errorf("Token(t1) after a restart = %v, %v; want the token Create made", ok, err)
	}
	if _, ok, _ := s.Token(ctx, "t2"); ok {
		t.Error("Token(t2) exists: a refused Create made its token")
	}
}

// TestDeleteTokenIfAtTheIDBound: DeleteTokenIf deletes a token whose id
// is exactly store.MaxKeyBytes long, the longest PutToken takes.
// (Mutation testing, issue 28: with `>=` for `>`, owners.go:752:13, it
// answered false and kept the token, and every test still passed.)
func TestDeleteTokenIfAtTheIDBound(t *testing.T) {
	s := mustOpen(t, Options{Dir: t.TempDir()})
	defer mustClose(t, s)
	tok := store.Token{ID: strings.Repeat("i", store.MaxKeyBytes), Hash: [32]byte{1, 2, 3}, Created: storetest.At(0, "12:00")}
	noErr(t, s.PutToken(ctx, tok), "PutToken(an id of %d bytes)", len(tok.ID))
	if found, err := s.DeleteTokenIf(ctx, tok.ID, tok.Hash); err != nil || !found {
		t.Errorf("DeleteTokenIf(an id of %d bytes) = %v, %v; want true, nil", len(tok.ID), found, err)
	}
	if _, ok, _ := s.Token(ctx, tok.ID); ok {
		t.Error("the token is still there after DeleteTokenIf")
	}
}
