package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"visitors/internal/servertest"
	"visitors/internal/store"
	"visitors/internal/webtest"
)

// The tests in this file prove the fairness rules of issue 10 on the
// real binary, with their defaults: -client-rate 10/s, -client-burst 20,
// -client-new-keys 100/h. Clients are told apart as a reverse proxy on
// loopback would name them, with X-Forwarded-For and -trusted-proxies.

const browserUA = "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36"

// fairClient is an HTTP client that keeps up to 16 connections alive.
var fairClient = &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 16}, Timeout: 10 * time.Second}

// fetch GETs url with the User-Agent ua and, if xff is set, an
// X-Forwarded-For.
func fetch(tb testing.TB, url, ua, xff string) (int, http.Header, string) {
	req, err := http.NewRequest("GET", url, nil)
	if err != nil {
		tb.Fatal(err)
	}
	req.Header.Set("User-Agent", ua)
	if xff != "" {
		req.Header.Set("X-Forwarded-For", xff)
	}
	resp, err := fairClient.Do(req)
	if err != nil {
		tb.Errorf("GET %s: %v", url, err)
		return 0, nil, ""
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		tb.Errorf("GET %s: %v", url, err)
	}
	return resp.StatusCode, resp.Header, string(b)
}

// counts is a key's JSON.
type counts struct {
	Total       uint64 `json:"total"`
	Today       uint64 `json:"today"`
	UniqueToday uint64 `json:"unique_today"`
}

// mustCounts reads key's counts without counting a visit.
func mustCounts(tb testing.TB, p *servertest.Proc, key string) counts {
	tb.Helper()
	code, _, body := fetch(tb, p.URL("/counter/"+key+".json?count=false"), browserUA, "")
	var c counts
	if err := json.Unmarshal([]byte(body), &c); code != 200 || err != nil {
		tb.Fatalf("%s.json = %d %q: %v", key, code, body, err)
	}
	return c
}

// parallel runs f(i) for i in [0, n) on 8 goroutines.
func parallel(n int, f func(i int)) {
	var next atomic.Int64
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for i := int(next.Add(1) - 1); i < n; i = int(next.Add(1) - 1) {
				f(i)
			}
		})
	}
	wg.Wait()
}

// TestFairRateLimit: one client's burst of 2,000 visits counts at most
// burst + rate × elapsed, every answer a 200 badge, the refused ones
// marked Visitors-Counted: false; a second client at the same time is
// counted exactly; a spoofed X-Forwarded-For from an untrusted peer does
// not escape its limit; and the metrics say why visits were not counted.
func TestFairRateLimit(t *testing.T) {
	p := servertest.Start(t, bin, nil, "-repeat-window", "0", "-data", t.TempDir(), "-log-level", "off", "-trusted-proxies", "127.0.0.1")
	url := p.URL("/counter/burst.svg")
	const burst, rate = 20, 10.0

	start := time.Now()
	var refused, bad atomic.Int64
	done := make(chan struct{})
	go func() { // the second client, during the burst
		defer close(done)
		for range 15 {
			if code, _, _ := fetch(t, p.URL("/counter/burst.svg"), browserUA, "198.51.100.2"); code != 200 {
				bad.Add(1)
			}
		}
	}()
	parallel(2000, func(int) {
		code, h, body := fetch(t, url, browserUA, "198.51.100.1")
		if code != 200 || !strings.HasPrefix(body, "<svg") || h.Get("Content-Type") != "image/svg+xml; charset=utf-8" {
			bad.Add(1)
		}
		if h.Get("Visitors-Counted") == "false" {
			refused.Add(1)
		}
	})
	webtest.Receive(t, done, "end of the second client's visits")
	elapsed := time.Since(start).Seconds()
	if bad.Load() != 0 {
		t.Errorf("%d answers were not a 200 badge", bad.Load())
	}
	got := mustCounts(t, p, "burst").Total
	counted := got - 15 // the second client's 15, all within its burst
	limit := uint64(burst + math.Ceil(rate*elapsed))
	if counted < burst || counted > limit {
		t.Errorf("first client: %d of 2000 counted in %.1fs, want %d to %d (burst + rate × elapsed)", counted, elapsed, burst, limit)
	}
	if refused.Load() != 2000-int64(counted) {
		t.Errorf("%d answers said Visitors-Counted: false, want %d", refused.Load(), 2000-counted)
	}

	// A peer that is not a trusted proxy cannot pick its identity.
	p2 := servertest.Start(t, bin, nil, "-repeat-window", "0", "-store", "memory", "-log-level", "off", "-trusted-proxies", "10.0.0.0/8")
	start = time.Now()
	parallel(300, func(i int) { fetch(t, p2.URL("/counter/spoof.svg"), browserUA, fmt.Sprintf("203.0.113.%d", i%250)) })
	elapsed = time.Since(start).Seconds()
	if got, limit := mustCounts(t, p2, "spoof").Total, uint64(burst+math.Ceil(rate*elapsed)); got > limit {
		t.Errorf("spoofed X-Forwarded-For from an untrusted peer: %d counted, want at most %d", got, limit)
	}

	code, _, body := fetch(t, p.AdminURL("/metrics"), browserUA, "")
	if want := `visitors_visits_not_counted_total{reason="rate_limited"} ` + strconv.FormatInt(refused.Load(), 10); code != 200 || !strings.Contains(body, want) {
		t.Errorf("/metrics lacks %s", want)
	}
}

