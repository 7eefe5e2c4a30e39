package web

import (
	"encoding/json"
	"encoding/xml"
	"fmt"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"visitors/internal/golden"
	"visitors/internal/store/memstore"
	"visitors/internal/store/storetest"
)

// The tests in this file each guard one promise of the README's counter
// API; the name of each says which, and a comment names the bug it
// catches.

// day0 is the manual clock's first day: a day after the test anchor
// (storetest.Anchor), noon UTC.
var day0 = storetest.At(1, "12:00")

// mustClockServer returns a Server over a memory store whose day is set
// by a manual clock that starts at day0; call nextDay to move it on.
func mustClockServer(tb testing.TB) (s *Server, st *memstore.Store, nextDay func()) {
	tb.Helper()
	clock := storetest.NewClock(day0)
	st = memstore.New(memstore.Options{Now: clock.Now})
	tb.Cleanup(func() { st.Close() })
	nextDay = func() {
		clock.Add(24 * time.Hour)
		st.Rollover()
	}
	return New(Config{Store: st, Hostname: "testhost", Now: clock.Now}), st, nextDay
}

// mustVisit serves GET target n times and fails unless each is a 200.
func mustVisit(tb testing.TB, s *Server, target string, n int) {
	tb.Helper()
	for range n {
		if w := get(tb, s, "GET", target); w.Code != 200 {
			tb.Fatalf("GET %s = %d %q, want 200", target, w.Code, w.Body)
		}
	}
}

// TestCounterHeadCountsNothing: a HEAD on a counter answers with the
// headers of a GET but is not a visit (bug: HEAD on /counter counted).
func TestCounterHeadCountsNothing(t *testing.T) {
	tests := []struct {
		target, wantCT string
	}{
		{"/counter/h.svg", "image/svg+xml; charset=utf-8"},
		{"/counter/h.json", "application/json"},
		{"/counter/h.svg?count=true", "image/svg+xml; charset=utf-8"},
		{"/counter/h.json?count=1", "application/json"},
	}
	for _, seen := range []bool{false, true} {
		s, st := mustServer(t, nil)
		var want uint64
		if seen {
			mustVisit(t, s, "/counter/h.svg", 1)
			want = 1
		}
		for _, tt := range tests {
			w := get(t, s, "HEAD", tt.target)
			if w.Code != 200 || w.Header().Get("Content-Type") != tt.wantCT {
				t.Errorf("HEAD %s = %d %q, want 200 %q", tt.target, w.Code, w.Header().Get("Content-Type"), tt.wantCT)
			}
			if got := mustCount(t, st, "h").Total; got != want {
				t.Errorf("key seen before: %v; after HEAD %s the total is %d, want %d", seen, tt.target, got, want)
			}
		}
		if !seen && st.Keys() != 0 {
			t.Errorf("HEAD requests created %d keys, want 0", st.Keys())
		}
	}
}

// TestCounterDaysRange: days takes every whole number from 1 to 365 and
// nothing else, and a refused days counts nothing (bug: days=365
// refused).
func TestCounterDaysRange(t *testing.T) {
	tests := []struct {
		days     string
		wantCode int
		wantDays int
	}{
		{"1", 200, 1},
		{"2", 200, 2},
		{"364", 200, 364},
		{"365", 200, 365},
		{"0", 400, 0},
		{"366", 400, 0},
		{"-1", 400, 0},
		{"", 400, 0},
		{"7.5", 400, 0},
		{"1e2", 400, 0},
	}
	for _, tt := range tests {
		for _, kind := range []string{"daily.json", "graph.svg"} {
			s, st := mustServer(t, nil)
			target := "/counter/r/" + kind + "?days=" + tt.days
			w := get(t, s, "GET", target)
			if w.Code != tt.wantCode {
				t.Errorf("GET %s = %d %q, want %d", target, w.Code, w.Body, tt.wantCode)
				continue
			}
			if st.Keys() != 0 {
				t.Errorf("GET %s counted a visit", target)
			}
			if tt.wantCode != 200 {
				if got := errorMessage(t, w); got != msgDays {
					t.Errorf("GET %s message = %q, want %q", target, got, msgDays)
				}
				continue
			}
			if kind == "daily.json" {
				if got := len(mustDaily(t, w.Body.Bytes()).Days); got != tt.wantDays {
					t.Errorf("GET %s has %d days, want %d", target, got, tt.wantDays)
				}
			} else if want := fmt.Sprintf("in the last %d days", tt.wantDays); !strings.Contains(w.Body.String(), want) {
				t.Errorf("GET %s: graph title lacks %q", target, want)
			}
		}
	}
}

