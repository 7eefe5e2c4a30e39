package boltstore

import (
	"errors"
	"strings"
	"testing"
	"time"

	"visitors/internal/store"
	"visitors/internal/store/storetest"
)

// TestOwnerOpOfAFailingKeyChangesNothing: an owner operation whose
// writes fail (the test hook putFault, which keyFault asks for Set,
// Add, Lock and Create) returns an error naming the key and changes
// nothing, in memory or in the file, while the same operations on
// another key go through. Without it a planted keyFault that ignored
// the hook survived the package.
func TestOwnerOpOfAFailingKeyChangesNothing(t *testing.T) {
	for _, d := range []store.Durability{store.Batch, store.Sync} {
		t.Run(d.String(), func(t *testing.T) {
			dir := t.TempDir()
			o := Options{Dir: dir, Durability: d, FlushInterval: time.Hour}
			s := mustOpen(t, o)
			mustSet(t, s, "bad", 5)
			mustSet(t, s, "good", 5)
			fault := func(key string) error {
				if key == "bad" || key == "new-bad" {
					return errors.New("planted key failure")
				}
				return nil
			}
			setHooks(s, func(h *hooks) { h.putFault = fault })
			tok := store.Token{ID: "t1", Name: "owner", Prefix: "new-bad", Created: storetest.At(0, "12:00")}
			for _, op := range []struct {
				name string
				run  func(key string) error
			}{
				{"Set", func(k string) error { _, err := s.Set(ctx, []byte(k), 9); return err }},
				{"Add", func(k string) error { _, err := s.Add(ctx, []byte(k), 3); return err }},
				{"negative Add", func(k string) error { _, err := s.Add(ctx, []byte(k), -1); return err }},
				{"Lock", func(k string) error { _, err := s.Lock(ctx, []byte(k), true); return err }},
			} {
				if err := op.run("bad"); err == nil || !strings.Contains(err.Error(), `"bad"`) || !strings.Contains(err.Error(), "planted key failure") {
					t.Errorf("%s(bad) while its writes fail = %v, want the planted failure naming the key", op.name, err)
				}
				if c := mustGet(t, s, []byte("bad")); c != (store.Counts{Total: 5}) {
					t.Errorf("after a failed %s, bad = %+v, want total 5, unlocked", op.name, c)
				}
			}
			if made, err := s.Create(ctx, []byte("new-bad"), tok); made || err == nil || !strings.Contains(err.Error(), `"new-bad"`) {
				t.Errorf("Create(new-bad) while its writes fail = %v, %v; want not made, the planted failure", made, err)
			}
			if _, ok, err := s.Token(ctx, "t1"); ok || err != nil {
				t.Errorf("after a failed Create, Token(t1) = %v, %v; want none", ok, err)
			}
			// The other key takes the same operations.
			mustSet(t, s, "good", 9)
			if c, err := s.Add(ctx, []byte("good"), 3); err != nil || c.Total != 12 {
				t.Errorf("Add(good, 3) = %+v, %v; want total 12", c, err)
			}
			if c, err := s.Lock(ctx, []byte("good"), true); err != nil || !c.Locked {
				t.Errorf("Lock(good) = %+v, %v; want locked", c, err)
			}
			setHooks(s, func(h *hooks) { h.putFault = nil })
			if s.Keys() != 2 {
				t.Errorf("Keys() = %d, want 2 (bad, good)", s.Keys())
			}
			s = reopen(t, s, o)
			defer mustClose(t, s)
			if c := mustGet(t, s, []byte("bad")); c != (store.Counts{Total: 5}) {
				t.Errorf("reopened: bad = %+v, want total 5, unlocked", c)
			}
			if c := mustGet(t, s, []byte("good")); c.Total != 12 || !c.Locked {
				t.Errorf("reopened: good = %+v, want total 12, locked", c)
			}
			if s.Keys() != 2 {
				t.Errorf("reopened: Keys() = %d, want 2", s.Keys())
			}
		})
	}
}