// TestFairNewKeys: a client creating 1,000 new keys is stopped at the
// limit with 429 and Retry-After, as an error badge, while another
// client creates keys freely; keys already made still count.
func TestFairNewKeys(t *testing.T) {
	// -client-rate 0: the visit rate would stop the flood before the
	// new-key rule does.
	p := servertest.Start(t, bin, nil, "-repeat-window", "0", "-store", "memory", "-log-level", "off", "-trusted-proxies", "127.0.0.1", "-client-rate", "0")
	start := time.Now()
	var made, refused atomic.Int64
	parallel(1000, func(i int) {
		code, h, body := fetch(t, p.URL(fmt.Sprintf("/counter/flood/%d.svg?style=flat-square", i)), browserUA, "198.51.100.1")
		switch code {
		case 200:
			made.Add(1)
		case 429:
			refused.Add(1)
			if ra, err := strconv.Atoi(h.Get("Retry-After")); err != nil || ra < 1 || ra > 3600 {
				t.Errorf("429 Retry-After %q", h.Get("Retry-After"))
			}
			if !strings.Contains(body, "rate limited") || !strings.Contains(body, `rx="0"`) || h.Get("Cache-Control") != "no-cache, no-store, must-revalidate" {
				t.Errorf("429 is not a flat-square, uncached 'rate limited' badge: %v %q", h, body)
			}
		default:
			t.Errorf("new key %d: status %d", i, code)
		}
	})
	hours := time.Since(start).Hours()
	// Concurrent requests of one client may each take the last token
	// (see internal/web.incr): at most one per connection more.
	if limit := int64(100 + math.Ceil(100*hours) + 8); made.Load() < 100 || made.Load() > limit {
		t.Errorf("flooding client made %d keys, want 100 to %d", made.Load(), limit)
	}
	if made.Load()+refused.Load() != 1000 {
		t.Errorf("%d made + %d refused, want 1000", made.Load(), refused.Load())
	}
	for i := range 50 {
		if code, _, _ := fetch(t, p.URL(fmt.Sprintf("/counter/other/%d.svg", i)), browserUA, "198.51.100.2"); code != 200 {
			t.Fatalf("another client's new key %d = %d, want 200", i, code)
		}
	}
	if code, _, _ := fetch(t, p.URL("/counter/flood/0.svg"), browserUA, "198.51.100.1"); code != 200 {
		t.Errorf("a key the flooding client made = %d, want 200", code)
	}
}

