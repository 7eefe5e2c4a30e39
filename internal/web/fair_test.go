package web

import (
	"context"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"visitors/internal/client"
	"visitors/internal/store"
	"visitors/internal/unique"
	"visitors/internal/webtest"
)

// The tests in this file each guard one fairness rule of the counting
// path (visit.go); cmd/visitors/fair_test.go proves them on the binary.

const firefox = "Mozilla/5.0 (X11; Linux x86_64; rv:133.0) Gecko/20100101 Firefox/133.0"

// serve sends GET target from remote with User-Agent ua, with a
// deadline as [get] has.
func serve(s *Server, target, remote, ua string) *httptest.ResponseRecorder {
	ctx, cancel := context.WithTimeout(context.Background(), webtest.Deadline)
	defer cancel()
	r := httptest.NewRequestWithContext(ctx, "GET", target, nil)
	r.RemoteAddr = remote
	r.Header.Set("User-Agent", ua)
	w := httptest.NewRecorder()
	s.ServeHTTP(w, r)
	return w
}

// TestRuleOrder: each rule refuses to count, with Visitors-Counted:
// false and its reason in the metrics, and answers the badge as it is.
func TestRuleOrder(t *testing.T) {
	s, st := mustServer(t, nil)
	withDefaultRules(t, s)
	s.visits.Rules.Repeats = unique.NewRepeats(time.Hour, 0)
	tests := []struct {
		name, ua, remote string
		counted          bool
	}{
		{"first view", firefox, "198.51.100.1:1", true},
		{"repeat within the window", firefox, "198.51.100.1:2", false},
		{"another browser of the same address is another visitor", "Mozilla/5.0 Chrome/131", "198.51.100.1:3", true},
		{"a crawler", "Mozilla/5.0 (compatible; bingbot/2.0; +http://www.bing.com/bingbot.htm)", "198.51.100.2:1", false},
		{"a link preview", "Discordbot/2.0", "198.51.100.2:1", false},
		{"camo", "github-camo (876de43e)", "140.82.115.1:1", true},
		{"camo again: no repeat rule, no identity", "github-camo (876de43e)", "140.82.115.1:1", true},
		{"camo's User-Agent from elsewhere is an ordinary visitor", "github-camo (876de43e)", "198.51.100.3:1", true},
		{"and its repeat is a repeat", "github-camo (876de43e)", "198.51.100.3:1", false},
	}
	for _, tt := range tests {
		before := mustCount(t, st, "k").Total
		w := serve(s, "/counter/k.svg", tt.remote, tt.ua)
		counted := mustCount(t, st, "k").Total - before
		if w.Code != 200 || !strings.HasPrefix(w.Body.String(), "<svg") {
			t.Errorf("%s: %d %q, want a 200 badge", tt.name, w.Code, w.Body)
		}
		if (counted == 1) != tt.counted || (w.Header().Get("Visitors-Counted") == "false") == tt.counted {
			t.Errorf("%s: counted %d, Visitors-Counted %q; want counted %v", tt.name, counted, w.Header().Get("Visitors-Counted"), tt.counted)
		}
	}
	got := mustGather(t, s.req)
	for reason, want := range map[string]float64{"repeat": 2, "bot": 2, "rate_limited": 0} {
		if got["visitors_visits_not_counted_total reason="+reason] != want {
			t.Errorf("not counted for %s: %v, want %v", reason, got["visitors_visits_not_counted_total reason="+reason], want)
		}
	}
	if got := mustUnique(t, s, "k"); got != "3" {
		t.Errorf("unique visitors = %s, want 3 (camo and bots are none)", got)
	}
}

func mustUnique(tb testing.TB, s *Server, key string) string {
	tb.Helper()
	w := serve(s, "/counter/"+key+".svg?count=false&show=unique&label=", "192.0.2.99:1", firefox)
	_, after, ok := strings.Cut(w.Body.String(), `aria-label="`)
	if !ok {
		tb.Fatalf("no aria-label in %q", w.Body)
	}
	v, _, _ := strings.Cut(after, `"`)
	return v
}

