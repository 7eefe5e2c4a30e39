package dashboard_test

import (
	"crypto/sha256"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"visitors/internal/api"
	"visitors/internal/dashboard"
)

// TestFullSessionTableEndsTheFloodersOwn: when the sessions are full,
// a sign-in ends a session of the token holding the most, not the
// oldest of all: a holder of any token (a tenant's, or one open
// creation hands anyone) who signs in again and again ends only its
// own sessions, and the root stays signed in. Of the flooder's, the
// oldest ends, by the order of sign-in: the test's clock stands still,
// so every session has one created time, and a victim picked by it
// ends one in the map's order, which the last loop fails (299 runs in
// 300; the first sign-in alone is ended in all but about 1 in 300).
func TestFullSessionTableEndsTheFloodersOwn(t *testing.T) {
	const max = 8
	st := memory(t)
	e := &env{st: st, log: new(lockedBuffer), clock: &clock{t: time.Now()}}
	sum := sha256.Sum256([]byte(root))
	e.api = api.New(api.Config{Store: st, RootHash: sum, Log: zerolog.New(e.log), Now: e.clock.Now})
	d := dashboard.New(dashboard.Config{API: e.api, Store: st, MaxSessions: max})
	mux := http.NewServeMux()
	mux.Handle("/dashboard", d)
	mux.Handle("/dashboard/", d)
	mux.Handle("/api/", e.api)
	e.srv = httptest.NewServer(mux)
	t.Cleanup(e.close)

	owner := e.browser(t)
	owner.signIn(root)
	tenant, _ := e.makeToken(t, "zz")
	other := e.browser(t)
	other.signIn(tenant)
	flood := []*browser{other}
	for range 3 * max {
		b := e.browser(t)
		b.signIn(tenant)
		flood = append(flood, b)
	}
	if a := owner.get("/dashboard"); a.code != http.StatusOK {
		t.Errorf("the root's session after %d sign-ins of another token: %d, want 200", 3*max, a.code)
	}
	if a := other.get("/dashboard"); a.code != http.StatusUnauthorized {
		t.Errorf("the flooding token's oldest session: %d, want 401 (ended)", a.code)
	}
	// The table holds the root's session and the flooder's max-1 newest.
	for i, b := range flood {
		want := http.StatusUnauthorized
		if i >= len(flood)-(max-1) {
			want = http.StatusOK
		}
		if a := b.get("/dashboard"); a.code != want {
			t.Errorf("the flooding token's sign-in %d of %d: %d, want %d (the newest %d kept)", i+1, len(flood), a.code, want, max-1)
		}
	}
}
