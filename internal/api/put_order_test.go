package api

import (
	"context"
	"encoding/json"
	"testing"

	"visitors/internal/store"
	"visitors/internal/store/storetest"
)

// visitingStore is a store in which a visit to every key changed comes
// right after each Set and Lock: the visit a PUT's steps could let slip
// between them. counted says how many counted (the key not locked).
type visitingStore struct {
	Store
	visit   func(ctx context.Context, key []byte) (store.Counts, error)
	counted *int
}

func (s visitingStore) after(ctx context.Context, key []byte) {
	if c, err := s.visit(ctx, key); err == nil && !c.Locked {
		*s.counted++
	}
}

func (s visitingStore) Set(ctx context.Context, key []byte, total uint64) (store.Counts, error) {
	c, err := s.Store.Set(ctx, key, total)
	s.after(ctx, key)
	return c, err
}

func (s visitingStore) Lock(ctx context.Context, key []byte, locked bool) (store.Counts, error) {
	c, err := s.Store.Lock(ctx, key, locked)
	s.after(ctx, key)
	return c, err
}

// TestPutOrdersTotalAndLock: a PUT that sets a total and thaws a key
// sets the total first and thaws after, and one that sets a total and
// freezes freezes first (docs/api.md, "Reset and thaw in one call"), so
// no visit slips between: with a visit coming after each step, none
// counts on the old total and is wiped by the new one (a thaw first
// counted one, then lost it), and none counts on a key being frozen.
func TestPutOrdersTotalAndLock(t *testing.T) {
	tests := []struct {
		name       string
		locked     bool // the key before the PUT
		body       string
		wantTotal  uint64 // the PUT's answer
		wantLocked bool
	}{
		{"set and thaw", true, `{"total":10,"locked":false}`, 10, false},
		{"thaw and set", true, `{"locked":false,"total":10}`, 10, false},
		{"set and freeze", false, `{"total":0,"locked":true}`, 0, true},
		{"freeze and set", false, `{"locked":true,"total":0}`, 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			counted := 0
			e := newEnv(t, 0, func(c *Config) {
				inner := c.Store.(store.Counter)
				visit := func(ctx context.Context, key []byte) (store.Counts, error) {
					return storetest.Incr(ctx, inner, key)
				}
				c.Store = visitingStore{Store: c.Store, visit: visit, counted: &counted}
			})
			key := []byte("k")
			if _, err := e.st.Set(t.Context(), key, 5); err != nil {
				t.Fatal(err)
			}
			if _, err := e.st.Lock(t.Context(), key, tt.locked); err != nil {
				t.Fatal(err)
			}
			w := e.do("PUT", "/api/v1/counters/k", "root", tt.body)
			var got Counter
			if err := json.Unmarshal(w.Body.Bytes(), &got); err != nil || w.Code != 200 {
				t.Fatalf("PUT %s = %d %s", tt.body, w.Code, w.Body)
			}
			if got.Total != tt.wantTotal || got.Locked != tt.wantLocked {
				t.Errorf("PUT %s answered total %d, locked %v; want %d, %v", tt.body, got.Total, got.Locked, tt.wantTotal, tt.wantLocked)
			}
			c, err := e.st.Get(t.Context(), key)
			if err != nil {
				t.Fatal(err)
			}
			if c.Total != tt.wantTotal+uint64(counted) || c.Locked != tt.wantLocked {
				t.Errorf("PUT %s with a visit after each step: total %d, locked %v, with %d visits counted; want total %d (%d + every visit counted), locked %v",
					tt.body, c.Total, c.Locked, counted, tt.wantTotal+uint64(counted), tt.wantTotal, tt.wantLocked)
			}
			if tt.wantLocked && counted != 0 {
				t.Errorf("PUT %s: %d visits counted while the key was being frozen, want 0", tt.body, counted)
			}
		})
	}
}