type daily struct {
	Key  string
	Days []struct {
		Date  string
		Count uint64
	}
}

func mustDaily(tb testing.TB, body []byte) daily {
	tb.Helper()
	var d daily
	if err := json.Unmarshal(body, &d); err != nil {
		tb.Fatalf("daily.json %q: %v", body, err)
	}
	return d
}

// TestCounterShowToday: show=today shows today's count, not the total,
// on a day when the two differ (bug: show=today ignored).
func TestCounterShowToday(t *testing.T) {
	s, _, nextDay := mustClockServer(t)
	mustVisit(t, s, "/counter/t.svg", 3)
	nextDay()
	mustVisit(t, s, "/counter/t.svg", 1)
	checkShows(t, s, []shows{
		{"/counter/t.svg?count=false&show=today", `aria-label="visitors: 1"`},
		{"/counter/t.svg?count=false&show=total", `aria-label="visitors: 4"`},
		{"/counter/t.svg?count=false", `aria-label="visitors: 4"`},
		{"/counter/t.svg?count=false&show=today&abbreviated=true", `aria-label="visitors: 1"`},
		{"/counter/t.json?count=false&show=today", `{"key":"t","total":4,"today":1,"unique_today":1}`},
		{"/counter/t.svg?show=today", `aria-label="visitors: 2"`}, // counts, then shows today
	})
}

// TestCounterDailyDates: daily.json lists the last n UTC days oldest
// first, today last, each with its own count.
func TestCounterDailyDates(t *testing.T) {
	s, _, nextDay := mustClockServer(t)
	mustVisit(t, s, "/counter/d.svg", 2) // day0
	nextDay()
	nextDay()
	mustVisit(t, s, "/counter/d.json", 1) // day0 + 2
	w := get(t, s, "GET", "/counter/d/daily.json?days=4")
	want := storetest.Dated(`{"key":"d","days":[{"date":"$D","count":0,"unique":0},{"date":"$D+1","count":2,"unique":1},{"date":"$D+2","count":0,"unique":0},{"date":"$D+3","count":1,"unique":1}]}` + "\n")
	if w.Code != 200 || w.Body.String() != want {
		t.Errorf("daily.json?days=4 = %d %s, want 200 %s", w.Code, w.Body, want)
	}
	w = get(t, s, "GET", "/counter/d/daily.json?days=1")
	if want := storetest.Dated(`{"key":"d","days":[{"date":"$D+3","count":1,"unique":1}]}` + "\n"); w.Body.String() != want {
		t.Errorf("daily.json?days=1 = %s, want %s", w.Body, want)
	}
}

