package main

import (
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"visitors/internal/servertest"
	"visitors/internal/store"
)

// The tests in this file prove issue 37 on the real binary: the URLs of
// the closed counter services (HITS, CountAPI and Abacus, visitor-badge,
// the GitHub profile views counter) are answered as the services
// documented them, count into the keys docs/migrate.md names, and keep
// every fairness rule of the badges (crawlers, -client-rate,
// -client-new-keys), with its defaults. Clients are told apart by
// X-Forwarded-For from a trusted loopback proxy.

// compatKeys are the keys the URLs of TestCompatURLForms count into,
// as docs/migrate.md spells them.
const (
	keyHITS   = "hits/https~3A~2F~2Fgithub.com~2Focto~2Frepo"
	keyCount  = "countapi/mysite.com/visits"
	keyDefNS  = "countapi/default/visits"
	keyVB     = "visitor-badge/octo.repo"
	keyGHPVC  = "ghpvc/octo"
	urlHITS   = "url=https%3A%2F%2Fgithub.com%2Focto%2Frepo"
	ctSVG     = "image/svg+xml; charset=utf-8"
	ctJSONAPI = "application/json"
	ctJS      = "application/javascript; charset=utf-8"
)

// TestCompatURLForms: each URL form answers with the original's status,
// content type and body shape, and counts (or reads) the key it names;
// its parameters reach the badge; bad values are a 400 that says which,
// and count nothing.
func TestCompatURLForms(t *testing.T) {
	p := servertest.Start(t, bin, nil, "-store", "memory", "-log-level", "off", "-trusted-proxies", "127.0.0.1")
	var client atomic.Int64 // a new client for each request: no rate or repeat rule in the way
	get := func(path string) (int, map[string][]string, string) {
		return fetch(t, p.URL(path), browserUA, fmt.Sprintf("198.51.100.%d", client.Add(1)))
	}
	tests := []struct {
		name     string
		path     string
		code     int
		ct       string
		body     string // a regular expression the whole body matches
		key      string // the key whose total is then total
		total    uint64
		counted  bool
		errorHdr string // a substring of Visitors-Error, on a 400
	}{
		{"hits incr", "/api/count/incr/badge.svg?" + urlHITS, 200, ctSVG, `<svg .*aria-label="hits: 1 / 1".*</svg>\n`, keyHITS, 1, true, ""},
		{"hits incr again", "/api/count/incr/badge.svg?" + urlHITS, 200, ctSVG, `<svg .*aria-label="hits: 2 / 2".*`, keyHITS, 2, true, ""},
		{"hits keep", "/api/count/keep/badge.svg?" + urlHITS, 200, ctSVG, `<svg .*aria-label="hits: 2 / 2".*`, keyHITS, 2, false, ""},
		{"hits parameters", "/api/count/keep/badge.svg?" + urlHITS + "&count_bg=%23FF0000&title_bg=%23000000&icon=github.svg&icon_color=%23E7E7E7&title=views&edge_flat=true",
			200, ctSVG, `<svg .*aria-label="views: 2 / 2".*rx="0".*fill="#000000".*fill="#FF0000".*<svg [^>]*viewBox="0 0 24 24".*fill="#E7E7E7".*`, keyHITS, 2, false, ""},
		{"hits no url", "/api/count/incr/badge.svg?title=x", 400, ctSVG, `<svg .*aria-label="x: url missing".*`, "", 0, false, "Parameter url is required"},
		{"hits bad color", "/api/count/incr/badge.svg?" + urlHITS + "&count_bg=%23GGGGGG", 400, ctSVG, `<svg .*invalid count_bg.*`, keyHITS, 2, false, "count_bg"},
		{"hits bad icon", "/api/count/incr/badge.svg?" + urlHITS + "&icon=nosuchlogo.svg", 400, ctSVG, `<svg .*unknown icon.*`, keyHITS, 2, false, "icon"},
		{"hits bad edge_flat", "/api/count/incr/badge.svg?" + urlHITS + "&edge_flat=maybe", 400, ctSVG, `<svg .*invalid edge_flat.*`, keyHITS, 2, false, "edge_flat"},

		{"countapi hit", "/hit/mysite.com/visits", 200, ctJSONAPI, `\{"value":1\}\n`, keyCount, 1, true, ""},
		{"countapi hit again", "/hit/mysite.com/visits", 200, ctJSONAPI, `\{"value":2\}\n`, keyCount, 2, true, ""},
		{"countapi get", "/get/mysite.com/visits", 200, ctJSONAPI, `\{"value":2\}\n`, keyCount, 2, false, ""},
		{"countapi get missing", "/get/mysite.com/nothing", 404, ctJSONAPI, `\{"value":null\}\n`, "countapi/mysite.com/nothing", 0, false, ""},
		{"countapi jsonp", "/hit/mysite.com/visits?callback=cb", 200, ctJS, `/\*\*/cb\(\{"value":3\}\);\n`, keyCount, 3, true, ""},
		{"countapi jsonp missing", "/get/mysite.com/nothing?callback=my.cb_1", 200, ctJS, `/\*\*/my\.cb_1\(\{"status":404,"value":null\}\);\n`, "countapi/mysite.com/nothing", 0, false, ""},
		{"countapi jsonp hostile callback", "/hit/mysite.com/visits?callback=alert(document.cookie)", 400, ctJSONAPI, `\{"error":"callback must be a JavaScript name.*"\}\n`, keyCount, 3, false, ""},
		{"countapi default namespace", "/hit/visits", 200, ctJSONAPI, `\{"value":1\}\n`, keyDefNS, 1, true, ""},
		{"countapi three segments", "/hit/a/b/c", 404, ctJSONAPI, `\{"error":"not found: .*"\}\n`, "", 0, false, ""},
		{"countapi key too long", "/hit/ns/" + strings.Repeat("k", 130), 400, ctJSONAPI, `\{"error":"the counter's key, once escaped, would be longer than 128 bytes.*"\}\n`, "", 0, false, ""},

		{"visitor-badge", "/badge?page_id=octo.repo", 200, ctSVG, `<svg .*aria-label="visitors: 1".*fill="#595959".*fill="#1283c3".*`, keyVB, 1, true, ""},
		{"visitor-badge parameters", "/badge?page_id=octo.repo&left_text=Views&left_color=green&right_color=%23ff0000", 200, ctSVG, `<svg .*aria-label="Views: 2".*fill="#97ca00".*fill="#ff0000".*`, keyVB, 2, true, ""},
		{"visitor-badge no page_id", "/badge?left_text=Views", 400, ctSVG, `<svg .*aria-label="Views: page_id missing".*`, "", 0, false, "page_id"},
		{"visitor-badge bad color", "/badge?page_id=octo.repo&left_color=nocolor", 400, ctSVG, `<svg .*invalid left_color.*`, keyVB, 2, false, "left_color"},

		{"ghpvc", "/ghpvc/?username=octo", 200, ctSVG, `<svg .*aria-label="Profile views: 1".*fill="#007ec6".*`, keyGHPVC, 1, true, ""},
		{"ghpvc base abbreviated", "/ghpvc/?username=octo&base=1498&abbreviated=true", 200, ctSVG, `<svg .*aria-label="Profile views: 1.5k".*`, keyGHPVC, 2, true, ""},
		{"ghpvc label color style", "/ghpvc/?username=octo&label=Seen&color=0e75b6&style=for-the-badge", 200, ctSVG, `<svg .*height="28".*aria-label="SEEN: 3".*fill="#0e75b6".*`, keyGHPVC, 3, true, ""},
		{"ghpvc pixel", "/ghpvc/?username=octo&style=pixel", 200, ctSVG, `<svg .*rx="0".*`, keyGHPVC, 4, true, ""},
		{"ghpvc without slash", "/ghpvc?username=octo", 200, ctSVG, `<svg .*aria-label="Profile views: 5".*`, keyGHPVC, 5, true, ""},
		{"ghpvc bad base", "/ghpvc/?username=octo&base=-1", 400, ctSVG, `<svg .*invalid base.*`, keyGHPVC, 5, false, "base"},
		{"ghpvc huge base", "/ghpvc/?username=octo&base=99999999999999999999", 400, ctSVG, `<svg .*invalid base.*`, keyGHPVC, 5, false, "base"},
		{"ghpvc bad abbreviated", "/ghpvc/?username=octo&abbreviated=yes", 400, ctSVG, `<svg .*invalid abbreviated.*`, keyGHPVC, 5, false, "abbreviated"},
		{"ghpvc no username", "/ghpvc/", 400, ctSVG, `<svg .*username missing.*`, "", 0, false, "username"},
		{"ghpvc bad query", "/ghpvc/?username=octo&label=%zz", 400, ctSVG, `<svg .*invalid query.*`, keyGHPVC, 5, false, "URL encoding"},
		{"ghpvc markup in name", "/ghpvc/?username=%3Cscript%3E", 200, ctSVG, `<svg .*aria-label="Profile views: 1".*`, "ghpvc/~3Cscript~3E", 1, true, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, h, body := get(tt.path)
			ct := ""
			if v := h["Content-Type"]; len(v) > 0 {
				ct = v[0]
			}
			if code != tt.code || ct != tt.ct {
				t.Errorf("GET %s = %d %q, want %d %q", tt.path, code, ct, tt.code, tt.ct)
			}
			if !regexp.MustCompile(`^(?s)` + tt.body + `$`).MatchString(body) {
				t.Errorf("GET %s: body %q does not match %s", tt.path, body, tt.body)
			}
			if got := first(h, "Cache-Control"); got != "no-cache, no-store, must-revalidate" {
				t.Errorf("GET %s: Cache-Control %q, want no-cache", tt.path, got)
			}
			if got := first(h, "Visitors-Counted"); got != "" {
				t.Errorf("GET %s: Visitors-Counted %q from a new browser client", tt.path, got)
			}
			if got := first(h, "Visitors-Error"); !strings.Contains(got, tt.errorHdr) || (tt.errorHdr == "") != (got == "") {
				t.Errorf("GET %s: Visitors-Error %q, want one with %q", tt.path, got, tt.errorHdr)
			}
			if strings.Contains(body, "<script") {
				t.Errorf("GET %s: markup reflected: %q", tt.path, body)
			}
			if tt.ct == ctJSONAPI && first(h, "Access-Control-Allow-Origin") != "*" {
				t.Errorf("GET %s: no Access-Control-Allow-Origin: *, which CountAPI's callers in browsers need", tt.path)
			}
			if tt.key != "" {
				if got := mustCounts(t, p, tt.key).Total; got != tt.total {
					t.Errorf("after GET %s: %s total %d, want %d", tt.path, tt.key, got, tt.total)
				}
			}
		})
	}
	code, _, body := fetch(t, p.AdminURL("/metrics"), browserUA, "")
	for _, want := range []string{`route="compat"`, `visitors_visits_counted_total`} {
		if code != 200 || !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
}

