package web

import (
	"encoding/json"
	"encoding/xml"
	"fmt"
	"net/http/httptest"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"testing"

	"visitors/internal/race"
	"visitors/internal/store"
	"visitors/internal/webtest"
)

func TestCounterBadge(t *testing.T) {
	s, _ := mustServer(t, nil)
	for i, want := range []string{"visitors: 1", "visitors: 2"} {
		w := get(t, s, "GET", "/counter/octocat/hello-world.svg")
		if w.Code != 200 {
			t.Fatalf("visit %d = %d %q", i, w.Code, w.Body)
		}
		for k, v := range map[string]string{
			"Content-Type":  "image/svg+xml; charset=utf-8",
			"Cache-Control": "no-cache, no-store, must-revalidate",
			"Expires":       "0",
		} {
			if got := w.Header().Get(k); got != v {
				t.Errorf("%s = %q, want %q", k, got, v)
			}
		}
		if !strings.Contains(w.Body.String(), `aria-label="`+want+`"`) {
			t.Errorf("visit %d: badge lacks aria-label %q:\n%s", i, want, w.Body)
		}
		if err := xml.Unmarshal(w.Body.Bytes(), new(struct{})); err != nil {
			t.Errorf("badge is not well-formed: %v", err)
		}
	}
}

func TestCounterParams(t *testing.T) {
	s, _ := mustServer(t, nil)
	for range 1234 {
		get(t, s, "GET", "/counter/big.json")
	}
	checkShows(t, s, []shows{
		{"/counter/big.svg?count=false&abbreviated=true", `aria-label="visitors: 1.2k"`},
		{"/counter/big.svg?count=false&label=page%20views", `aria-label="page views: 1234"`},
		{"/counter/big.svg?count=false&label=%3Cb%3E", `aria-label="&lt;b&gt;: 1234"`},
		{"/counter/big.svg?count=false&show=today", `aria-label="visitors: 1234"`},
		{"/counter/big.svg?count=false&color=blue&label_color=fff", `fill="#007ec6"`},
		{"/counter/big.svg?count=false&color=blue&label_color=fff", `fill="#fff"`},
		{"/counter/big.svg?count=false&style=for-the-badge", `aria-label="VISITORS: 1234"`},
		{"/counter/big.svg?count=false&style=plastic", `height="18"`},
		{"/counter/big.svg?count=false&style=flat-square", `rx="0"`},
		{"/counter/big.svg?count=false&label=", `aria-label="1234"`},
	})
	w := get(t, s, "GET", "/counter/big.json?count=false")
	if w.Body.String() != `{"key":"big","total":1234,"today":1234,"unique_today":1}`+"\n" || w.Header().Get("Access-Control-Allow-Origin") != "*" {
		t.Errorf("json = %q with ACAO %q", w.Body, w.Header().Get("Access-Control-Allow-Origin"))
	}
}

func TestCounterReadOnlyCarriesETag(t *testing.T) {
	s, st := mustServer(t, nil)
	get(t, s, "GET", "/counter/e.svg")
	w := get(t, s, "GET", "/counter/e.svg?count=false")
	etag := w.Header().Get("Etag")
	if w.Code != 200 || etag == "" {
		t.Fatalf("count=false = %d with ETag %q, want 200 and an ETag", w.Code, etag)
	}
	if w := get(t, s, "GET", "/counter/e.svg?count=false", "If-None-Match", etag); w.Code != 304 || w.Body.Len() != 0 {
		t.Errorf("If-None-Match with the ETag = %d %q, want 304 and no body", w.Code, w.Body)
	}
	get(t, s, "GET", "/counter/e.svg")
	if w := get(t, s, "GET", "/counter/e.svg?count=false", "If-None-Match", etag); w.Code != 200 {
		t.Errorf("after a new visit, the old ETag = %d, want 200", w.Code)
	}
	if c := mustCount(t, st, "e"); c.Total != 2 {
		t.Errorf("count=false reads counted visits: total %d, want 2", c.Total)
	}
}

