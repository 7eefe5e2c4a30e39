package main

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"visitors/internal/servertest"
)

// stepTimeout bounds one step of a test in Chromium.
const stepTimeout = time.Minute

// cdp runs steps in Chromium, and fails the test at the first that
// fails, naming what.
func cdp(t *testing.T, ctx context.Context, what string, steps ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, stepTimeout)
	defer cancel()
	if err := chromedp.Do(ctx, steps...); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// cdpGet runs a in Chromium and returns its value, or fails the test.
func cdpGet[T any](t *testing.T, ctx context.Context, what string, a chromedp.Action[T]) T {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, stepTimeout)
	defer cancel()
	v, err := chromedp.Run(ctx, a)
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	return v
}

// apiCounts reads key's counts through the API, as root.
func apiCounts(t *testing.T, p *servertest.Proc, key string) apiCounter {
	t.Helper()
	r := apiDo(t, p, "GET", "/api/v1/counters/"+key, apiRoot, "")
	if r.code != 200 {
		t.Fatalf("GET %s = %d %s", key, r.code, r.body)
	}
	var c apiCounter
	r.decode(t, &c)
	return c
}

// TestDashboardInChromium drives the dashboard of the real binary in
// real Chromium: sign in, see the counters, watch a visit arrive live,
// set a start value, lock, share and revoke the share, sign out; a
// key-scoped token sees only its keys, and its session ends when it is
// revoked. The API says what each step did.
func TestDashboardInChromium(t *testing.T) {
	t.Parallel() // most of it waits for Chromium
	p := servertest.Start(t, bin, apiEnv, "-store", "memory", "-log-level", "info")
	for _, k := range []string{"octo/a", "octo/b", "other"} {
		if r := apiDo(t, p, "PUT", "/api/v1/counters/"+k, apiRoot, `{"total":5}`); r.code != 200 {
			t.Fatalf("PUT %s = %d %s", k, r.code, r.body)
		}
	}
	ctx, _ := newTab(t, 1280, 900)
	text := func(id string) string { t.Helper(); return cdpGet(t, ctx, "read #"+id, chromedp.Text(chromedp.ID(id))) }

	cdp(t, ctx, "sign in",
		chromedp.Navigate(p.URL("/dashboard")),
		chromedp.WaitVisible(chromedp.ID("token")),
		chromedp.SendKeys(chromedp.ID("token"), apiRoot),
		chromedp.Submit(chromedp.ID("login")),
		chromedp.WaitVisible(chromedp.ID("counters")),
	)
	overview := text("counters")
	for _, k := range []string{"octo/a", "octo/b", "other"} {
		if !strings.Contains(overview, k) {
			t.Errorf("the overview lacks %s: %q", k, overview)
		}
	}
	if font := cdpGet(t, ctx, "the font", chromedp.Evaluate[string](`getComputedStyle(document.body).fontFamily`)); !strings.Contains(font, "system-ui") {
		t.Errorf("the style sheet did not apply: font %q", font)
	}

	// Readable at 360 px: no page is wider than the screen.
	for _, page := range []string{"/dashboard", "/dashboard/counter/octo%2Fa", "/dashboard/tokens"} {
		cdp(t, ctx, "at 360 px: "+page, chromedp.EmulateViewport(360, 800), chromedp.Navigate(p.URL(page)), chromedp.WaitVisible(chromedp.CSS("main")))
		if w := cdpGet(t, ctx, "the page's width", chromedp.Evaluate[int](`document.documentElement.scrollWidth`)); w > 360 {
			t.Errorf("at 360 px %s is %d px wide", page, w)
		}
	}
	cdp(t, ctx, "back at 1280 px", chromedp.EmulateViewport(1280, 900), chromedp.Navigate(p.URL("/dashboard")), chromedp.WaitVisible(chromedp.ID("counters")))

	cdp(t, ctx, "open a counter and see it live",
		chromedp.Click(chromedp.CSS(`a[href="/dashboard/counter/octo%2Fa"]`)),
		chromedp.WaitVisible(chromedp.ID("live")), // the script ran, and its stream opened
	)
	mustGet(t, p.URL("/counter/octo/a.svg"))
	if !cdpGet(t, ctx, "the visit arrives over the stream", chromedp.Poll[bool](`document.getElementById("total").textContent === "6"`, chromedp.WithPollingTimeout(20*time.Second))) {
		t.Errorf("the live count did not reach 6")
	}

	cdp(t, ctx, "set a start value",
		chromedp.SendKeys(chromedp.CSS(`#set input[name="value"]`), "1000"),
		chromedp.Submit(chromedp.ID("set")),
		chromedp.WaitVisible(chromedp.ID("done")),
	)
	if total, c := text("total"), apiCounts(t, p, "octo/a"); total != "1000" || c.Total != 1000 {
		t.Errorf("after setting 1000: the page shows %q, the API %d", total, c.Total)
	}

	cdp(t, ctx, "lock", chromedp.Click(chromedp.ID("lock")), chromedp.WaitVisible(chromedp.ID("locked")))
	if c := apiCounts(t, p, "octo/a"); !c.Locked {
		t.Errorf("after lock the API says unlocked")
	}

	cdp(t, ctx, "share", chromedp.Click(chromedp.ID("share")), chromedp.WaitVisible(chromedp.ID("share-link")))
	link := cdpGet(t, ctx, "the share link", chromedp.Value(chromedp.ID("share-link")))
	if !strings.HasPrefix(link, p.URL("/dashboard/share/")) {
		t.Fatalf("share link %q", link)
	}
	cdp(t, ctx, "open the share link", chromedp.Navigate(link), chromedp.WaitVisible(chromedp.ID("total")))
	if shared := text("total"); shared != "1000" {
		t.Errorf("the share link shows %q, want 1000", shared)
	}
	cdp(t, ctx, "revoke the share",
		chromedp.Navigate(p.URL("/dashboard/counter/octo%2Fa")),
		chromedp.WaitVisible(chromedp.ID("unshare")),
		chromedp.Click(chromedp.ID("unshare")),
		chromedp.WaitVisible(chromedp.ID("done")),
	)
	if code, _, _ := mustGet(t, link); code != 404 {
		t.Errorf("a revoked share link = %d, want 404", code)
	}

	cdp(t, ctx, "sign out",
		chromedp.Click(chromedp.ID("logout")),
		chromedp.WaitVisible(chromedp.ID("token")),
		chromedp.Navigate(p.URL("/dashboard")),
		chromedp.WaitVisible(chromedp.ID("token")),
	)

	// A token for octo/ sees octo/ alone.
	r := apiDo(t, p, "POST", "/api/v1/tokens", apiRoot, `{"name":"octo","prefix":"octo/"}`)
	var made struct{ Token, ID string }
	if err := json.Unmarshal([]byte(r.body), &made); err != nil || r.code != http.StatusCreated {
		t.Fatalf("make a token = %d %s", r.code, r.body)
	}
	cdp(t, ctx, "sign in with a token for octo/",
		chromedp.SendKeys(chromedp.ID("token"), made.Token),
		chromedp.Submit(chromedp.ID("login")),
		chromedp.WaitVisible(chromedp.ID("counters")),
	)
	if overview := text("counters"); !strings.Contains(overview, "octo/a") || !strings.Contains(overview, "octo/b") || strings.Contains(overview, "other") {
		t.Errorf("a token for octo/ sees %q", overview)
	}
	// Revoked, the token's session ends at its next request.
	if r := apiDo(t, p, "DELETE", "/api/v1/tokens/"+made.ID, apiRoot, ""); r.code != 200 {
		t.Fatalf("revoke = %d %s", r.code, r.body)
	}
	cdp(t, ctx, "the revoked token's session ends",
		chromedp.Navigate(p.URL("/dashboard")),
		chromedp.WaitVisible(chromedp.ID("token")),
	)
	if msg := cdpGet(t, ctx, "the notice", chromedp.Text(chromedp.CSS(".error"))); !strings.Contains(msg, "revoked") {
		t.Errorf("after the revocation the page says %q", msg)
	}
	if strings.Contains(p.Stdout(), apiRoot) || strings.Contains(p.Stdout(), made.Token) {
		t.Errorf("the log holds a token")
	}
	if !strings.Contains(p.Stdout(), `"audit":"sign in"`) {
		t.Errorf("no audit line of the sign-in")
	}
}