// TestFairBotsAndCamo: a crawler and a link-preview fetcher are answered
// and not counted, on the badge, its JSON and /hello alike (a crawler
// rule applied only to /counter/ passed every bot test before this
// one looped over the endpoints); GitHub's image proxy is counted past
// the per-client burst (its User-Agent from -camo-ranges) and never as
// a unique visitor.
func TestFairBotsAndCamo(t *testing.T) {
	p := servertest.Start(t, bin, nil, "-repeat-window", "0", "-store", "memory", "-log-level", "off", "-camo-ranges", "127.0.0.0/8")
	bots := []string{"Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)", "Slackbot-LinkExpanding 1.0 (+https://api.slack.com/robots)", "curl/8.5.0"}
	endpoints := []struct {
		key, path, want string // want: the count of 1 in the answer
	}{
		{"b", "/counter/b.svg", `aria-label="visitors: 1"`},
		{"bjson", "/counter/bjson.json", `"total":1,`},
		{"bhello", "/hello?name=bhello", "<p>Count: 1</p>"},
	}
	for _, ep := range endpoints {
		fetch(t, p.URL(ep.path), browserUA, "")
		for _, ua := range bots {
			code, h, body := fetch(t, p.URL(ep.path), ua, "")
			if code != 200 || h.Get("Visitors-Counted") != "false" || !strings.Contains(body, ep.want) {
				t.Errorf("GET %s as %s: %d %v %q, want 200 with %s and Visitors-Counted: false", ep.path, ua, code, h, body, ep.want)
			}
		}
		if c := mustCounts(t, p, ep.key); c.Total != 1 {
			t.Errorf("after 1 browser and %d bots on %s: total %d, want 1", len(bots), ep.path, c.Total)
		}
	}
	for range 40 { // twice the burst
		if code, h, _ := fetch(t, p.URL("/counter/b.svg"), camoUA, ""); code != 200 || h.Get("Visitors-Counted") != "" {
			t.Fatalf("camo: %d %v, want a counted 200", code, h)
		}
	}
	if c := mustCounts(t, p, "b"); c.Total != 41 || c.UniqueToday != 1 {
		t.Errorf("after 1 browser, 3 bots and 40 camo views: %+v, want total 41, unique 1", c)
	}
}

// TestFairUniqueVisitors: 5,000 distinct identities over 20,000 views
// are counted within 2%; after a restart on the same day the same
// visitors count no more, and show=unique and daily.json agree.
func TestFairUniqueVisitors(t *testing.T) {
	day := store.DayOf(time.Now())
	dir := t.TempDir()
	args := []string{"-data", dir, "-log-level", "off", "-trusted-proxies", "127.0.0.1", "-repeat-window", "0"} // 4 views each, all counted
	p := servertest.Start(t, bin, nil, args...)
	const visitors, views = 5000, 20000
	id := func(i int) string { return fmt.Sprintf("2001:db8:%x:%x::1", i>>8, i&0xff) } // one /64 each
	parallel(views, func(i int) {
		if code, h, _ := fetch(t, p.URL("/counter/u.svg"), browserUA, id(i%visitors)); code != 200 || h.Get("Visitors-Counted") != "" {
			t.Errorf("view %d: %d %v", i, code, h)
		}
	})
	c := mustCounts(t, p, "u")
	if c.Total != views {
		t.Errorf("total %d, want %d (4 views each, within the burst)", c.Total, views)
	}
	if e := math.Abs(float64(c.UniqueToday)-visitors) / visitors; e > 0.02 {
		t.Errorf("unique_today %d for %d visitors: error %.2f%%, want under 2%%", c.UniqueToday, visitors, 100*e)
	}
	t.Logf("%d visitors over %d views: unique_today %d", visitors, views, c.UniqueToday)
	if err := p.Stop(syscall.SIGTERM, 10*time.Second); err != nil {
		t.Fatal(err)
	}

	p = servertest.Start(t, bin, nil, args...)
	if got := mustCounts(t, p, "u"); got.UniqueToday != c.UniqueToday {
		t.Errorf("after a restart unique_today = %d, want %d", got.UniqueToday, c.UniqueToday)
	}
	parallel(visitors, func(i int) { fetch(t, p.URL("/counter/u.svg"), browserUA, id(i)) })
	after := mustCounts(t, p, "u")
	if store.DayOf(time.Now()) != day {
		t.Fatal("the test crossed UTC midnight, when unique visitors start again: run it again")
	}
	if after.UniqueToday != c.UniqueToday || after.Total != views+visitors {
		t.Errorf("the same %d visitors after a restart: %+v, want unique %d and total %d", visitors, after, c.UniqueToday, views+visitors)
	}
	if _, _, body := fetch(t, p.URL("/counter/u.svg?count=false&show=unique"), browserUA, ""); !strings.Contains(body, fmt.Sprintf(`aria-label="visitors: %d"`, after.UniqueToday)) {
		t.Errorf("show=unique badge does not show %d: %.300s", after.UniqueToday, body)
	}
	_, _, body := fetch(t, p.URL("/counter/u/daily.json?days=2"), browserUA, "")
	if want := fmt.Sprintf(`"count":%d,"unique":%d}`, after.Total, after.UniqueToday); !strings.Contains(body, want) {
		t.Errorf("daily.json = %s, want today with %s", body, want)
	}
}