// TestCounterETags: every read that does not count carries an ETag and
// answers 304 to a request that holds it, until the count changes; a
// counting request is never a 304 (bug: daily.json without its ETag).
func TestCounterETags(t *testing.T) {
	targets := []string{
		"/counter/e/daily.json",
		"/counter/e/daily.json?days=7",
		"/counter/e/graph.svg",
		"/counter/e.svg?count=false",
		"/counter/e.json?count=false",
	}
	for _, target := range targets {
		t.Run(target, func(t *testing.T) {
			s, st := mustServer(t, nil)
			mustVisit(t, s, "/counter/e.svg", 1)
			w := get(t, s, "GET", target)
			etag := w.Header().Get("Etag")
			if w.Code != 200 || !regexp.MustCompile(`^"[0-9a-z]+"$`).MatchString(etag) {
				t.Fatalf("GET %s = %d with ETag %q, want 200 and a strong ETag", target, w.Code, etag)
			}
			if again := get(t, s, "GET", target); again.Header().Get("Etag") != etag {
				t.Errorf("ETag changed without a visit: %q then %q", etag, again.Header().Get("Etag"))
			}
			for _, inm := range []string{etag, `"x", ` + etag, "W/" + etag} {
				if w := get(t, s, "GET", target, "If-None-Match", inm); w.Code != 304 || w.Body.Len() != 0 {
					t.Errorf("If-None-Match: %s = %d with %d bytes, want 304 and no body", inm, w.Code, w.Body.Len())
				}
			}
			if w := get(t, s, "GET", target, "If-None-Match", `"other"`); w.Code != 200 || w.Body.Len() == 0 {
				t.Errorf("If-None-Match: \"other\" = %d with %d bytes, want 200 with a body", w.Code, w.Body.Len())
			}
			if c := mustCount(t, st, "e"); c.Total != 1 {
				t.Errorf("reads counted visits: total %d, want 1", c.Total)
			}
			mustVisit(t, s, "/counter/e.json", 1)
			w = get(t, s, "GET", target, "If-None-Match", etag)
			if w.Code != 200 || w.Header().Get("Etag") == etag {
				t.Errorf("after a visit, the old ETag = %d with ETag %q, want 200 and a new ETag", w.Code, w.Header().Get("Etag"))
			}
		})
	}
	// A counting request counts and answers in full whatever it holds.
	s, st := mustServer(t, nil)
	etag := get(t, s, "GET", "/counter/c.svg?count=false").Header().Get("Etag")
	if w := get(t, s, "GET", "/counter/c.svg", "If-None-Match", etag); w.Code != 200 || w.Body.Len() == 0 || w.Header().Get("Etag") != "" {
		t.Errorf("counting GET with If-None-Match = %d, %d bytes, ETag %q; want 200 with a body and no ETag", w.Code, w.Body.Len(), w.Header().Get("Etag"))
	}
	if c := mustCount(t, st, "c"); c.Total != 1 {
		t.Errorf("counting GET with If-None-Match: total %d, want 1", c.Total)
	}
}

// TestCounterHeaders: every counter response forbids caching (GitHub's
// image proxy would keep a count), and every JSON response may be read
// from any origin.
func TestCounterHeaders(t *testing.T) {
	tests := []struct {
		target, wantCT string
		cors           bool
	}{
		{"/counter/k.svg", "image/svg+xml; charset=utf-8", false},
		{"/counter/k.svg?count=false", "image/svg+xml; charset=utf-8", false},
		{"/counter/k.json", "application/json", true},
		{"/counter/k.json?count=false", "application/json", true},
		{"/counter/k/daily.json", "application/json", true},
		{"/counter/k/graph.svg", "image/svg+xml; charset=utf-8", false},
	}
	s, _ := mustServer(t, nil)
	for _, tt := range tests {
		w := get(t, s, "GET", tt.target)
		want := map[string]string{
			"Content-Type":  tt.wantCT,
			"Cache-Control": "no-cache, no-store, must-revalidate",
			"Expires":       "0",
		}
		if tt.cors {
			want["Access-Control-Allow-Origin"] = "*"
		}
		for k, v := range want {
			if got := w.Header().Get(k); got != v {
				t.Errorf("GET %s: %s = %q, want %q", tt.target, k, got, v)
			}
		}
	}
}

// TestInputLimitsAfterUnescaping: the limits on color, name and label
// count bytes or characters after unescaping, so the longest valid value
// written fully escaped is accepted and one more is refused.
func TestInputLimitsAfterUnescaping(t *testing.T) {
	esc := func(s string) string { // every byte as %XX
		var b strings.Builder
		for i := range len(s) {
			fmt.Fprintf(&b, "%%%02X", s[i])
		}
		return b.String()
	}
	tests := []struct {
		target   string
		wantCode int
		wantBody string
	}{
		{"/hi?color=" + esc(strings.Repeat("a", 64)), 200, "color: " + strings.Repeat("a", 64) + "'"},
		{"/hi?color=" + esc(strings.Repeat("a", 65)), 400, msgColor},
		{"/hello?name=" + esc(strings.Repeat("n", 128)), 200, "Name: " + strings.Repeat("n", 128) + "<"},
		{"/hello?name=" + esc(strings.Repeat("n", 129)), 400, msgName},
		{"/counter/l.svg?label=" + esc(strings.Repeat("🎉", 64)), 200, strings.Repeat("🎉", 64) + ": 1"},
		{"/counter/l.svg?label=" + esc(strings.Repeat("🎉", 65)), 400, msgLabel},
		{"/counter/l.svg?color=" + esc("informational"), 200, `fill="#007ec6"`},
		{"/counter/l.svg?color=" + strings.Repeat("%zz", 32), 400, msgEscape},
		{"/counter/l.svg?color=" + strings.Repeat("a", 97), 400, "Optional color: " + errColorText()},
	}
	for _, tt := range tests {
		s, _ := mustServer(t, nil)
		w := get(t, s, "GET", tt.target)
		got := w.Body.String()
		if w.Code != 200 {
			got = errorMessage(t, w)
		}
		if w.Code != tt.wantCode || !strings.Contains(got, tt.wantBody) {
			t.Errorf("GET %.60s… = %d %.200q, want %d with %q", tt.target, w.Code, got, tt.wantCode, tt.wantBody)
		}
	}
}