// first returns the first value of h's header name.
func first(h map[string][]string, name string) string {
	if v := h[name]; len(v) > 0 {
		return v[0]
	}
	return ""
}

// compatForms are one URL of each service that counts, by service
// name, with a %s for the name they count.
var compatForms = map[string]string{
	"hits":          "/api/count/incr/badge.svg?url=%s",
	"countapi":      "/hit/ns/%s",
	"visitor-badge": "/badge?page_id=%s",
	"ghpvc":         "/ghpvc/?username=%s",
}

// compatKey is the key compatForms[service] counts name into.
func compatKey(service, name string) string {
	if service == "countapi" {
		return "countapi/ns/" + name
	}
	return service + "/" + name
}

// TestCompatBotsAreNotCounted: a crawler's and an HTTP library's visits
// through every service are answered with the counts as they are,
// marked Visitors-Counted: false, and counted nowhere.
func TestCompatBotsAreNotCounted(t *testing.T) {
	p := servertest.Start(t, bin, nil, "-store", "memory", "-log-level", "off", "-trusted-proxies", "127.0.0.1")
	for service, form := range compatForms {
		path := fmt.Sprintf(form, "bots")
		if code, _, _ := fetch(t, p.URL(path), browserUA, "198.51.100.1"); code != 200 {
			t.Fatalf("%s: GET %s from a browser = %d", service, path, code)
		}
		for i, ua := range []string{"Googlebot/2.1 (+http://www.google.com/bot.html)", "curl/8.5.0", "Go-http-client/1.1"} {
			code, h, _ := fetch(t, p.URL(path), ua, fmt.Sprintf("198.51.100.%d", 10+i))
			if code != 200 || first(h, "Visitors-Counted") != "false" {
				t.Errorf("%s: GET %s as %q = %d, Visitors-Counted %q; want 200, false", service, path, ua, code, first(h, "Visitors-Counted"))
			}
		}
		if got := mustCounts(t, p, compatKey(service, "bots")).Total; got != 1 {
			t.Errorf("%s: total %d after one browser and three bots, want 1", service, got)
		}
	}
}

