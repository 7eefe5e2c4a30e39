package dashboard_test

import (
	"crypto/rand"
	"crypto/sha256"
	"html"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"visitors/internal/api"
	"visitors/internal/dashboard"
	"visitors/internal/store"
)

// TestEveryBackend drives the dashboard on every store: sign in, see
// the counters, set a start value, add, lock, unlock, reset, share and
// revoke the share, delete, sign out; a key-scoped token sees only its
// keys. The store says what each step did.
func TestEveryBackend(t *testing.T) {
	for _, be := range backends(t) {
		t.Run(be.name, func(t *testing.T) {
			e := newEnv(t, be.open(t, t.TempDir()))
			ctx := t.Context()
			for _, k := range []string{"octo/a", "octo/b", "other"} {
				if _, err := e.st.Set(ctx, []byte(k), 5); err != nil {
					t.Fatal(err)
				}
			}
			b := e.browser(t)
			b.signIn(root)
			a := b.get("/dashboard")
			for _, k := range []string{"octo/a", "octo/b", "other"} {
				if !strings.Contains(a.body, ">"+k+"</a>") {
					t.Errorf("the overview lacks %q", k)
				}
			}
			steps := []struct {
				do, value string
				want      func() bool
			}{
				{"set", "1000", func() bool { c := mustGet(t, e.st, "octo/a"); return c.Total == 1000 }},
				{"add", "7", func() bool { c := mustGet(t, e.st, "octo/a"); return c.Total == 1007 }},
				{"lock", "", func() bool { return mustGet(t, e.st, "octo/a").Locked }},
				{"unlock", "", func() bool { return !mustGet(t, e.st, "octo/a").Locked }},
				{"reset", "", func() bool { c := mustGet(t, e.st, "octo/a"); return c.Total == 0 }},
			}
			for _, s := range steps {
				a := b.post("/dashboard/action", url.Values{"key": {dashboard.FormKey("octo/a")}, "do": {s.do}, "value": {s.value}})
				if a.code != 200 || !s.want() {
					t.Errorf("%s %s = %d, store %+v: %s", s.do, s.value, a.code, mustGet(t, e.st, "octo/a"), a.body)
				}
			}
			if !strings.Contains(e.log.String(), `"audit":"set"`) || !strings.Contains(e.log.String(), `"call":"PUT /api/v1/counters/"`) {
				t.Errorf("no audit line of the set: %s", e.log.String())
			}

			// A share link reads the counter without a session, until revoked.
			a = b.post("/dashboard/action", url.Values{"key": {dashboard.FormKey("octo/b")}, "do": {"share"}})
			link := between(a.body, `id="share-link" value="`, `"`)
			if a.code != 200 || !strings.Contains(link, "/dashboard/share/") {
				t.Fatalf("share = %d, link %q", a.code, link)
			}
			anon := e.browser(t)
			path := strings.TrimPrefix(link, e.srv.URL)
			if a := anon.get(path); a.code != 200 || !strings.Contains(a.body, `id="total">5<`) || strings.Contains(a.body, "csrf") {
				t.Errorf("the share link = %d %s", a.code, a.body)
			}
			if a := anon.get(path + "/graph.svg?days=30"); a.code != 200 || a.h.Get("Content-Type") != "image/svg+xml" {
				t.Errorf("the share's graph = %d %q", a.code, a.h.Get("Content-Type"))
			}
			if a := anon.get(path[:len(path)-3] + "abc"); a.code != 404 {
				t.Errorf("a wrong share secret = %d, want 404", a.code)
			}
			b.post("/dashboard/action", url.Values{"key": {dashboard.FormKey("octo/b")}, "do": {"unshare"}})
			if a := anon.get(path); a.code != 404 {
				t.Errorf("a revoked share link = %d, want 404", a.code)
			}

			// Delete asks first, then deletes.
			if a := b.get("/dashboard/delete?key=octo%2Fb"); a.code != 200 || !strings.Contains(a.body, `id="confirm-delete"`) {
				t.Errorf("the delete confirmation = %d", a.code)
			}
			if a := b.post("/dashboard/action", url.Values{"key": {dashboard.FormKey("octo/b")}, "do": {"delete"}}); a.code != 200 {
				t.Errorf("delete = %d %s", a.code, a.body)
			}
			if es, _ := e.st.List(ctx, []byte("octo/b"), nil, 1); len(es) > 0 && string(es[0].Key) == "octo/b" {
				t.Errorf("octo/b is still there after delete")
			}

			// A token for octo/ sees octo/ alone.
			secret, _ := e.makeToken(t, "octo/")
			s := e.browser(t)
			s.signIn(secret)
			a = s.get("/dashboard")
			if !strings.Contains(a.body, ">octo/a</a>") || strings.Contains(a.body, ">other</a>") {
				t.Errorf("a token for octo/ sees: %s", a.body)
			}
			if a := s.get(dashboard.CounterURL("other")); a.code != 403 {
				t.Errorf("a token for octo/ on other's page = %d, want 403", a.code)
			}
			if a := s.post("/dashboard/action", url.Values{"key": {dashboard.FormKey("other")}, "do": {"set"}, "value": {"9"}}); a.code != 403 || mustGet(t, e.st, "other").Total != 5 {
				t.Errorf("a token for octo/ setting other = %d, total %d", a.code, mustGet(t, e.st, "other").Total)
			}
			if a := s.get("/dashboard/tokens"); a.code != 403 {
				t.Errorf("a token for octo/ on the tokens page = %d, want 403", a.code)
			}

			if a := b.post("/dashboard/logout", nil); a.code != 200 {
				t.Errorf("sign out = %d", a.code)
			}
			if a := b.get("/dashboard"); a.code != 401 || !strings.Contains(a.body, `action="/dashboard/login"`) {
				t.Errorf("after sign-out = %d, want the sign-in page", a.code)
			}
		})
	}
}