// TestRateLimitedBadgeShowsTheCount: past the burst a client's badge
// still shows the current count, and /hi is never limited.
func TestRateLimitedBadgeShowsTheCount(t *testing.T) {
	s, st := mustServer(t, nil)
	withDefaultRules(t, s)
	setNow(s, func() time.Time { return day0 }) // a clock that stands still: no refill
	for i := range 25 {
		w := serve(s, "/counter/r.svg", "198.51.100.7:1", firefox)
		want := `aria-label="visitors: ` + itoa(min(i+1, 20)) + `"`
		if w.Code != 200 || !strings.Contains(w.Body.String(), want) {
			t.Fatalf("visit %d: %d, want a badge with %s", i+1, w.Code, want)
		}
	}
	if got := mustCount(t, st, "r").Total; got != 20 {
		t.Errorf("total %d, want the burst of 20", got)
	}
	for range 30 {
		serve(s, "/hi", "198.51.100.7:1", firefox)
	}
	if n := mustHit(t, st); n != 31 {
		t.Errorf("/hi: next number %d, want 31: /hi counts every visit", n)
	}
}

func itoa(n int) string { return strconv.Itoa(n) }

// TestNewKeyLimit: past -client-new-keys a new key is a 429 badge with
// Retry-After and creates nothing; /hello is the same counter space and
// answers in text.
func TestNewKeyLimit(t *testing.T) {
	s, st := mustServer(t, nil)
	withDefaultRules(t, s)
	setNow(s, func() time.Time { return day0 })
	nk := client.Rate{Events: 3, Per: time.Hour}
	s.visits.Rules.Limiter = client.NewLimiter(client.LimiterOptions{NewKeys: nk})
	s.visits.Rules.NewKeys = nk
	for i := range 3 {
		if w := serve(s, "/counter/n"+itoa(i)+".svg", "198.51.100.8:1", firefox); w.Code != 200 {
			t.Fatalf("new key %d = %d", i, w.Code)
		}
	}
	w := serve(s, "/counter/n99.svg?style=plastic", "198.51.100.8:1", firefox)
	if w.Code != 429 || w.Header().Get("Retry-After") != "1200" || !strings.Contains(w.Body.String(), "rate limited") || !strings.Contains(w.Body.String(), `height="18"`) {
		t.Errorf("4th new key = %d %v %q, want a plastic 429 badge with Retry-After 1200", w.Code, w.Header(), w.Body)
	}
	if msg := errorMessage(t, w); !strings.Contains(msg, "3/h") {
		t.Errorf("429 message %q does not quote the limit", msg)
	}
	w = serve(s, "/hello?name=fresh", "198.51.100.8:1", firefox)
	if w.Code != 429 || !strings.Contains(w.Body.String(), "3/h") {
		t.Errorf("/hello with a new name past the limit = %d %q", w.Code, w.Body)
	}
	if st.Keys() != 3 {
		t.Errorf("Keys() = %d, want 3", st.Keys())
	}
	if w := serve(s, "/counter/n0.svg", "198.51.100.8:1", firefox); w.Code != 200 || mustCount(t, st, "n0").Total != 2 {
		t.Errorf("a key made before still counts: %d, total %d", w.Code, mustCount(t, st, "n0").Total)
	}
	if w := serve(s, "/counter/other.svg", "198.51.100.9:1", firefox); w.Code != 200 {
		t.Errorf("another client's new key = %d, want 200", w.Code)
	}
}