// TestCompatRateLimit: one client's 200 quick visits through each
// service count at most -client-burst + -client-rate × elapsed (the
// defaults, 20 and 10/s), every answer a 200, the refused ones marked
// Visitors-Counted: false. Repeats are off (-repeat-window 0): with the
// default window one client's views of one key count once, before any
// rate applies.
func TestCompatRateLimit(t *testing.T) {
	const burst, rate = 20, 10.0
	for service, form := range compatForms {
		p := servertest.Start(t, bin, nil, "-store", "memory", "-log-level", "off", "-trusted-proxies", "127.0.0.1", "-repeat-window", "0")
		path := fmt.Sprintf(form, "burst")
		start := time.Now()
		var refused, bad atomic.Int64
		parallel(200, func(int) {
			code, h, _ := fetch(t, p.URL(path), browserUA, "198.51.100.1")
			if code != 200 {
				bad.Add(1)
			}
			if first(h, "Visitors-Counted") == "false" {
				refused.Add(1)
			}
		})
		elapsed := time.Since(start).Seconds()
		got := mustCounts(t, p, compatKey(service, "burst")).Total
		if limit := uint64(burst + math.Ceil(rate*elapsed)); got < burst || got > limit || bad.Load() != 0 {
			t.Errorf("%s: %d of 200 counted in %.1fs (%d not a 200), want %d to %d", service, got, elapsed, bad.Load(), burst, limit)
		}
		if refused.Load() != 200-int64(got) {
			t.Errorf("%s: %d answers said Visitors-Counted: false, want %d", service, refused.Load(), 200-got)
		}
	}
}