func errColorText() string {
	_, herr := parseColorParam(new([]byte), "color=zz", "color", "", nil)
	return strings.TrimPrefix(herr.Msg, "Optional color: ")
}

// TestIsWordMatchesRegexp: the color rule is exactly \w, byte by byte.
func TestIsWordMatchesRegexp(t *testing.T) {
	w := regexp.MustCompile(`^\w$`)
	for c := range 256 {
		if got, want := isWord(byte(c)), w.Match([]byte{byte(c)}); got != want {
			t.Errorf("isWord(%q) = %v, want %v", byte(c), got, want)
		}
	}
}

// TestAppendJSONInvalidBytes: every byte that cannot start a UTF-8
// character alone becomes U+FFFD, as encoding/json writes it.
func TestAppendJSONInvalidBytes(t *testing.T) {
	for c := 0x80; c < 0x100; c++ {
		s := "a" + string([]byte{byte(c)}) + "b"
		want, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		if got := appendJSON(nil, s); string(got) != string(want) {
			t.Errorf("appendJSON(%q) = %s, want %s", s, got, want)
		}
	}
}

// TestQueryValueEscapedKeys: a key written with escapes is the same key,
// wherever the escape stands.
func TestQueryValueEscapedKeys(t *testing.T) {
	tests := []struct {
		q, key, want string
		found        bool
	}{
		{"%6Eame=a", "name", "a", true},
		{"n%61me=b", "name", "b", true},
		{"nam%65=c", "name", "c", true},
		{"%6E%61%6D%65=d", "name", "d", true},
		{"x=1&%63olor=red", "color", "red", true},
		{"na+me=e", "name", "", false},
		{"%6Eam=f", "name", "", false},
	}
	for _, tt := range tests {
		if got, found := queryValue(tt.q, tt.key); got != tt.want || found != tt.found {
			t.Errorf("queryValue(%q, %q) = %q, %v; want %q, %v", tt.q, tt.key, got, found, tt.want, tt.found)
		}
	}
}