// TestLockedKeyCountsNothing: a key its owner locked answers every
// counting endpoint with its count, marked not counted, adds no unique
// visitor, is not shown to the top list, and is reported under the
// locked reason; unlocked, it counts again.
func TestLockedKeyCountsNothing(t *testing.T) {
	s, st := mustServer(t, nil)
	withDefaultRules(t, s)
	s.top, s.cal = newBoard(Config{Store: st, PublicTop: true})
	ctx := t.Context()
	if _, err := st.Set(ctx, []byte("frozen"), 41); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Lock(ctx, []byte("frozen"), true); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Lock(ctx, []byte("new/locked"), true); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		target, want string
	}{
		{"/counter/frozen.svg", `aria-label="visitors: 41"`},
		{"/counter/frozen.json", `{"key":"frozen","total":41,"today":0,"unique_today":0}`},
		{"/hello?name=frozen", "<p>Count: 41</p>"},
		{"/counter/new/locked.svg", `aria-label="visitors: 0"`},
	}
	for i, tt := range tests {
		w := serve(s, tt.target, "198.51.100.40:"+itoa(i+1), firefox)
		if w.Code != 200 || !strings.Contains(w.Body.String(), tt.want) || w.Header().Get("Visitors-Counted") != "false" {
			t.Errorf("GET %s = %d %q, Visitors-Counted %q; want 200 with %s, not counted", tt.target, w.Code, w.Body, w.Header().Get("Visitors-Counted"), tt.want)
		}
	}
	if c := mustCount(t, st, "frozen"); c.Total != 41 || !c.Locked {
		t.Errorf("frozen = %+v, want total 41, locked", c)
	}
	if c := mustCount(t, st, "new/locked"); c.Total != 0 || !c.Locked {
		t.Errorf("new/locked = %+v, want total 0, locked", c)
	}
	if got := mustUnique(t, s, "frozen"); got != "0" {
		t.Errorf("unique visitors of a locked key = %s, want 0", got)
	}
	if got := mustGather(t, s.req)["visitors_visits_not_counted_total reason=locked"]; got != 4 {
		t.Errorf("not counted for locked: %v, want 4", got)
	}
	w := serve(s, "/top.json?days=1", "198.51.100.41:1", firefox)
	if strings.Contains(w.Body.String(), "frozen") {
		t.Errorf("/top.json lists a locked key: %s", w.Body)
	}
	if _, err := st.Lock(ctx, []byte("frozen"), false); err != nil {
		t.Fatal(err)
	}
	w = serve(s, "/counter/frozen.json", "198.51.100.42:1", firefox)
	if !strings.Contains(w.Body.String(), `"total":42`) || w.Header().Get("Visitors-Counted") != "" {
		t.Errorf("after unlocking: %q, Visitors-Counted %q; want total 42, counted", w.Body, w.Header().Get("Visitors-Counted"))
	}
}

// endpoint is a counting endpoint, as the rule tests reach it.
type endpoint struct {
	name   string
	target func(key string) string
	keyed  bool // a counter of a key: the fairness rules apply
}

// endpoints are every counting endpoint: the rules apply to the keyed
// counters (the badge, its JSON and /hello), never to /hi.
var endpoints = []endpoint{
	{"badge", func(k string) string { return "/counter/" + k + ".svg" }, true},
	{"json", func(k string) string { return "/counter/" + k + ".json" }, true},
	{"hello", func(k string) string { return "/hello?name=" + k }, true},
	{"hi", func(string) string { return "/hi" }, false},
}

// visitCounted sends one visit to ep's key from remote with ua and
// reports whether the store counted it: the key's total, or for /hi the
// global number (read by taking one before and one after).
func visitCounted(t *testing.T, s *Server, st store.Store, ep endpoint, key, remote, ua string) (*httptest.ResponseRecorder, bool) {
	t.Helper()
	if !ep.keyed {
		before := mustHit(t, st)
		w := serve(s, ep.target(key), remote, ua)
		return w, mustHit(t, st)-before == 2
	}
	before := mustCount(t, st, key).Total
	w := serve(s, ep.target(key), remote, ua)
	return w, mustCount(t, st, key).Total-before == 1
}

