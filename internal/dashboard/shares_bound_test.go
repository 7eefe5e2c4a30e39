package dashboard_test

import (
	"crypto/sha256"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"visitors/internal/dashboard"
	"visitors/internal/store"
)

// TestShareLinksBounded: a prefix token may share any key of its
// scope, counter or not, and each link is a stored token that every
// read of the tokens reads; past dashboard.MaxShares links in its
// scope a new one is refused with a 409 and nothing is stored, while a
// link that replaces one, and another scope's, still go.
func TestShareLinksBounded(t *testing.T) {
	e := newEnv(t, memory(t))
	ctx := t.Context()
	for i := range dashboard.MaxShares { // the tenant's links, as its share action stores them
		k := fmt.Sprintf("t/%d", i)
		tok := store.Token{ID: dashboard.ShareID(k), Name: "share link", Prefix: k, Exact: true, Hash: sha256.Sum256([]byte(k)), Created: time.Now().UTC().Truncate(time.Second)}
		if err := e.st.PutToken(ctx, tok); err != nil {
			t.Fatal(err)
		}
	}
	tenant, _ := e.makeToken(t, "t/")
	b := e.browser(t)
	b.signIn(tenant)
	b.get("/dashboard/counter/" + url.PathEscape("t/new"))
	if a := b.post("/dashboard/action", url.Values{"key": {"t%2Fnew"}, "do": {"share"}}); a.code != http.StatusConflict || !strings.Contains(a.body, "revoke one first") {
		t.Errorf("share link %d of the scope = %d, want 409", dashboard.MaxShares+1, a.code)
	}
	if _, found, err := e.st.Token(ctx, dashboard.ShareID("t/new")); err != nil || found {
		t.Errorf("the refused link was stored: %v %v", found, err)
	}
	if a := b.post("/dashboard/action", url.Values{"key": {"t%2F7"}, "do": {"share"}}); a.code != http.StatusOK || !strings.Contains(a.body, `id="share-link"`) {
		t.Errorf("a new link for a shared key = %d, want 200 with the link", a.code)
	}
	other, _ := e.makeToken(t, "u/")
	o := e.browser(t)
	o.signIn(other)
	o.get("/dashboard/counter/" + url.PathEscape("u/1"))
	if a := o.post("/dashboard/action", url.Values{"key": {"u%2F1"}, "do": {"share"}}); a.code != http.StatusOK {
		t.Errorf("another scope's first link = %d, want 200", a.code)
	}
}