// TestTokenCommandOnRedis: "visitors token" makes a token in Redis
// while the service runs on it, and the service takes it at once, on
// the dashboard and the API, within its prefix alone.
func TestTokenCommandOnRedis(t *testing.T) {
	for _, cluster := range []bool{false, true} {
		t.Run(map[bool]string{false: "standalone", true: "cluster"}[cluster], func(t *testing.T) {
			args := redisArgs(t, cluster)
			p := servertest.Start(t, bin, apiEnv, append(args, "-log-level", "warn")...)
			out, err := command(t, bin, append([]string{"token", "-name", "ci", "-prefix", "ci/"}, args...)...).Output()
			if err != nil {
				t.Fatalf("visitors token: %v", err)
			}
			secret, _, _ := strings.Cut(string(out), "\n")
			if !strings.HasPrefix(secret, "vt_") {
				t.Fatalf("visitors token printed %q", out)
			}
			if r := apiDo(t, p, "PUT", "/api/v1/counters/ci/a", secret, `{"total":7}`); r.code != 200 {
				t.Errorf("the new token on ci/a = %d %s", r.code, r.body)
			}
			if r := apiDo(t, p, "PUT", "/api/v1/counters/other", secret, `{"total":7}`); r.code != 403 {
				t.Errorf("the new token on other = %d, want 403", r.code)
			}
			noFollow := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
			resp, err := noFollow.PostForm(p.URL("/dashboard/login"), map[string][]string{"token": {secret}})
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusSeeOther {
				t.Errorf("sign-in with the new token = %d, want 303", resp.StatusCode)
			}
		})
	}
}
