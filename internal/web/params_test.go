package web

import (
	"reflect"
	"strings"
	"testing"

	"visitors/internal/race"
)

// TestCounterShieldsAliases: shields.io's labelColor and logoColor work as
// label_color and logo_color do, and the CSS color names as colors; before,
// labelColor and logoColor were ignored and purple was an error badge.
func TestCounterShieldsAliases(t *testing.T) {
	s, _ := mustServer(t, nil)
	tests := []struct {
		name, query string
		want        []string // in the badge
	}{
		{"labelColor", "labelColor=purple", []string{`fill="#800080"`}},
		{"label_color", "label_color=purple", []string{`fill="#800080"`}},
		{"logoColor", "logo=github&logoColor=pink", []string{`fill="#ffc0cb"`}},
		{"logo_color", "logo=github&logo_color=pink", []string{`fill="#ffc0cb"`}},
		{"both aliases", "labelColor=black&logo=github&logoColor=Pink", []string{`fill="#000000"`, `fill="#ffc0cb"`}},
		{"the documented name wins", "label_color=fff&labelColor=black", []string{`fill="#fff"`}},
		{"escaped alias", "label%43olor=purple", []string{`fill="#800080"`}},
		{"CSS color", "color=Purple", []string{`fill="#800080"`}},
		{"shields red", "color=red", []string{`fill="#e05d44"`}},
		{"shields cacheSeconds and link change nothing", "cacheSeconds=3600&link=https://example.com&link=x&color=red", []string{`fill="#e05d44"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := get(t, s, "GET", "/counter/alias.svg?count=false&"+tt.query)
			if w.Code != 200 {
				t.Fatalf("GET ?%s = %d %q, want 200", tt.query, w.Code, errorMessage(t, w))
			}
			for _, want := range tt.want {
				if !strings.Contains(w.Body.String(), want) {
					t.Errorf("GET ?%s: badge lacks %s:\n%s", tt.query, want, w.Body)
				}
			}
		})
	}
}

// TestCounterUnknownParam: a misspelt or unknown parameter answers 400
// that names it, as an error badge on the .svg routes and as text on the
// .json ones, and counts nothing; before, it was ignored with a 200.
func TestCounterUnknownParam(t *testing.T) {
	s, st := mustServer(t, nil)
	tests := []struct {
		name, target string
		svg          bool
		param        string // as the message quotes it
		shown        string // as the badge shows it; "" for .json
	}{
		{"svg", "/counter/u.svg?colour=red", true, `"colour"`, "unknown parameter colour"},
		{"svg after known", "/counter/u.svg?label=x&color=blue&colour=red", true, `"colour"`, "unknown parameter colour"},
		{"camel case of a snake name", "/counter/u.svg?labelcolor=red", true, `"labelcolor"`, "unknown parameter labelcolor"},
		{"shields logoSize", "/counter/u.svg?logoSize=auto", true, `"logoSize"`, "unknown parameter logoSize"},
		{"no value", "/counter/u.svg?nocache", true, `"nocache"`, "unknown parameter nocache"},
		{"empty name", "/counter/u.svg?=x", true, `""`, "unknown parameter "},
		{"markup", "/counter/u.svg?%3Cscript%3E=1", true, `"<script>"`, "unknown parameter &lt;script&gt;"},
		{"bad escape", "/counter/u.svg?a%zz=1", true, `"a%zz"`, "unknown parameter a%zz"},
		{"long name cut", "/counter/u.svg?" + strings.Repeat("x", 100) + "=1", true, `"` + strings.Repeat("x", 100) + `"`, "unknown parameter " + strings.Repeat("x", 32) + "…"},
		{"a name of the bound shown whole", "/counter/u.svg?" + strings.Repeat("y", maxShownParam) + "=1", true, `"` + strings.Repeat("y", maxShownParam) + `"`, "unknown parameter " + strings.Repeat("y", maxShownParam)},
		{"a name cut before a rune, not in it", "/counter/u.svg?" + strings.Repeat("x", maxShownParam-1) + "%C3%A9zz=1", true, `"` + strings.Repeat("x", maxShownParam-1) + `\u00e9zz"`, "unknown parameter " + strings.Repeat("x", maxShownParam-1) + "…"},
		{"a name of no rune start cut to nothing", "/counter/u.svg?" + strings.Repeat("%80", 40) + "=1", true, `"` + strings.Repeat(`\x80`, 40) + `"`, "unknown parameter …"},
		{"graph", "/counter/u/graph.svg?dayz=7", true, `"dayz"`, "unknown parameter dayz"},
		{"json", "/counter/u.json?colour=red", false, `"colour"`, ""},
		{"daily", "/counter/u/daily.json?day=3", false, `"day"`, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := get(t, s, "GET", tt.target)
			msg := errorMessage(t, w)
			if w.Code != 400 || !strings.Contains(msg, "Unknown parameter "+tt.param) {
				t.Errorf("GET %s = %d %q, want 400 naming %s", tt.target, w.Code, msg, tt.param)
			}
			if svg := strings.HasPrefix(w.Header().Get("Content-Type"), "image/svg+xml"); svg != tt.svg {
				t.Errorf("GET %s: Content-Type %q, want an SVG %v", tt.target, w.Header().Get("Content-Type"), tt.svg)
			}
			if tt.svg && !strings.Contains(w.Body.String(), `: `+tt.shown+`"`) {
				t.Errorf("GET %s: badge does not show %q:\n%s", tt.target, tt.shown, w.Body)
			}
			if strings.Contains(w.Body.String(), "<script") {
				t.Errorf("GET %s reflects markup:\n%s", tt.target, w.Body)
			}
		})
	}
	if got := mustCount(t, st, "u").Total; got != 0 {
		t.Errorf("refused requests counted %d visits, want 0", got)
	}
}