// TestGraph: the chart has one bar per day with visits, in date order,
// inside the plot, its height proportional to the day's count with the
// busiest day filling the plot; the axis is labelled with 0 and the
// peak. testdata/graph-*.svg hold the reviewed renderings.
func TestGraph(t *testing.T) {
	s, _, nextDay := mustClockServer(t)
	counts := []int{0, 4, 0, 2, 1, 0, 3} // day0 to day0 + 6
	for i, n := range counts {
		if i > 0 {
			nextDay()
		}
		mustVisit(t, s, "/counter/g.json", n)
	}
	w := get(t, s, "GET", "/counter/g/graph.svg?days=7")
	if w.Code != 200 {
		t.Fatalf("graph.svg = %d %q", w.Code, w.Body)
	}
	golden.Check(t, filepath.Join("testdata", "graph-7.svg"), []byte(storetest.Undated(w.Body.String())))
	g := mustParseGraph(t, w.Body.Bytes())

	const plotLeft, plotRight, plotTop, plotBottom = graphLeft, graphW - graphRight, graphTop, graphH - graphBot
	const plotH = plotBottom - plotTop
	slot := float64(plotRight-plotLeft) / float64(len(counts))
	var bars []bar
	for _, r := range g.Rects {
		if r.Fill == "#2da44e" {
			bars = append(bars, r)
		}
	}
	wantDays := []string{storetest.Dated("$D+2: 4"), storetest.Dated("$D+4: 2"), storetest.Dated("$D+5: 1"), storetest.Dated("$D+7: 3")}
	wantIndex := []int{1, 3, 4, 6}
	if len(bars) != len(wantDays) {
		t.Fatalf("graph has %d bars, want %d (one per day with visits)", len(bars), len(wantDays))
	}
	for i, b := range bars {
		n := counts[wantIndex[i]]
		wantH := float64(plotH) * float64(n) / 4
		wantX := float64(plotLeft) + float64(wantIndex[i])*slot
		if b.Title != wantDays[i] {
			t.Errorf("bar %d title = %q, want %q", i, b.Title, wantDays[i])
		}
		if !near(b.H, wantH) || !near(b.Y+b.H, plotBottom) {
			t.Errorf("bar %q spans y %.1f to %.1f, want %.1f to %d", b.Title, b.Y, b.Y+b.H, plotBottom-wantH, plotBottom)
		}
		if b.X < wantX || b.X+b.W > wantX+slot || b.W < slot/2 {
			t.Errorf("bar %q spans x %.1f to %.1f, want within its day's slot %.1f to %.1f, at least half of it", b.Title, b.X, b.X+b.W, wantX, wantX+slot)
		}
	}
	wantTexts := []string{"g: 10 visits in the last 7 days (UTC)", "0", "4", storetest.Dated("$M+1"), storetest.Dated("$M+7")}
	if strings.Join(g.Texts, "|") != strings.Join(wantTexts, "|") {
		t.Errorf("graph texts = %q, want %q", g.Texts, wantTexts)
	}

	// No visits: no bars and no peak line or label, only the zero axis.
	w = get(t, s, "GET", "/counter/none/graph.svg?days=3")
	golden.Check(t, filepath.Join("testdata", "graph-empty.svg"), []byte(storetest.Undated(w.Body.String())))
	g = mustParseGraph(t, w.Body.Bytes())
	wantTexts = []string{"none: 0 visits in the last 3 days (UTC)", "0", storetest.Dated("$M+5"), storetest.Dated("$M+7")}
	if strings.Join(g.Texts, "|") != strings.Join(wantTexts, "|") || len(g.Rects) != 1 || g.Lines != 1 {
		t.Errorf("empty graph: texts %q, %d rects, %d lines; want texts %q, only the frame and the zero axis", g.Texts, len(g.Rects), g.Lines, wantTexts)
	}
}

func near(a, b float64) bool { return a-b < 0.051 && b-a < 0.051 }

type bar struct {
	X, Y, W, H float64
	Fill       string
	Title      string
}

type graph struct {
	Rects []bar
	Lines int
	Texts []string
}

// svgRect is a rect of a graph.svg.
type svgRect struct {
	X      string `xml:"x,attr"`
	Y      string `xml:"y,attr"`
	Width  string `xml:"width,attr"`
	Height string `xml:"height,attr"`
	Fill   string `xml:"fill,attr"`
	Title  string `xml:"title"`
}

// mustParseGraph reads the rects, lines and texts of a graph.svg.
func mustParseGraph(tb testing.TB, svg []byte) graph {
	tb.Helper()
	var doc struct {
		Rects []svgRect `xml:"rect"`
		G     struct {
			Rects []svgRect  `xml:"rect"`
			Lines []struct{} `xml:"line"`
			Texts []string   `xml:"text"`
		} `xml:"g"`
	}
	if err := xml.Unmarshal(svg, &doc); err != nil {
		tb.Fatalf("graph.svg is not well-formed: %v\n%s", err, svg)
	}
	num := func(s string) float64 {
		if s == "" || strings.HasSuffix(s, "%") {
			return 0
		}
		f, err := strconv.ParseFloat(s, 64)
		if err != nil {
			tb.Fatalf("graph.svg: number %q: %v", s, err)
		}
		return f
	}
	var g graph
	for _, r := range append(doc.Rects, doc.G.Rects...) {
		g.Rects = append(g.Rects, bar{X: num(r.X), Y: num(r.Y), W: num(r.Width), H: num(r.Height), Fill: r.Fill, Title: r.Title})
	}
	g.Lines = len(doc.G.Lines)
	g.Texts = doc.G.Texts
	return g
}
