package api

import (
	"context"
	"strings"
	"testing"
)

// TestAPIMakesNoKeyThatOnlyStartsAnExistingOne: the owner API changes a
// key no badge could show only if that very key exists; one that only
// starts an existing key (me/é of me/été, whose List by prefix finds
// me/été) is a new key, and refused naming the rule.
func TestAPIMakesNoKeyThatOnlyStartsAnExistingOne(t *testing.T) {
	e := newEnv(t, 0, nil)
	if _, _, err := e.st.Visit(context.Background(), []byte("me/été"), true); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct{ method, target, body string }{
		{"PUT", "/api/v1/counters/me/%C3%A9", `{"total":5}`},
		{"POST", "/api/v1/counters/me/%C3%A9/add", `{"n":5}`},
		{"PUT", "/api/v1/counters/?key=me%2F%C3%A9t", `{"total":5}`},
	} {
		w := e.do(tt.method, tt.target, "root", tt.body)
		if w.Code != 400 || !strings.Contains(w.Body.String(), "makes only keys a badge can show") {
			t.Errorf("%s %s: %d %s, want 400 naming the rule", tt.method, tt.target, w.Code, w.Body)
		}
	}
	if n := e.st.Keys(); n != 1 {
		t.Errorf("after the refusals the store holds %d keys, want 1 (me/été)", n)
	}
}