// TestCompatNewKeys: a client past -client-new-keys is refused a new
// key through any service with 429 and Retry-After (CountAPI's JSON
// error, the others' error badge), shares one budget with /counter/,
// and still counts on the keys it made.
func TestCompatNewKeys(t *testing.T) {
	p := servertest.Start(t, bin, nil, "-store", "memory", "-log-level", "off", "-trusted-proxies", "127.0.0.1", "-client-rate", "0", "-client-new-keys", "5/h")
	const xff = "198.51.100.1"
	// /counter/ spends one of the five; each service spends one more.
	if code, _, _ := fetch(t, p.URL("/counter/own.svg"), browserUA, xff); code != 200 {
		t.Fatalf("/counter/own.svg = %d", code)
	}
	for service, form := range compatForms {
		if code, _, body := fetch(t, p.URL(fmt.Sprintf(form, "made")), browserUA, xff); code != 200 {
			t.Fatalf("%s: first new key = %d %q", service, code, body)
		}
	}
	for service, form := range compatForms {
		path := fmt.Sprintf(form, "refused")
		code, h, body := fetch(t, p.URL(path), browserUA, xff)
		ra, err := strconv.Atoi(first(h, "Retry-After"))
		if code != 429 || err != nil || ra < 1 {
			t.Errorf("%s: GET %s past the budget = %d, Retry-After %q; want 429 and a Retry-After", service, path, code, first(h, "Retry-After"))
		}
		want := "rate limited"
		if service == "countapi" {
			want = `{"error":"too many new counters from your address`
		}
		if !strings.Contains(body, want) {
			t.Errorf("%s: 429 body %q lacks %q", service, body, want)
		}
		if got := mustCounts(t, p, compatKey(service, "refused")).Total; got != 0 {
			t.Errorf("%s: refused key counted %d", service, got)
		}
		if code, _, _ := fetch(t, p.URL(fmt.Sprintf(form, "made")), browserUA, xff); code != 200 {
			t.Errorf("%s: a key the client made = %d past the budget, want 200", service, code)
		}
	}
}