func TestCounterRejects(t *testing.T) {
	tests := []struct {
		target string
		code   int
	}{
		{"/counter/a//b.svg", 400}, {"/counter/./a.svg", 400}, {"/counter/a/...svg", 400}, {"/counter/a/....svg", 200},
		{"/counter/a/../b.svg", 400}, {"/counter/.svg", 400}, {"/counter/a%20b.svg", 400}, {"/counter/a%3Cb.svg", 400},
		{"/counter/" + strings.Repeat("k", 129) + ".svg", 400}, {"/counter/" + strings.Repeat("k", 128) + ".svg", 200},
		{"/counter/k", 404}, {"/counter/k.png", 404}, {"/counter/", 404},
		{"/counter/k.svg?color=%23fff", 400}, {"/counter/k.svg?color=purpl", 400}, {"/counter/k.svg?label_color=12", 400}, {"/counter/k.svg?labelColor=12", 400}, {"/counter/k.svg?logoColor=12&logo=go", 400},
		{"/counter/k.svg?style=social", 400}, {"/counter/k.svg?count=maybe", 400}, {"/counter/k.svg?abbreviated=yes", 400},
		{"/counter/k.svg?show=week", 400}, {"/counter/k.svg?label=" + strings.Repeat("x", 65), 400},
		{"/counter/k.svg?label=" + strings.Repeat("%C3%A9", 64), 200}, {"/counter/k.svg?label=%FF", 400}, {"/counter/k.svg?label=%zz", 400},
		{"/counter/k/daily.json?days=0", 400}, {"/counter/k/daily.json?days=366", 400}, {"/counter/k/daily.json?days=x", 400},
	}
	for _, tt := range tests {
		s, st := mustServer(t, nil)
		w := get(t, s, "GET", tt.target)
		if w.Code != tt.code {
			t.Errorf("GET %s = %d %q, want %d", tt.target, w.Code, w.Body, tt.code)
		}
		if tt.code != 200 && st.Keys() != 0 {
			t.Errorf("GET %s was rejected but counted a visit", tt.target)
		}
		if msg := errorMessage(t, w); tt.code == 400 && (strings.Contains(msg, "<") || msg == "") {
			t.Errorf("GET %s: 400 message %q is empty or reflects markup", tt.target, msg)
		}
	}
}

func TestCounterDailyAndGraph(t *testing.T) {
	s, _ := mustServer(t, nil)
	for range 3 {
		get(t, s, "GET", "/counter/d.svg")
	}
	w := get(t, s, "GET", "/counter/d/daily.json?days=7")
	var got struct {
		Key  string
		Days []struct {
			Date  string
			Count uint64
		}
	}
	if err := json.Unmarshal(w.Body.Bytes(), &got); err != nil || w.Code != 200 {
		t.Fatalf("daily.json = %d %q: %v", w.Code, w.Body, err)
	}
	if got.Key != "d" || len(got.Days) != 7 || got.Days[6].Count != 3 || got.Days[0].Count != 0 || got.Days[0].Date >= got.Days[6].Date {
		t.Errorf("daily.json = %+v, want 7 days oldest first, 3 visits today", got)
	}
	if w.Header().Get("Access-Control-Allow-Origin") != "*" {
		t.Error("daily.json lacks Access-Control-Allow-Origin: *")
	}
	if def := get(t, s, "GET", "/counter/d/daily.json"); strings.Count(def.Body.String(), `"date"`) != 30 {
		t.Errorf("daily.json without days has %d days, want 30", strings.Count(def.Body.String(), `"date"`))
	}
	g := get(t, s, "GET", "/counter/d/graph.svg?days=14")
	if g.Code != 200 || g.Header().Get("Content-Type") != "image/svg+xml; charset=utf-8" {
		t.Fatalf("graph.svg = %d %q", g.Code, g.Header().Get("Content-Type"))
	}
	if err := xml.Unmarshal(g.Body.Bytes(), new(struct{})); err != nil {
		t.Errorf("graph.svg is not well-formed: %v", err)
	}
	if !strings.Contains(g.Body.String(), "d: 3 visits in the last 14 days") {
		t.Errorf("graph.svg lacks its title:\n%s", g.Body)
	}
}

func TestNamesAndKeysShareCounters(t *testing.T) {
	s, _ := mustServer(t, nil)
	get(t, s, "GET", "/hello?name=octocat")
	w := get(t, s, "GET", "/counter/octocat.json")
	if !strings.Contains(w.Body.String(), `"total":2`) {
		t.Errorf("/counter/octocat.json after /hello?name=octocat = %q, want total 2", w.Body)
	}
}