// TestCounterEveryParamStillWorks: each parameter a /counter/ route
// took before unknown ones were refused, as README.md, the landing page
// and the tests use them, still answers 200.
func TestCounterEveryParamStillWorks(t *testing.T) {
	s, _ := mustServer(t, nil)
	for _, target := range []string{
		"/counter/p.svg?count=false&abbreviated=true&show=today&label=page%20views&color=blue&label_color=555&style=for-the-badge&logo=github&logo_color=fff",
		"/counter/p.svg?show=unique&count=0&abbreviated=1",
		"/counter/p.svg?days=7",
		"/counter/p.svg?&&label=x&", // empty pairs are no parameter
		"/counter/p.json?count=false&label=x",
		"/counter/p/daily.json?days=3",
		"/counter/p/graph.svg?days=30&label=x&color=red",
		"/counter/visitors/landing.svg?label=this%20page",
		"/counter/p.svg?%6C%61%62%65%6C=x", // an escaped known name
	} {
		if w := get(t, s, "GET", target); w.Code != 200 {
			t.Errorf("GET %s = %d %q, want 200", target, w.Code, errorMessage(t, w))
		}
	}
}

// TestUnknownParamAllocs: looking for an unknown parameter allocates
// nothing, whatever the query.
func TestUnknownParamAllocs(t *testing.T) {
	if race.Enabled {
		t.Skip("allocation budgets are checked without -race")
	}
	for _, q := range []string{"", "count=false&label=x&labelColor=purple&logoColor=fff&logo=go", "%6C%61%62%65%6C=x", "colour=red", "a%zz=1"} {
		if got := testing.AllocsPerRun(200, func() { unknownCounterParam(q) }); got > 0 {
			t.Errorf("unknownCounterParam(%q) allocs = %v, want 0", q, got)
		}
	}
}

// TestEmptyQueryIsParsed: the defaults a request without a query takes
// (emptyQuery, parsed once) are what parsing its empty query gives, and a
// badge drawn from them twice, through a scratch's memo, is drawn from
// the same defaults every time: nothing writes into them.
func TestEmptyQueryIsParsed(t *testing.T) {
	var sc scratch
	want, herr := parseQuery(&sc, "")
	if herr != nil {
		t.Fatalf("parseQuery(\"\") refused: %s", herr.Msg)
	}
	got, herr := parseCounterQuery(&sc, "")
	if herr != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("parseCounterQuery(\"\") = %+v, %v; parseQuery gives %+v", got, herr, want)
	}
	s, _ := mustServer(t, nil)
	first := get(t, s, "GET", "/counter/empty.svg?label=other&color=red").Body.String()
	for range 3 {
		get(t, s, "GET", "/counter/empty.svg")
	}
	if got, _ := parseCounterQuery(&sc, ""); !reflect.DeepEqual(got, want) {
		t.Errorf("after serving badges, the empty query's defaults are %+v, want %+v", got, want)
	}
	if !strings.Contains(first, ">other<") {
		t.Errorf("a badge with a label of its own does not show it: %s", first)
	}
}

// TestErrorBadgeNamesTheParameter: an error badge for a bad parameter
// shows the parameter and what it takes, as its Visitors-Error header
// says in full; before, every one of them read "invalid query".
func TestErrorBadgeNamesTheParameter(t *testing.T) {
	s, st := mustServer(t, nil)
	tests := []struct {
		query, badge, header string
	}{
		{"style=round", "style must be flat, flat-square, plastic or for-the-badge", "Optional style must be"},
		{"color=nope", "color must be a color name or 3 or 6 hex digits", "Optional color: colors must be"},
		{"colour=red&color=nope", "unknown parameter colour", `Unknown parameter "colour"`},
		{"label_color=%23fff", "label_color must be a color name or 3 or 6 hex digits", "Optional label_color:"},
		{"labelColor=url(x)", "labelColor must be a color name or 3 or 6 hex digits", "Optional labelColor:"},
		{"logo=github&logoColor=zz", "logoColor must be a color name or 3 or 6 hex digits", "Optional logoColor:"},
		{"days=0", "days must be 1 to 365", msgDays},
		{"count=maybe", "count must be true or false", msgCount},
		{"abbreviated=yes", "abbreviated must be true or false", msgAbbr},
		{"show=all", "show must be total, today or unique", msgShow},
		{"label=" + strings.Repeat("x", MaxLabelRunes+1), "label must be at most 64 characters", msgLabel},
		{"label=%zz", "query is not valid URL encoding", msgEscape},
		{"logo=nosuchlogo", "unknown logo", msgLogo},
	}
	for _, tt := range tests {
		t.Run(tt.query, func(t *testing.T) {
			w := get(t, s, "GET", "/counter/e.svg?"+tt.query)
			msg := errorMessage(t, w)
			if w.Code != 400 || !strings.Contains(w.Body.String(), `aria-label="visitors: `+tt.badge+`"`) {
				t.Errorf("GET ?%s = %d, badge %s; want 400 showing %q", tt.query, w.Code, w.Body, tt.badge)
			}
			if !strings.HasPrefix(msg, tt.header) {
				t.Errorf("GET ?%s: Visitors-Error %q, want it to start %q", tt.query, msg, tt.header)
			}
		})
	}
	if got := mustCount(t, st, "e").Total; got != 0 {
		t.Errorf("refused requests counted %d visits, want 0", got)
	}
}
