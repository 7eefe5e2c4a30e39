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
// own sessions, and the root stays signed in.
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
	for range 3 * max {
		e.browser(t).signIn(tenant)
	}
	if a := owner.get("/dashboard"); a.code != http.StatusOK {
		t.Errorf("the root's session after %d sign-ins of another token: %d, want 200", 3*max, a.code)
	}
	if a := other.get("/dashboard"); a.code != http.StatusUnauthorized {
		t.Errorf("the flooding token's oldest session: %d, want 401 (ended)", a.code)
	}
}