func TestLanding(t *testing.T) {
	s, _ := mustServer(t, nil)
	w := get(t, s, "GET", "/")
	if w.Code != 200 || !strings.HasPrefix(w.Header().Get("Content-Type"), "text/html") || !strings.Contains(w.Body.String(), `<form id="maker"`) {
		t.Fatalf("GET / = %d %q", w.Code, w.Header().Get("Content-Type"))
	}
	for _, external := range []string{"http://", "https://", "//cdn"} {
		if strings.Contains(w.Body.String(), external) {
			t.Errorf("landing page refers to an external asset (%s)", external)
		}
	}
	csp := w.Header().Get("Content-Security-Policy")
	if !strings.Contains(csp, "script-src 'self'") || strings.Contains(csp, "unsafe-eval") || strings.Contains(csp, "script-src 'unsafe-inline'") {
		t.Errorf("landing page CSP = %q, want script-src 'self' and no inline script", csp)
	}
	if strings.Contains(w.Body.String(), "<script>") || regexp.MustCompile(`\son[a-z]+=`).MatchString(w.Body.String()) {
		t.Errorf("landing page holds an inline script or event handler, which its CSP refuses")
	}
	js := get(t, s, "GET", "/landing.js")
	if js.Code != 200 || !strings.HasPrefix(js.Header().Get("Content-Type"), "text/javascript") || !strings.Contains(js.Body.String(), "getElementById('maker')") {
		t.Errorf("GET /landing.js = %d %q", js.Code, js.Header().Get("Content-Type"))
	}
}

// TestCounterAllocs: serving a badge allocates at most once beyond the
// response (the budget of the issue); counting and rendering allocate
// nothing.
// With the default fairness rules (see withDefaultRules), every request
// is counted: each takes the whole counting path.
func TestCounterAllocs(t *testing.T) {
	if race.Enabled {
		t.Skip("allocation budgets are checked without -race")
	}
	for _, rules := range []bool{false, true} {
		s, st := mustServer(t, nil)
		if rules {
			withDefaultRules(t, s)
		}
		for _, target := range []string{"/counter/octocat/hello-world.svg", "/counter/k.svg?style=for-the-badge&label=page%20views&color=blue&abbreviated=true", "/counter/k.json", "/counter/k.svg?show=unique", "/counter/k.svg?labelColor=purple&logoColor=pink&label_color=fff&days=7&%6C%61%62%65%6C=x", "/hello?name=gopher"} {
			r := httptest.NewRequest("GET", target, nil)
			r.Header.Set("User-Agent", "Mozilla/5.0 (X11; Linux x86_64; rv:133.0) Gecko/20100101 Firefox/133.0")
			w := webtest.NewResponseWriter()
			s.ServeHTTP(w, r)
			key := strings.TrimSuffix(strings.TrimSuffix(strings.TrimPrefix(strings.SplitN(target, "?", 2)[0], "/counter/"), ".svg"), ".json")
			if strings.HasPrefix(target, "/hello") {
				key = "gopher"
			}
			before := mustCount(t, st, key).Total
			if got := testing.AllocsPerRun(500, func() { w.Reset(); s.ServeHTTP(w, r) }); got > 1 {
				t.Errorf("rules %v: GET %s allocs = %v, want at most 1", rules, target, got)
			}
			if w.Code != 200 {
				t.Errorf("rules %v: GET %s = %d", rules, target, w.Code)
			}
			if got := mustCount(t, st, key).Total - before; got != 501 {
				t.Errorf("rules %v: GET %s counted %d of 501 requests", rules, target, got)
			}
		}
	}
}

// BenchmarkCounterBadge serves a counting badge request with the
// default fairness rules, as the service runs.
func BenchmarkCounterBadge(b *testing.B) {
	benchServeRules(b, "/counter/octocat/hello-world.svg", true)
}

func BenchmarkCounterBadgeParallel(b *testing.B) {
	benchServeParallelRules(b, "/counter/octocat/hello-world.svg", true)
}

// BenchmarkCounterJSON is BenchmarkCounterBadge for the JSON read of a
// counter, which counts the visit too and reads today's unique visitors.
func BenchmarkCounterJSON(b *testing.B) {
	benchServeRules(b, "/counter/octocat/hello-world.json", true)
}

