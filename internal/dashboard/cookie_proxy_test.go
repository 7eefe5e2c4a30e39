package dashboard_test

import (
	"crypto/sha256"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"visitors/internal/api"
	"visitors/internal/client"
	"visitors/internal/dashboard"
)

// proxied starts a dashboard whose trusted proxies are trusted ("" for
// none), as -trusted-proxies sets them.
func proxied(t *testing.T, trusted string) *env {
	t.Helper()
	var tp client.Proxies
	if trusted != "" {
		if err := tp.Set(trusted); err != nil {
			t.Fatal(err)
		}
	}
	st := memory(t)
	e := &env{st: st, log: new(lockedBuffer), clock: &clock{t: time.Now()}}
	sum := sha256.Sum256([]byte(root))
	e.api = api.New(api.Config{Store: st, RootHash: sum, Log: zerolog.New(e.log), Now: e.clock.Now, Trusted: &tp})
	d := dashboard.New(dashboard.Config{API: e.api, Store: st, Trusted: &tp})
	mux := http.NewServeMux()
	mux.Handle("/dashboard", d)
	mux.Handle("/dashboard/", d)
	e.srv = httptest.NewServer(mux)
	t.Cleanup(e.close)
	return e
}

// TestCookieSecureBehindHTTPSProxy: behind a trusted reverse
// proxy that serves HTTPS (docs/deploy.md's nginx and Caddy, which send
// X-Forwarded-Proto), the session cookie is Secure and the share link
// is https; the header from a peer that is not a trusted proxy changes
// nothing.
func TestCookieSecureBehindHTTPSProxy(t *testing.T) {
	for _, tc := range []struct {
		name, trusted string
		secure        bool
	}{
		{"trusted proxy", "127.0.0.1", true},
		{"untrusted peer", "", false},
		{"other proxy", "10.0.0.1", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := proxied(t, tc.trusted)
			c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
			req, _ := http.NewRequest("POST", e.srv.URL+"/dashboard/login", strings.NewReader(url.Values{"token": {root}}.Encode()))
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			req.Header.Set("X-Forwarded-Proto", "https")
			resp, err := c.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			cs := resp.Cookies()
			if resp.StatusCode != http.StatusSeeOther || len(cs) != 1 {
				t.Fatalf("sign in = %d, cookies %v", resp.StatusCode, cs)
			}
			if cs[0].Secure != tc.secure {
				t.Errorf("cookie %q: Secure = %v, want %v", resp.Header.Get("Set-Cookie"), cs[0].Secure, tc.secure)
			}

			// The share link names the scheme the browser speaks.
			get := func(path string, form url.Values) string {
				method, body := "GET", ""
				if form != nil {
					method, body = "POST", form.Encode()
				}
				req, _ := http.NewRequest(method, e.srv.URL+path, strings.NewReader(body))
				if form != nil {
					req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
				}
				req.Header.Set("X-Forwarded-Proto", "https")
				req.AddCookie(cs[0])
				resp, err := c.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				defer resp.Body.Close()
				out, err := io.ReadAll(resp.Body)
				if err != nil {
					t.Fatal(err)
				}
				return string(out)
			}
			csrf := regexp.MustCompile(`name="csrf" value="([^"]+)"`).FindStringSubmatch(get("/dashboard/counter/k", nil))
			if csrf == nil {
				t.Fatal("no CSRF token on the counter page")
			}
			page := get("/dashboard/action", url.Values{"csrf": {csrf[1]}, "key": {"k"}, "do": {"share"}})
			link := regexp.MustCompile(`id="share-link" value="([a-z]+)://`).FindStringSubmatch(page)
			want := map[bool]string{true: "https", false: "http"}[tc.secure]
			if link == nil || link[1] != want {
				t.Errorf("share link scheme = %v, want %s", link, want)
			}
		})
	}
}