// TestRulesOnEveryEndpoint: each fairness rule — bots, the per-client
// rate, the repeat window, the per-client budget of new keys — refuses to
// count on every keyed endpoint (/counter/{key}.svg, /counter/{key}.json,
// /hello?name=), with Visitors-Counted: false (a 429 for a new key) and
// its reason in the metrics, and never on /hi, which counts every visit.
// Each rule is first brought to the edge by visits it lets count (through
// the endpoint itself; for the new-key budget on /hi, through badges).
// A rule applied only to /counter/ (bots or repeats, planted on
// countReq.listed) fails it on /hello, as it passed every other test.
func TestRulesOnEveryEndpoint(t *testing.T) {
	const bingbot = "Mozilla/5.0 (compatible; bingbot/2.0; +http://www.bing.com/bingbot.htm)"
	type step struct{ key, ua string }
	rules := []struct {
		name   string
		setup  func(s *Server)
		before []step // counted on every endpoint
		last   step   // refused where the rule applies
		reason string
		status int // of the refused visit
	}{
		{
			name:   "bots",
			setup:  func(*Server) {},
			before: []step{{"k", firefox}},
			last:   step{"k", bingbot},
			reason: "bot", status: 200,
		},
		{
			name:   "per-client rate",
			setup:  func(s *Server) { setNow(s, func() time.Time { return day0 }) }, // no refill
			before: slices.Repeat([]step{{"k", firefox}}, 20),                       // the burst
			last:   step{"k", firefox},
			reason: "rate_limited", status: 200,
		},
		{
			name:   "repeat window",
			setup:  func(s *Server) { s.visits.Rules.Repeats = unique.NewRepeats(time.Hour, 0) },
			before: []step{{"k", firefox}},
			last:   step{"k", firefox},
			reason: "repeat", status: 200,
		},
		{
			name: "new-key budget",
			setup: func(s *Server) {
				setNow(s, func() time.Time { return day0 })
				nk := client.Rate{Events: 3, Per: time.Hour}
				s.visits.Rules.Limiter = client.NewLimiter(client.LimiterOptions{NewKeys: nk})
				s.visits.Rules.NewKeys = nk
			},
			before: []step{{"n0", firefox}, {"n1", firefox}, {"n2", firefox}},
			last:   step{"n3", firefox},
			reason: "rate_limited", status: 429,
		},
	}
	for _, rule := range rules {
		for _, ep := range endpoints {
			t.Run(rule.name+"/"+ep.name, func(t *testing.T) {
				s, st := mustServer(t, nil)
				withDefaultRules(t, s)
				rule.setup(s)
				const remote = "198.51.100.60:1"
				prep := ep
				if !ep.keyed && rule.name == "new-key budget" {
					prep = endpoints[0] // /hi makes no key: spend the budget on badges
				}
				for i, v := range rule.before {
					if w, counted := visitCounted(t, s, st, prep, v.key, remote, v.ua); w.Code != 200 || !counted {
						t.Fatalf("visit %d to %s before the rule's edge: %d, counted %v; want a counted 200", i, prep.target(v.key), w.Code, counted)
					}
				}
				w, counted := visitCounted(t, s, st, ep, rule.last.key, remote, rule.last.ua)
				notCounted := mustGather(t, s.req)["visitors_visits_not_counted_total reason="+rule.reason]
				target := ep.target(rule.last.key)
				if !ep.keyed {
					if w.Code != 200 || !counted || w.Header().Get("Visitors-Counted") != "" || notCounted != 0 {
						t.Errorf("GET %s = %d, counted %v, Visitors-Counted %q, not counted for %s %v; want a counted 200: the rule must not apply to /hi",
							target, w.Code, counted, w.Header().Get("Visitors-Counted"), rule.reason, notCounted)
					}
					return
				}
				if counted || w.Code != rule.status || notCounted != 1 {
					t.Errorf("GET %s = %d, counted %v, not counted for %s %v; want %d, not counted, reported once", target, w.Code, counted, rule.reason, notCounted, rule.status)
				}
				if rule.status == 200 && w.Header().Get("Visitors-Counted") != "false" {
					t.Errorf("GET %s: Visitors-Counted %q, want false", target, w.Header().Get("Visitors-Counted"))
				}
				if rule.status == 429 && (w.Header().Get("Retry-After") == "" || mustCount(t, st, rule.last.key).Total != 0) {
					t.Errorf("GET %s: Retry-After %q, total %d; want a Retry-After and no key made", target, w.Header().Get("Retry-After"), mustCount(t, st, rule.last.key).Total)
				}
			})
		}
	}
}