func BenchmarkCounterJSONParallel(b *testing.B) {
	benchServeParallelRules(b, "/counter/octocat/hello-world.json", true)
}

// BenchmarkCounterRules prices the fairness rules side by side in one
// run: compare with benchstat -col /rules.
func BenchmarkCounterRules(b *testing.B) {
	for _, rules := range []bool{false, true} {
		b.Run(fmt.Sprintf("rules=%v", rules), func(b *testing.B) { benchServeRules(b, "/counter/octocat/hello-world.svg", rules) })
	}
}

// FuzzCounter: whatever the path and query, a response is a 200, a 400
// or a 404 without reflected markup; a refused request counts nothing;
// an accepted .svg or .json request counts exactly one visit to its key
// unless count is false, and daily.json and graph.svg count none.
func FuzzCounter(f *testing.F) {
	for _, s := range []string{"k.svg|label=x", "a/b.json|count=false", "k/daily.json|days=3", "k.svg|label=%3Cscript%3E&color=%22", "../x.svg|", "k.svg|style=%00",
		"k.json|", "k.json|count=0", "k.svg|c%6Funt=false", "k.svg|show=unique&count=false", "k.json|show=unique", "k/graph.svg|days=365", "x/daily.json|count=true", "k.json|count=1&count=false", "k.json|a;b",
		"k.svg|logo=github&logo_color=blue", "k.svg|logo=nope&label=%3Cscript%3E", "k.json|logo=nope", "k.svg|logo=%zz", "k.svg|logo_color=%3C"} {
		f.Add(s)
	}
	s, st := mustServer(f, nil)
	f.Fuzz(func(t *testing.T, in string) {
		path, q, _ := strings.Cut(in, "|")
		r := httptest.NewRequest("GET", "/", nil)
		r.URL.Path = "/counter/" + path
		r.URL.RawQuery = q
		// The key is the path less its suffix; every candidate is
		// watched, so a visit counted to the wrong key shows too.
		var candidates []string
		for _, suffix := range []string{"/daily.json", "/graph.svg", ".svg", ".json"} {
			if k, ok := strings.CutSuffix(path, suffix); ok && !slices.Contains(candidates, k) {
				candidates = append(candidates, k)
			}
		}
		total := func() (sum uint64) {
			for _, k := range candidates {
				sum += mustCount(t, st, k).Total
			}
			return sum
		}
		keys, before := st.Keys(), total()
		w := httptest.NewRecorder()
		s.ServeHTTP(w, r)
		counted := total() - before
		switch w.Code {
		case 200:
			if ct := w.Header().Get("Content-Type"); strings.HasPrefix(ct, "image/svg") {
				if err := xml.Unmarshal(w.Body.Bytes(), new(struct{})); err != nil {
					t.Fatalf("%q: badge not well-formed: %v", in, err)
				}
				if strings.Contains(w.Body.String(), "<script") {
					t.Fatalf("%q: markup in the badge", in)
				}
			}
			reads := strings.HasSuffix(path, "/daily.json") || strings.HasSuffix(path, "/graph.svg")
			if reads && counted != 0 {
				t.Fatalf("%q: daily.json or graph.svg counted %d visits, want 0", in, counted)
			}
			if counted > 1 || st.Keys() > keys+1 {
				t.Fatalf("%q: counted %d visits and %d new keys, want at most 1", in, counted, st.Keys()-keys)
			}
			if vals, err := url.ParseQuery(q); err == nil && !reads {
				want := uint64(1)
				if v := vals.Get("count"); v == "false" || v == "0" {
					want = 0
				}
				if counted != want {
					t.Fatalf("%q: accepted with count=%q but counted %d visits, want %d", in, vals.Get("count"), counted, want)
				}
			}
			var js struct {
				Key   string
				Total *uint64
			}
			if json.Unmarshal(w.Body.Bytes(), &js) == nil && js.Total != nil {
				if got := mustCount(t, st, js.Key).Total; got != *js.Total || !slices.Contains(candidates, js.Key) {
					t.Fatalf("%q: JSON says key %q total %d; the store holds %d", in, js.Key, *js.Total, got)
				}
			}
		case 400, 404:
			if st.Keys() != keys || counted != 0 {
				t.Fatalf("%q: rejected with %d but counted %d visits and %d new keys", in, w.Code, counted, st.Keys()-keys)
			}
			if msg := errorMessage(t, w); strings.ContainsAny(msg, "<>") {
				t.Fatalf("%q: %d message reflects markup: %q", in, w.Code, msg)
			}
		default:
			t.Fatalf("%q: status %d", in, w.Code)
		}
	})
}