func between(s, from, to string) string {
	_, rest, ok := strings.Cut(s, from)
	if !ok {
		return ""
	}
	v, _, _ := strings.Cut(rest, to)
	return v
}

// TestRefusals: a missing or foreign CSRF token, a wrong token, a
// revoked token and a cookie from another session change nothing.
func TestRefusals(t *testing.T) {
	e := newEnv(t, memory(t))
	set := url.Values{"key": {dashboard.FormKey("k")}, "do": {"set"}, "value": {"1000"}}
	b := e.browser(t)
	b.signIn(root)
	b.get("/dashboard")

	t.Run("no CSRF token", func(t *testing.T) {
		if a := b.do("POST", "/dashboard/action", set); a.code != 403 || mustGet(t, e.st, "k").Total != 0 {
			t.Errorf("without csrf = %d, total %d", a.code, mustGet(t, e.st, "k").Total)
		}
		if a := b.do("POST", "/dashboard/logout", url.Values{}); a.code != 403 {
			t.Errorf("sign-out without csrf = %d", a.code)
		}
	})
	t.Run("another session's CSRF token", func(t *testing.T) {
		other := e.browser(t)
		other.signIn(root)
		f := url.Values{"csrf": {other.csrf}}
		for k, v := range set {
			f[k] = v
		}
		if a := b.do("POST", "/dashboard/action", f); a.code != 403 || mustGet(t, e.st, "k").Total != 0 {
			t.Errorf("with another session's csrf = %d", a.code)
		}
	})
	t.Run("a cookie from another session", func(t *testing.T) {
		// The cookie of a session that signed out is no session.
		old := e.browser(t)
		old.signIn(root)
		u, _ := url.Parse(e.srv.URL + "/dashboard")
		cookie := old.c.Jar.Cookies(u)
		csrf := old.csrf
		old.post("/dashboard/logout", nil)
		thief := e.browser(t)
		thief.c.Jar.SetCookies(u, cookie)
		thief.csrf = csrf
		if a := thief.post("/dashboard/action", set); a.code != 401 || mustGet(t, e.st, "k").Total != 0 {
			t.Errorf("an ended session's cookie = %d", a.code)
		}
		thief.c.Jar.SetCookies(u, []*http.Cookie{{Name: dashboard.CookieName, Value: "made-up", Path: "/dashboard"}})
		if a := thief.get("/dashboard"); a.code != 401 {
			t.Errorf("a made-up cookie = %d", a.code)
		}
	})
	t.Run("a wrong token", func(t *testing.T) {
		w := e.browser(t)
		a := w.do("POST", "/dashboard/login", url.Values{"token": {"vt_nope.nope"}})
		if a.code != 401 || a.h.Get("Set-Cookie") != "" || strings.Contains(a.body, "vt_nope") {
			t.Errorf("a wrong token = %d, cookie %q", a.code, a.h.Get("Set-Cookie"))
		}
	})
	t.Run("a revoked token", func(t *testing.T) {
		secret, id := e.makeToken(t, "k")
		s := e.browser(t)
		s.signIn(secret)
		if code, _ := e.apiCall(t, "DELETE", "/api/v1/tokens/"+id, root, ""); code != 200 {
			t.Fatalf("revoke = %d", code)
		}
		if a := s.post("/dashboard/action", set); a.code != 401 || !strings.Contains(a.body, "revoked") || mustGet(t, e.st, "k").Total != 0 {
			t.Errorf("a revoked token's session = %d %s", a.code, a.body)
		}
		if a := s.get("/dashboard"); a.code != 401 {
			t.Errorf("a revoked token's session, again = %d", a.code)
		}
	})
	if strings.Contains(e.log.String(), root) {
		t.Errorf("the log holds the root token")
	}
}

