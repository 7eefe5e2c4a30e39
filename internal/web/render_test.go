package web

import (
	"encoding/json"
	"html"
	"net/url"
	"testing"
	"time"
)

var textInputs = []string{
	"", "plain", "<script>alert('x')</script>", `a"b'c&d<e>f`, "tab\tnew\nline\r",
	"\x00\x01\x1f\x7f", "ünïcödé 世界", "bad \xff\xfe utf-8", "\u2028\u2029", `back\slash`,
}

func TestAppendHTMLMatchesStdlib(t *testing.T) {
	for _, s := range textInputs {
		if got, want := string(appendHTML(nil, []byte(s))), html.EscapeString(s); got != want {
			t.Errorf("appendHTML(%q) = %q, want %q", s, got, want)
		}
	}
}

func TestAppendJSONMatchesStdlib(t *testing.T) {
	for _, s := range textInputs {
		want, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		if got := string(appendJSON(nil, s)); got != string(want) {
			t.Errorf("appendJSON(%q) = %s, want %s", s, got, want)
		}
	}
}

func TestAppendDuration(t *testing.T) {
	tests := []struct {
		d    time.Duration
		want string
	}{
		{0, "0s"}, {-5, "0s"}, {850, "850ns"}, {1000, "1µs"}, {1500, "1.5µs"},
		{12345, "12.345µs"}, {12345678, "12.345ms"}, {1001 * time.Microsecond, "1.001ms"},
		{2500 * time.Millisecond, "2.5s"}, {90 * time.Second, "90s"},
	}
	for _, tt := range tests {
		if got := string(appendDuration(nil, tt.d)); got != tt.want {
			t.Errorf("appendDuration(%v) = %q, want %q", tt.d, got, tt.want)
		}
	}
}

// TestQueryValueMatchesStdlib checks the in-place parser against
// url.ParseQuery wherever the latter accepts the query.
func TestQueryValueMatchesStdlib(t *testing.T) {
	queries := []string{
		"", "name", "name=", "name=a", "a=1&name=b&name=c", "x=%41&name=%3Cb%3E",
		"n%61me=escaped+key", "color=red&&name=x", "name=a+b%20c", "=v&name=k", "name=%e4%b8%96",
	}
	for _, q := range queries {
		vals, err := url.ParseQuery(q)
		if err != nil {
			t.Fatalf("url.ParseQuery(%q): %v", q, err)
		}
		raw, found := queryValue(q, "name")
		got, err := appendUnescape(nil, raw)
		if err != nil {
			t.Fatalf("appendUnescape(%q): %v", raw, err)
		}
		if _, want := vals["name"]; found != want || string(got) != vals.Get("name") {
			t.Errorf("queryValue(%q, name) = %q, %v; want %q, %v", q, got, found, vals.Get("name"), want)
		}
	}
}

func TestAppendUnescapeRejectsBadEscapes(t *testing.T) {
	for _, s := range []string{"%", "%4", "a%", "%zz", "%4g", "%%41"} {
		if got, err := appendUnescape(nil, s); err == nil {
			t.Errorf("appendUnescape(%q) = %q, nil; want an error", s, got)
		}
	}
}