// TestRouteNamesAreTheRoutes: every name of store.RouteNames is a route
// below a key, which is why ValidKey refuses a key ending in it; and a
// key ending in any other word routes to that key.
func TestRouteNamesAreTheRoutes(t *testing.T) {
	s, _ := mustServer(t, nil)
	routes := map[string]bool{}
	for _, name := range store.RouteNames {
		for _, ext := range []string{".svg", ".json", ""} {
			path := "/counter/ns/" + name + ext
			if key, _, ok := splitCounterPath(path[len("/counter/"):]); ok && key == "ns" {
				routes[name] = true
			}
			if name == "stream" && ext == "" {
				// The stream of ns, its HEAD answered at once with no
				// body; served by get, a HEAD that streams (mutant
				// stream.go:88:14) fails at get's bound, not at go
				// test's timeout.
				w := get(t, s, "HEAD", path)
				if w.Body.Len() != 0 {
					t.Errorf("HEAD %s = %d with %q, want no body", path, w.Code, w.Body)
				}
				routes[name] = routes[name] || w.Code == 200
			}
		}
		if store.ValidPublicKey("ns/" + name) {
			t.Errorf("ValidPublicKey(%q) = true, want false", "ns/"+name)
		}
	}
	for _, name := range store.RouteNames {
		if !routes[name] {
			t.Errorf("%q is in store.RouteNames but no route of ns ends in it", name)
		}
	}
}

// TestImageAndJSONHeaders: every SVG answer (a badge, a graph, an error
// badge, a 304) carries X-Content-Type-Options: nosniff and a
// Content-Security-Policy that loads and runs nothing, and every JSON
// answer nosniff. A hostile review found graph.svg and daily.json
// without nosniff, and no SVG with a policy.
func TestImageAndJSONHeaders(t *testing.T) {
	s, _ := mustServer(t, nil)
	get(t, s, "GET", "/counter/h.svg")
	tests := []struct {
		name, target string
		code         int
		svg          bool
	}{
		{"badge", "/counter/h.svg", 200, true},
		{"badge read", "/counter/h.svg?count=false", 200, true},
		{"graph", "/counter/h/graph.svg", 200, true},
		{"error badge", "/counter/h.svg?style=round", 400, true},
		{"graph error", "/counter/h/graph.svg?days=0", 400, true},
		{"not found badge", "/counter/h.svg/", 404, false},
		{"json", "/counter/h.json", 200, false},
		{"daily", "/counter/h/daily.json", 200, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := get(t, s, "GET", tt.target)
			h := w.Header()
			if w.Code != tt.code {
				t.Fatalf("GET %s = %d, want %d", tt.target, w.Code, tt.code)
			}
			if got := h.Get("X-Content-Type-Options"); got != "nosniff" {
				t.Errorf("GET %s: X-Content-Type-Options %q, want nosniff", tt.target, got)
			}
			csp := h.Get("Content-Security-Policy")
			if tt.svg && (!strings.HasPrefix(csp, "default-src 'none'") || !strings.HasPrefix(h.Get("Content-Type"), "image/svg+xml")) {
				t.Errorf("GET %s: Content-Type %q, Content-Security-Policy %q, want an SVG with default-src 'none'", tt.target, h.Get("Content-Type"), csp)
			}
		})
	}
	// A 304 answers with the headers of the image it stands for.
	w := get(t, s, "GET", "/counter/h/graph.svg")
	r := httptest.NewRequest("GET", "/counter/h/graph.svg", nil)
	r.Header.Set("If-None-Match", w.Header().Get("Etag"))
	rec := httptest.NewRecorder()
	s.ServeHTTP(rec, r)
	if rec.Code != 304 || rec.Header().Get("Content-Security-Policy") == "" || rec.Header().Get("X-Content-Type-Options") != "nosniff" {
		t.Errorf("GET graph.svg with its ETag = %d %q, want 304 with the SVG's headers", rec.Code, rec.Header())
	}
}