// TestFailedSignInsAreLimited: failed sign-ins go through the API's
// limit on failed attempts: five, then 429, and the root token too is
// refused until the limit lets the client try again.
func TestFailedSignInsAreLimited(t *testing.T) {
	e := newEnv(t, memory(t))
	b := e.browser(t)
	for i := range 5 {
		if a := b.do("POST", "/dashboard/login", url.Values{"token": {"wrong-token"}}); a.code != 401 {
			t.Fatalf("failure %d = %d", i+1, a.code)
		}
	}
	if a := b.do("POST", "/dashboard/login", url.Values{"token": {root}}); a.code != 429 || a.h.Get("Retry-After") == "" {
		t.Errorf("past the limit = %d (Retry-After %q), want 429", a.code, a.h.Get("Retry-After"))
	}
	e.clock.Add(time.Minute)
	b.signIn(root)
}

// TestSessionCookie: the cookie is HttpOnly, SameSite=Strict, for
// /dashboard, expiring, new at every sign-in, and the session ends when
// idle too long or too old.
func TestSessionCookie(t *testing.T) {
	e := newEnv(t, memory(t))
	b := e.browser(t)
	a := b.do("POST", "/dashboard/login", url.Values{"token": {root}})
	c := a.h.Get("Set-Cookie")
	for _, want := range []string{dashboard.CookieName + "=", "Path=/dashboard", "HttpOnly", "SameSite=Strict", "Max-Age=43200"} {
		if !strings.Contains(c, want) {
			t.Errorf("Set-Cookie %q lacks %q", c, want)
		}
	}
	if strings.Contains(c, "Secure") {
		t.Errorf("Set-Cookie %q is Secure over plain HTTP", c)
	}
	first := between(c, dashboard.CookieName+"=", ";")
	a = b.do("POST", "/dashboard/login", url.Values{"token": {root}})
	second := between(a.h.Get("Set-Cookie"), dashboard.CookieName+"=", ";")
	if first == second || len(second) < 43 {
		t.Errorf("a second sign-in kept the session id %q (now %q)", first, second)
	}
	// The first session ended with the second sign-in of its browser.
	stale := e.browser(t)
	u, _ := url.Parse(e.srv.URL + "/dashboard")
	stale.c.Jar.SetCookies(u, []*http.Cookie{{Name: dashboard.CookieName, Value: first, Path: "/dashboard"}})
	if a := stale.get("/dashboard"); a.code != 401 {
		t.Errorf("the id before the second sign-in = %d, want 401", a.code)
	}

	e.clock.Add(dashboard.DefaultIdle - time.Minute)
	if a := b.get("/dashboard"); a.code != 200 {
		t.Errorf("within the idle limit = %d", a.code)
	}
	e.clock.Add(dashboard.DefaultIdle + time.Minute)
	if a := b.get("/dashboard"); a.code != 401 {
		t.Errorf("past the idle limit = %d, want 401", a.code)
	}
	b.signIn(root)
	for range 25 { // used every 29 minutes: idle never, but 12 hours old
		e.clock.Add(29 * time.Minute)
		b.get("/dashboard")
	}
	if a := b.get("/dashboard"); a.code != 401 {
		t.Errorf("past the absolute limit = %d, want 401", a.code)
	}
}

