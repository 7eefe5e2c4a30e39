package dashboard_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
)

// TestTokenFormRefusesInvalidUTF8: a token's name or prefix that is not
// valid UTF-8 is refused with a 400, as the API refuses it, and no
// token is made: not made with U+FFFD in its place.
func TestTokenFormRefusesInvalidUTF8(t *testing.T) {
	e := newEnv(t, memory(t))
	b := e.browser(t)
	b.signIn(root)
	b.get("/dashboard/tokens")
	for _, f := range []url.Values{
		{"name": {"x"}, "prefix": {"a\xff"}},
		{"name": {"\xff"}, "prefix": {"a"}},
	} {
		a := b.post("/dashboard/tokens", f)
		if a.code != http.StatusBadRequest || !strings.Contains(a.body, "UTF-8") {
			t.Errorf("make token %q = %d, want 400 naming UTF-8", f, a.code)
		}
	}
	ts, err := e.st.Tokens(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if len(ts) != 0 {
		t.Errorf("tokens made: %+v, want none", ts)
	}
}