// TestFairErrorBadges: every error of a .svg endpoint is a badge with
// its status and no-cache headers, in the requested style.
func TestFairErrorBadges(t *testing.T) {
	p := servertest.Start(t, bin, nil, "-store", "memory", "-log-level", "off", "-max-keys", "1")
	fetch(t, p.URL("/counter/one.svg"), browserUA, "")
	tests := []struct {
		path string
		code int
		text string
	}{
		{"/counter/two.svg?style=for-the-badge", 503, "FULL"},
		{"/counter/a//b.svg", 400, "invalid key"},
		{"/counter/one.svg?days=x&color=nope", 400, "days must be 1 to 365"},
		{"/counter/one/graph.svg?days=0", 400, "days must be 1 to 365"},
		{"/counter/one.svg?style=round", 400, "style must be flat, flat-square, plastic or for-the-badge"},
	}
	for _, tt := range tests {
		code, h, body := fetch(t, p.URL(tt.path), browserUA, "")
		if code != tt.code || !strings.HasPrefix(body, "<svg") || !strings.Contains(body, tt.text) ||
			h.Get("Content-Type") != "image/svg+xml; charset=utf-8" || h.Get("Cache-Control") != "no-cache, no-store, must-revalidate" || h.Get("Visitors-Error") == "" {
			t.Errorf("GET %s = %d %v %.200q, want %d and a badge saying %q", tt.path, code, h, body, tt.code, tt.text)
		}
	}
	req, _ := http.NewRequest("POST", p.URL("/counter/one.svg"), nil)
	resp, err := fairClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 405 || !strings.Contains(string(b), "method not allowed") {
		t.Errorf("POST .svg = %d %q, want a 405 badge", resp.StatusCode, b)
	}
}

// TestMaxConns: past -max-conns, a new connection waits in the kernel's
// accept queue, unanswered, until an open one closes.
func TestMaxConns(t *testing.T) {
	p := servertest.Start(t, bin, nil, "-store", "memory", "-log-level", "off", "-max-conns", "2")
	get := "GET /hi HTTP/1.1\r\nHost: x\r\n\r\n"
	var held []net.Conn
	for range 2 { // two connections, kept alive
		c, err := net.Dial("tcp", p.Addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(10 * time.Second))
		io.WriteString(c, get)
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil || resp.StatusCode != 200 {
			t.Fatalf("held connection: %v %v", resp, err)
		}
		held = append(held, c)
	}
	third, err := net.Dial("tcp", p.Addr) // the kernel accepts it into the queue
	if err != nil {
		t.Fatal(err)
	}
	defer third.Close()
	io.WriteString(third, get)
	r := bufio.NewReader(third)
	third.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
	if _, err := r.ReadByte(); err == nil {
		t.Fatal("a third connection was served while two were open with -max-conns 2")
	} else if ne, ok := err.(net.Error); !ok || !ne.Timeout() {
		t.Fatalf("third connection: %v, want it to wait", err)
	}
	held[0].Close()
	third.SetReadDeadline(time.Now().Add(10 * time.Second))
	resp, err := http.ReadResponse(r, nil)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("after one closed, the waiting connection got %v, %v; want 200", resp, err)
	}
}

const camoUA = "github-camo (876de43e)"