// TestCompatFlag: -compat none answers none of the services' paths
// (404), -compat countapi only CountAPI's, and the owner API keeps
// /api/v1/ while HITS's paths under /api/ are the compat routes'.
func TestCompatFlag(t *testing.T) {
	paths := map[string]string{}
	for service, form := range compatForms {
		paths[service] = fmt.Sprintf(form, "flag")
	}
	for _, tt := range []struct {
		flag string
		on   []string
	}{
		{"none", nil},
		{"countapi", []string{"countapi"}},
		{"hits,ghpvc", []string{"hits", "ghpvc"}},
		{"all", []string{"hits", "countapi", "visitor-badge", "ghpvc"}},
	} {
		env := append(append([]string{}, rulesOff...), "VISITORS_ADMIN_TOKEN="+apiRoot)
		p := servertest.Start(t, bin, env, "-store", "memory", "-log-level", "off", "-compat", tt.flag)
		for service, path := range paths {
			want := 404
			for _, s := range tt.on {
				if s == service {
					want = 200
				}
			}
			if code, _, body := fetch(t, p.URL(path), browserUA, ""); code != want {
				t.Errorf("-compat %s: GET %s = %d %q, want %d", tt.flag, path, code, body, want)
			}
		}
		if code, _, _ := fetch(t, p.URL("/api/v1/counters"), browserUA, ""); code != 401 {
			t.Errorf("-compat %s: the owner API's /api/v1/counters without a token = %d, want 401", tt.flag, code)
		}
	}
	cmd := command(t, bin, "-compat", "hits,nothing")
	if out, err := cmd.CombinedOutput(); err == nil || !strings.Contains(string(out), `unknown service "nothing"`) {
		t.Errorf("-compat hits,nothing = %v %q, want a refusal naming the service", err, out)
	}
}

// TestCompatOnEveryBackend: counts carried over as CSV through the owner
// API, then counted on through every service, come back from every
// backend that keeps them (embedded, Redis standalone and cluster)
// after a restart, keys at their longest and in odd UTF-8 included; the
// memory store, which cannot import, counts the same URLs.
func TestCompatOnEveryBackend(t *testing.T) {
	longest := strings.Repeat("n", store.MaxKeyBytes-len("ghpvc/"))
	csv := "key,total\n" +
		"countapi/mysite.com/visits,41\n" +
		"ghpvc/" + longest + ",9\n" +
		"ghpvc/~C3~A9,99\n" +
		"visitor-badge/octo.repo,7\n" +
		keyHITS + ",120\n"
	visits := []struct{ path, key string }{
		{"/hit/mysite.com/visits", "countapi/mysite.com/visits"},
		{"/ghpvc/?username=" + longest, "ghpvc/" + longest},
		{"/ghpvc/?username=%C3%A9", "ghpvc/~C3~A9"},
		{"/badge?page_id=octo.repo", "visitor-badge/octo.repo"},
		{"/api/count/incr/badge.svg?" + urlHITS, keyHITS},
	}
	want := map[string]uint64{"countapi/mysite.com/visits": 42, "ghpvc/" + longest: 10, "ghpvc/~C3~A9": 100, "visitor-badge/octo.repo": 8, keyHITS: 121}
	for _, backend := range []string{"memory", "embedded", "redis", "cluster"} {
		t.Run(backend, func(t *testing.T) {
			var args []string
			switch backend {
			case "memory":
				args = []string{"-store", "memory"}
			case "embedded":
				args = []string{"-data", t.TempDir()}
			default:
				args = redisArgs(t, backend == "cluster")
			}
			args = append(args, "-log-level", "off", "-trusted-proxies", "127.0.0.1")
			env := []string{"VISITORS_ADMIN_TOKEN=" + apiRoot}
			p := servertest.Start(t, bin, env, args...)
			if backend != "memory" {
				if r := apiDo(t, p, "POST", "/api/v1/import?format=csv", apiRoot, csv); r.code != 200 {
					t.Fatalf("CSV import = %d %s", r.code, r.body)
				}
			}
			for i, v := range visits {
				if code, _, body := fetch(t, p.URL(v.path), browserUA, fmt.Sprintf("198.51.100.%d", i+1)); code != 200 {
					t.Fatalf("GET %s = %d %q", v.path, code, body)
				}
			}
			check := func(p *servertest.Proc, when string) {
				for key, n := range want {
					if backend == "memory" {
						n = 1
					}
					if got := mustCounts(t, p, key).Total; got != n {
						t.Errorf("%s: %s total %d, want %d", when, key, got, n)
					}
				}
			}
			check(p, "before a restart")
			if backend == "memory" {
				return
			}
			if err := p.Stop(syscall.SIGTERM, 10*time.Second); err != nil {
				t.Fatal(err)
			}
			check(servertest.Start(t, bin, env, args...), "after a restart")
		})
	}
}
