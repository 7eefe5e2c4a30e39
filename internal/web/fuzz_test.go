package web

import (
	"html"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"
)

// validColor is the reference rule for colors: the anchored regexp the
// issue names, plus the length limit.
var validColor = regexp.MustCompile(`^\w*$`)

func isValidColor(c string) bool { return len(c) <= MaxColorBytes && validColor.MatchString(c) }

// serveQuery serves path with the raw query q and returns the response.
func serveQuery(s *Server, path, q string) *httptest.ResponseRecorder {
	r := httptest.NewRequest("GET", path, nil)
	r.URL.RawQuery = q
	w := httptest.NewRecorder()
	s.ServeHTTP(w, r)
	return w
}

// checkCommon holds for every response to any query: no 5xx, and a 4xx
// body is one of the fixed messages, so nothing from the input is
// reflected in it.
func checkCommon(t *testing.T, q string, w *httptest.ResponseRecorder) {
	t.Helper()
	switch w.Code {
	case 200:
	case 400:
		switch w.Body.String() {
		case msgColor, msgName, msgNameEscape:
		default:
			t.Fatalf("query %q: 400 with unexpected body %q", q, w.Body)
		}
	default:
		t.Fatalf("query %q: status %d, want 200 or 400", q, w.Code)
	}
}

func FuzzHi(f *testing.F) {
	for _, q := range []string{"", "color=red", "color=%3Cscript%3E", "color=a'b", "color=%zz", "color=" + strings.Repeat("w", 65)} {
		f.Add(q)
	}
	s, st := mustServer(f, nil)
	f.Fuzz(func(t *testing.T, q string) {
		before := mustHit(t, st)
		w := serveQuery(s, "/hi", q)
		if after := mustHit(t, st); w.Code != 200 && after != before+1 {
			t.Fatalf("query %q: rejected with %d but took a visitor number", q, w.Code)
		}
		checkCommon(t, q, w)
		vals, err := url.ParseQuery(q)
		if err != nil {
			return // the reference parser rejects q; the invariants above still held
		}
		color := vals.Get("color")
		if !isValidColor(color) {
			if w.Code != 400 {
				t.Fatalf("query %q: invalid color %q got %d, want 400", q, color, w.Code)
			}
			return
		}
		prefix := "<h1 style='color: " + color + "'>Welcome!</h1>You are visitor number "
		if w.Code != 200 || !strings.HasPrefix(w.Body.String(), prefix) {
			t.Fatalf("query %q: got %d %q, want 200 with prefix %q", q, w.Code, w.Body, prefix)
		}
	})
}

func FuzzHello(f *testing.F) {
	for _, q := range []string{"", "name=gopher", "name=%3Cscript%3E", "name=a'b\"c", "name=%ff", "name=x&color=%3C", "n%61me=k"} {
		f.Add(q)
	}
	s, _ := mustServer(f, nil)
	f.Fuzz(func(t *testing.T, q string) {
		w := serveQuery(s, "/hello", q)
		checkCommon(t, q, w)
		if w.Code == 200 {
			// The name's slot must hold no raw markup character.
			body := w.Body.String()
			i, j := strings.Index(body, "<p>Name: "), strings.LastIndex(body, "</p> <p>Count: ")
			if i < 0 || j < i {
				t.Fatalf("query %q: body %q does not follow the template", q, body)
			}
			if name := body[i+len("<p>Name: ") : j]; strings.ContainsAny(name, "<>'\"") {
				t.Fatalf("query %q: unescaped markup in name %q", q, name)
			}
		}
		vals, err := url.ParseQuery(q)
		if err != nil {
			return
		}
		name, color := vals.Get("name"), vals.Get("color")
		valid := isValidColor(color) && len(name) <= MaxNameBytes && utf8.ValidString(name)
		if !valid {
			if w.Code != 400 {
				t.Fatalf("query %q: invalid input got %d, want 400", q, w.Code)
			}
			return
		}
		prefix := "<h1 style='color: " + color + "'>Welcome!</h1> <p>Name: " + html.EscapeString(name) + "</p> <p>Count: "
		if w.Code != 200 || !strings.HasPrefix(w.Body.String(), prefix) {
			t.Fatalf("query %q: got %d %q, want 200 with prefix %q", q, w.Code, w.Body, prefix)
		}
	})
}