// TestFairCamoOnlyFromGitHub: camo's User-Agent from an address outside
// -camo-ranges is an ordinary client's, limited by the per-client rate
// and the repeat window (before, any client that sent it skipped both:
// 3,000 of 3,000 visits counted from one address); from GitHub's
// published ranges, the default, it is exempt from them, up to its own
// bound per key, -camo-key-rate, and no further.
func TestFairCamoOnlyFromGitHub(t *testing.T) {
	p := servertest.Start(t, bin, nil, "-repeat-window", "0", "-store", "memory", "-log-level", "off")
	start := time.Now()
	parallel(300, func(int) { fetch(t, p.URL("/counter/forged.svg"), camoUA, "") })
	elapsed := time.Since(start).Seconds()
	c := mustCounts(t, p, "forged")
	if limit := uint64(20 + math.Ceil(10*elapsed)); c.Total < 20 || c.Total > limit {
		t.Errorf("camo's User-Agent from 127.0.0.1: %d of 300 counted in %.1fs, want 20 to %d, as any client", c.Total, elapsed, limit)
	}
	if c.UniqueToday != 1 {
		t.Errorf("camo's User-Agent from 127.0.0.1: unique_today %d, want 1 (an ordinary visitor)", c.UniqueToday)
	}

	// Behind a trusted proxy the client it names is the one checked.
	p = servertest.Start(t, bin, nil, "-store", "memory", "-log-level", "off", "-trusted-proxies", "127.0.0.1",
		"-repeat-window", "1h", "-camo-key-rate", "60/h")
	for range 30 {
		fetch(t, p.URL("/counter/repeat.svg"), camoUA, "198.51.100.1")
	}
	if c := mustCounts(t, p, "repeat"); c.Total != 1 {
		t.Errorf("camo's User-Agent from 198.51.100.1, 30 views within -repeat-window: total %d, want 1", c.Total)
	}
	const github = "140.82.115.1" // in 140.82.112.0/20, a range GitHub publishes
	start = time.Now()
	var refused atomic.Int64
	parallel(200, func(int) {
		if code, h, _ := fetch(t, p.URL("/counter/readme.svg"), camoUA, github); code != 200 {
			t.Errorf("camo past its bound: %d, want a 200 badge", code)
		} else if h.Get("Visitors-Counted") == "false" {
			refused.Add(1)
		}
	})
	hours := time.Since(start).Hours()
	c = mustCounts(t, p, "readme")
	if limit := uint64(60 + math.Ceil(60*hours)); c.Total < 60 || c.Total > limit {
		t.Errorf("camo from %s: %d of 200 views counted, want 60 to %d (-camo-key-rate 60/h, past the client burst of 20 and the repeat window)", github, c.Total, limit)
	}
	if refused.Load() != 200-int64(c.Total) {
		t.Errorf("%d answers said Visitors-Counted: false, want %d", refused.Load(), 200-c.Total)
	}
	if c.UniqueToday != 0 {
		t.Errorf("camo from %s: unique_today %d, want 0", github, c.UniqueToday)
	}
	for range 30 { // the bound is per key: another README's badge counts
		fetch(t, p.URL("/counter/other-readme.svg"), camoUA, github)
	}
	if c := mustCounts(t, p, "other-readme"); c.Total != 30 {
		t.Errorf("camo from %s to another key: total %d, want 30", github, c.Total)
	}
}

// TestUntrustedForwardedIsVisible: requests that carry X-Forwarded-For
// or Forwarded from a peer not in -trusted-proxies (visitors behind a
// reverse proxy that was not listed, all counted as one client) are
// counted in /metrics, shown by /healthz on the admin listener and
// logged once, naming the peer and the flag. Before, nothing said so:
// 40 visitors behind nginx gave total 24 and unique 1, silently.
func TestUntrustedForwardedIsVisible(t *testing.T) {
	p := servertest.Start(t, bin, nil, "-store", "memory")
	for i := range 39 {
		fetch(t, p.URL("/counter/behind.svg"), browserUA, fmt.Sprintf("198.51.100.%d", i))
	}
	req, _ := http.NewRequest("GET", p.URL("/hi"), nil)
	req.Header.Set("Forwarded", "for=198.51.100.99;proto=https")
	if resp, err := fairClient.Do(req); err != nil {
		t.Fatal(err)
	} else {
		resp.Body.Close()
	}
	_, _, body := fetch(t, p.AdminURL("/metrics"), browserUA, "")
	if want := "visitors_untrusted_forwarded_requests_total 40\n"; !strings.Contains(body, want) {
		t.Errorf("/metrics lacks %q", want)
	}
	code, _, body := fetch(t, p.AdminURL("/healthz"), browserUA, "")
	if code != 200 || !strings.HasPrefix(body, "ok\n") || !strings.Contains(body, "127.0.0.1") || !strings.Contains(body, "-trusted-proxies") {
		t.Errorf("/healthz = %d %q, want 200 ok with a warning naming 127.0.0.1 and -trusted-proxies", code, body)
	}
	if err := p.Stop(syscall.SIGTERM, 15*time.Second); err != nil {
		t.Fatal(err)
	}
	var warnings []string
	for line := range strings.Lines(p.Stdout()) {
		if strings.Contains(line, "-trusted-proxies") {
			warnings = append(warnings, line)
		}
	}
	if len(warnings) != 1 || !strings.Contains(warnings[0], `"level":"warn"`) || !strings.Contains(warnings[0], "127.0.0.1") {
		t.Errorf("log lines naming -trusted-proxies: %q, want one warning naming the peer 127.0.0.1", warnings)
	}

	// Listed, the proxy is believed and nothing is said.
	p = servertest.Start(t, bin, nil, "-store", "memory", "-trusted-proxies", "127.0.0.1")
	fetch(t, p.URL("/counter/behind.svg"), browserUA, "198.51.100.1")
	if _, _, body := fetch(t, p.AdminURL("/metrics"), browserUA, ""); !strings.Contains(body, "visitors_untrusted_forwarded_requests_total 0\n") {
		t.Errorf("with -trusted-proxies 127.0.0.1: /metrics lacks visitors_untrusted_forwarded_requests_total 0")
	}
	if code, _, body := fetch(t, p.AdminURL("/healthz"), browserUA, ""); code != 200 || body != "ok\n" {
		t.Errorf("with -trusted-proxies 127.0.0.1: /healthz = %d %q, want 200 \"ok\\n\"", code, body)
	}
}