// TestHeaders: every answer, a page, a refusal, the sign-in page, the
// static files, carries the CSP and its companions.
func TestHeaders(t *testing.T) {
	e := newEnv(t, memory(t))
	b := e.browser(t)
	check := func(what string, a answer) {
		t.Helper()
		want := map[string]string{"Content-Security-Policy": dashboard.CSP, "X-Content-Type-Options": "nosniff", "Referrer-Policy": "no-referrer"}
		for k, v := range want {
			if got := a.h.Get(k); got != v {
				t.Errorf("%s: %s = %q, want %q", what, k, got, v)
			}
		}
	}
	for _, want := range []string{"default-src 'self'", "frame-ancestors 'none'", "script-src 'self'", "style-src 'self'"} {
		if !strings.Contains(dashboard.CSP, want) || strings.Contains(dashboard.CSP, "unsafe-inline") {
			t.Errorf("CSP %q lacks %q or allows inline", dashboard.CSP, want)
		}
	}
	check("sign-in page", b.get("/dashboard"))
	check("static", b.get("/dashboard/static/dashboard.css"))
	check("404", b.get("/dashboard/nope"))
	b.signIn(root)
	a := b.get("/dashboard")
	check("overview", a)
	if strings.Contains(a.body, "<script>") || strings.Contains(a.body, " style=") || strings.Contains(a.body, "<style") {
		t.Errorf("the overview holds inline script or style")
	}
	check("counter", b.get(dashboard.CounterURL("x")))
	check("405", b.do("DELETE", "/dashboard", nil))
	if a := b.get("/dashboard/static/dashboard.js"); a.code != 200 || !strings.Contains(a.h.Get("Content-Type"), "javascript") {
		t.Errorf("dashboard.js = %d %q", a.code, a.h.Get("Content-Type"))
	}
}

// TestKeysAreEscaped: a key with markup, which the key rules allow, is
// shown as text on the overview and its page.
func TestKeysAreEscaped(t *testing.T) {
	e := newEnv(t, memory(t))
	const key = `<script>alert("x")</script><img src=x onerror=alert(1)>`
	if _, err := e.st.Set(t.Context(), []byte(key), 3); err != nil {
		t.Fatal(err)
	}
	b := e.browser(t)
	b.signIn(root)
	for _, path := range []string{"/dashboard", dashboard.CounterURL(key), "/dashboard/delete?key=" + url.QueryEscape(key)} {
		a := b.get(path)
		if a.code != 200 || strings.Contains(a.body, "<script>alert") || strings.Contains(a.body, "<img src=x") || !strings.Contains(a.body, "&lt;script&gt;alert(") {
			t.Errorf("%s = %d, the key unescaped or missing: %s", path, a.code, a.body)
		}
	}
	if a := b.post("/dashboard/action", url.Values{"key": {dashboard.FormKey(key)}, "do": {"set"}, "value": {"1000"}}); a.code != 200 || mustGet(t, e.st, key).Total != 1000 {
		t.Errorf("set on the key = %d", a.code)
	}
}

var formKeyRE = regexp.MustCompile(`<input type="hidden" name="key" value="([^"]*)">`)

// TestOddKeys: the empty key, dot keys, a key with a slash or a
// percent sign, odd UTF-8 and the longest key, each made as /hello or
// an import makes it (the owner API makes only keys a badge can show),
// take a start value on the dashboard and have a page that shows it, on
// every backend, and after a restart of a durable one; a key too long
// and a negative start are refused.
func TestOddKeys(t *testing.T) {
	keys := []string{"", ".", "..", "a/b", "a%2Fb", "é 日本 🙂", "\x00\t", strings.Repeat("x", store.MaxKeyBytes)}
	for _, be := range backends(t) {
		t.Run(be.name, func(t *testing.T) {
			where := t.TempDir()
			e := newEnv(t, be.open(t, where))
			for _, key := range keys {
				if _, err := e.st.Set(t.Context(), []byte(key), 0); err != nil {
					t.Fatalf("Set(%q): %v", key, err)
				}
			}
			b := e.browser(t)
			b.signIn(root)
			for _, key := range keys {
				// As a browser does: the key the page's form holds.
				page := b.get(dashboard.CounterURL(key))
				m := formKeyRE.FindStringSubmatch(page.body)
				if page.code != 200 || m == nil {
					t.Fatalf("page of %q = %d, no form key", key, page.code)
				}
				if a := b.post("/dashboard/action", url.Values{"key": {html.UnescapeString(m[1])}, "do": {"set"}, "value": {"1000"}}); a.code != 200 {
					t.Errorf("set %q = %d", key, a.code)
				}
				if c := mustGet(t, e.st, key); c.Total != 1000 {
					t.Errorf("set %q through its page's form: total %d", key, c.Total)
				}
			}
			if a := b.post("/dashboard/action", url.Values{"key": {dashboard.FormKey(strings.Repeat("x", store.MaxKeyBytes+1))}, "do": {"set"}, "value": {"1"}}); a.code != 400 {
				t.Errorf("a key too long = %d, want 400", a.code)
			}
			if a := b.post("/dashboard/action", url.Values{"key": {dashboard.FormKey("k")}, "do": {"set"}, "value": {"-1"}}); a.code != 400 {
				t.Errorf("a negative start = %d, want 400", a.code)
			}
			if be.durable {
				e.close()
				e = newEnv(t, be.open(t, where))
				b = e.browser(t)
				b.signIn(root)
			}
			for _, key := range keys {
				if a := b.get(dashboard.CounterURL(key)); a.code != 200 || !strings.Contains(a.body, `id="total">1000<`) {
					t.Errorf("page of %q (%s) = %d", key, dashboard.CounterURL(key), a.code)
				}
			}
		})
	}
}