// TestHealthzWarnsAtMaxKeys: a store at -max-keys answers every new name
// 503 while /healthz stays ok (each such 503 concerns one request); the
// operator learns it from a warning line of /healthz (the hostile review
// of issue 23 found /healthz silent).
func TestHealthzWarnsAtMaxKeys(t *testing.T) {
	p := servertest.Start(t, bin, rulesOff, "-store", "memory", "-log-level", "off", "-max-keys", "2")
	for _, k := range []string{"a", "b"} {
		if code, _, body := fetch(t, p.URL("/counter/"+k+".json"), browserUA, ""); code != 200 {
			t.Fatalf("/counter/%s.json = %d %s", k, code, body)
		}
	}
	if code, _, body := mustGet(t, p.AdminURL("/healthz")); code != 200 || !strings.Contains(body, "warning: the store holds 2 keys, -max-keys 2") {
		t.Errorf("/healthz at -max-keys = %d %q, want 200 with a warning naming the limit", code, body)
	}
}

// TestRefreshesAreNotCountedByDefault: the README promises that
// refreshes are not counted. With the default flags, five reloads of a
// badge by one browser count once (the other four are answered with
// Visitors-Counted: false), a reload of the same key's JSON too, and
// another browser, or the same one on another counter, counts. Before,
// -repeat-window defaulted to 0: the five reloads counted five.
func TestRefreshesAreNotCountedByDefault(t *testing.T) {
	p := servertest.Start(t, bin, nil, "-store", "memory", "-log-level", "off")
	for i := range 5 {
		code, h, _ := fetch(t, p.URL("/counter/reloaded.svg"), browserUA, "")
		if want := map[bool]string{true: "", false: "false"}[i == 0]; code != 200 || h.Get("Visitors-Counted") != want {
			t.Errorf("reload %d: %d, Visitors-Counted %q, want 200 and %q", i+1, code, h.Get("Visitors-Counted"), want)
		}
	}
	if _, h, _ := fetch(t, p.URL("/counter/reloaded.json"), browserUA, ""); h.Get("Visitors-Counted") != "false" {
		t.Errorf("the same browser's JSON of the key: Visitors-Counted %q, want false (a refresh)", h.Get("Visitors-Counted"))
	}
	if c := mustCounts(t, p, "reloaded"); c.Total != 1 {
		t.Errorf("five reloads and a JSON read by one browser counted %d, want 1", c.Total)
	}
	fetch(t, p.URL("/counter/reloaded.svg"), browserUA+" (another browser)", "")
	fetch(t, p.URL("/counter/other.svg"), browserUA, "")
	if c := mustCounts(t, p, "reloaded"); c.Total != 2 {
		t.Errorf("after another browser's view: total %d, want 2", c.Total)
	}
	if c := mustCounts(t, p, "other"); c.Total != 1 {
		t.Errorf("the same browser on another counter: total %d, want 1", c.Total)
	}
}