// TestSecureCookieUnderTLS: under TLS the session cookie is Secure.
func TestSecureCookieUnderTLS(t *testing.T) {
	e := newEnv(t, memory(t))
	e.srv.Close()
	tls := httptest.NewTLSServer(e.srv.Config.Handler)
	t.Cleanup(tls.Close)
	c := tls.Client()
	c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	resp, err := c.PostForm(tls.URL+"/dashboard/login", url.Values{"token": {root}})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if sc := resp.Header.Get("Set-Cookie"); resp.StatusCode != http.StatusSeeOther || !strings.Contains(sc, "; Secure") {
		t.Errorf("under TLS: %d, Set-Cookie %q, want Secure", resp.StatusCode, sc)
	}
}

// TestOpenCreationTokenSeesItsKey: a counter's open-creation token (an
// exact token) sees and steers its one counter, and no other, not even
// one its key is a prefix of.
func TestOpenCreationTokenSeesItsKey(t *testing.T) {
	e := newEnv(t, memory(t))
	ctx := t.Context()
	secret, id, err := api.NewSecret(rand.Reader, "key-test")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.st.Create(ctx, []byte("mine"), store.Token{ID: id, Name: "mine", Prefix: "mine", Exact: true, Hash: sha256.Sum256([]byte(secret))}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.st.Set(ctx, []byte("mine/too"), 4); err != nil {
		t.Fatal(err)
	}
	b := e.browser(t)
	b.signIn(secret)
	if a := b.get("/dashboard"); !strings.Contains(a.body, ">mine</a>") || strings.Contains(a.body, "mine/too") {
		t.Errorf("an exact token's overview: %s", a.body)
	}
	if a := b.post("/dashboard/action", url.Values{"key": {dashboard.FormKey("mine")}, "do": {"set"}, "value": {"1000"}}); a.code != 200 || mustGet(t, e.st, "mine").Total != 1000 {
		t.Errorf("set its key = %d", a.code)
	}
	if a := b.post("/dashboard/action", url.Values{"key": {dashboard.FormKey("mine/too")}, "do": {"set"}, "value": {"1"}}); a.code != 403 || mustGet(t, e.st, "mine/too").Total != 4 {
		t.Errorf("set another key = %d", a.code)
	}
}

// TestCrossSitePostsAreRefused: a form another site posts, a sign-in
// with a valid token included, is refused before anything is looked at;
// the same form from the dashboard's own pages is taken.
func TestCrossSitePostsAreRefused(t *testing.T) {
	e := newEnv(t, memory(t))
	for _, hdr := range [][2]string{{"Sec-Fetch-Site", "cross-site"}, {"Origin", "https://evil.example"}} {
		req, _ := http.NewRequest("POST", e.srv.URL+"/dashboard/login", strings.NewReader(url.Values{"token": {root}}.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set(hdr[0], hdr[1])
		resp, err := http.DefaultTransport.RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 403 || resp.Header.Get("Set-Cookie") != "" {
			t.Errorf("a sign-in with %s: %s = %d, cookie %q, want 403 and none", hdr[0], hdr[1], resp.StatusCode, resp.Header.Get("Set-Cookie"))
		}
	}
	b := e.browser(t)
	req, _ := http.NewRequest("POST", e.srv.URL+"/dashboard/login", strings.NewReader(url.Values{"token": {root}}.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Sec-Fetch-Site", "same-origin")
	req.Header.Set("Origin", e.srv.URL)
	resp, err := b.c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusSeeOther {
		t.Errorf("a same-origin sign-in = %d, want 303", resp.StatusCode)
	}
}
