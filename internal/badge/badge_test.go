package badge

import (
	"bytes"
	"encoding/xml"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"visitors/internal/golden"
	"visitors/internal/race"
)

func mustBadge(style Style, label, value string) []byte {
	return AppendSVG(nil, &Badge{Label: []byte(label), Value: []byte(value), Color: []byte("#4c1"), LabelColor: []byte("#555"), Style: style})
}

// TestGolden compares each style with testdata/<style>.svg. Run with
// -update after a deliberate change, and look at the result.
func TestGolden(t *testing.T) {
	for s := range styleNames {
		style := Style(s)
		golden.Check(t, filepath.Join("testdata", style.String()+".svg"), mustBadge(style, "visitors", "1.2k"))
	}
}

func TestWellFormedAndEscaped(t *testing.T) {
	labels := []string{"", "visitors", `<script>alert("x")</script>`, "a & b ' c", "ünïcödé 世界 🎉", "bad \xff utf-8", "ctl\x00\x01\x1f"}
	for s := range styleNames {
		for _, l := range labels {
			svg := mustBadge(Style(s), l, "42")
			if err := xml.Unmarshal(svg, new(struct{})); err != nil {
				t.Errorf("style %s, label %q: not well-formed XML: %v\n%s", Style(s), l, err, svg)
			}
			if bytes.Contains(svg, []byte("<script")) {
				t.Errorf("style %s, label %q: raw markup in the badge", Style(s), l)
			}
			if !utf8.Valid(svg) {
				t.Errorf("style %s, label %q: invalid UTF-8 in the badge", Style(s), l)
			}
		}
	}
}

func TestAccessible(t *testing.T) {
	svg := string(mustBadge(Flat, "page views", "7"))
	for _, want := range []string{`role="img"`, `aria-label="page views: 7"`, `<title>page views: 7</title>`} {
		if !strings.Contains(svg, want) {
			t.Errorf("badge lacks %s:\n%s", want, svg)
		}
	}
}

func TestTextWidth(t *testing.T) {
	tests := []struct {
		s    string
		want float64
	}{
		{"", 0},
		{"i", 3.0}, // narrow
		{"W", 10.88},
		{"visitors", 39.71}, // sums of the table, checked independently
	}
	for _, tt := range tests {
		if got := TextWidth([]byte(tt.s)); got < tt.want-0.5 || got > tt.want+0.5 {
			t.Errorf("TextWidth(%q) = %.2f, want about %.2f", tt.s, got, tt.want)
		}
	}
	if w, m := TextWidth([]byte("WWWW")), TextWidth([]byte("iiii")); w < 2*m {
		t.Errorf("TextWidth(WWWW) = %.1f is not much wider than iiii = %.1f: not real metrics", w, m)
	}
	// TestBadgeWidth checks that wider text makes a wider badge.
}

func TestAppendCount(t *testing.T) {
	tests := []struct {
		n    uint64
		abbr bool
		want string
	}{
		{0, true, "0"}, {999, true, "999"}, {1000, true, "1k"}, {1234, true, "1.2k"}, {999999, true, "999.9k"},
		{3_400_000, true, "3.4M"}, {5_600_000_000, true, "5.6B"}, {7e12, true, "7T"}, {1234, false, "1234"},
	}
	for _, tt := range tests {
		if got := string(AppendCount(nil, tt.n, tt.abbr)); got != tt.want {
			t.Errorf("AppendCount(%d, %v) = %q, want %q", tt.n, tt.abbr, got, tt.want)
		}
	}
}

// colorCase is a color as a query gives it, and what AppendColor
// appends for it (want) or whether it refuses it (!ok).
type colorCase struct {
	in, want string
	ok       bool
}

// checkAppendColor checks AppendColor against each of tests.
func checkAppendColor(t *testing.T, tests []colorCase) {
	t.Helper()
	for _, tt := range tests {
		got, err := AppendColor(nil, []byte(tt.in))
		if (err == nil) != tt.ok || string(got) != tt.want {
			t.Errorf("AppendColor(%q) = %q, %v; want %q, ok %v", tt.in, got, err, tt.want, tt.ok)
		}
	}
}

func TestAppendColor(t *testing.T) {
	checkAppendColor(t, []colorCase{
		{"brightgreen", "#4c1", true}, {"blue", "#007ec6", true}, {"lightgrey", "#9f9f9f", true},
		{"fff", "#fff", true}, {"A1B2C3", "#A1B2C3", true},
		{"#fff", "", false}, {"ff", "", false}, {"gggggg", "", false}, {"red;x", "", false}, {"", "", false},
		{"url(x)", "", false},
	})
}

func TestParseStyle(t *testing.T) {
	for _, s := range []string{"", "flat", "flat-square", "plastic", "for-the-badge"} {
		if _, err := ParseStyle([]byte(s)); err != nil {
			t.Errorf("ParseStyle(%q) = %v", s, err)
		}
	}
	if _, err := ParseStyle([]byte("social")); err == nil {
		t.Error("ParseStyle(social) succeeded")
	}
}

// TestAllocs: rendering allocates nothing beyond the response buffer.
func TestAllocs(t *testing.T) {
	if race.Enabled {
		t.Skip("allocation budgets are checked without -race")
	}
	b := &Badge{Label: []byte("visitors 世界"), Value: []byte("1.2k"), Color: []byte("#4c1"), LabelColor: []byte("#555")}
	dst := make([]byte, 0, 4096)
	for s := range styleNames {
		b.Style = Style(s)
		if got := testing.AllocsPerRun(200, func() { dst = AppendSVG(dst[:0], b) }); got > 0 {
			t.Errorf("AppendSVG(%s) allocs = %v, want 0", b.Style, got)
		}
	}
}

func BenchmarkBadge(b *testing.B) {
	for s := range styleNames {
		b.Run("style="+Style(s).String(), func(b *testing.B) {
			bd := &Badge{Label: []byte("visitors"), Value: []byte("12345"), Color: []byte("#4c1"), LabelColor: []byte("#555"), Style: Style(s)}
			dst := make([]byte, 0, 4096)
			b.ReportAllocs()
			for b.Loop() {
				dst = AppendSVG(dst[:0], bd)
			}
		})
	}
}

func BenchmarkBadgeParallel(b *testing.B) {
	bd := &Badge{Label: []byte("visitors"), Value: []byte("12345"), Color: []byte("#4c1"), LabelColor: []byte("#555")}
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		dst := make([]byte, 0, 4096)
		for pb.Next() {
			dst = AppendSVG(dst[:0], bd)
		}
	})
}

// TestAppendColorNames: the CSS named colors work as shields.io takes
// them, in any case, and shields.io's own names win where both define
// one (its red is not CSS red).
func TestAppendColorNames(t *testing.T) {
	checkAppendColor(t, []colorCase{
		{"purple", "#800080", true},
		{"pink", "#ffc0cb", true},
		{"black", "#000000", true},
		{"PURPLE", "#800080", true},
		{"Black", "#000000", true},
		{"rebeccapurple", "#663399", true},
		{"LightGoldenrodYellow", "#fafad2", true},
		{"white", "#ffffff", true},
		{"Red", "#e05d44", true},           // shields.io's red, not #ff0000
		{"green", "#97ca00", true},         // shields.io's green, not #008000
		{"BrightGreen", "#4c1", true},      // shields.io's names, any case
		{"grey", "#555", true},             // shields.io's grey, not #808080
		{"Informational", "#007ec6", true}, // and its aliases
		{"purple ", "", false},
		{"purp1e", "", false},
		{"transparent", "", false},
		{"lightgoldenrodyellowx", "", false},
	})
}

// TestCSSColors: the table holds the 148 CSS keywords, each a six-digit
// hex color.
func TestCSSColors(t *testing.T) {
	if got, want := len(cssColors), 148; got != want {
		t.Errorf("len(cssColors) = %d, want %d", got, want)
	}
	for name, c := range cssColors {
		if name != strings.ToLower(name) || len(c) != 7 || c[0] != '#' {
			t.Errorf("cssColors[%q] = %q, want a lower-case name and #rrggbb", name, c)
		}
		if _, err := AppendColor(nil, []byte(strings.ToUpper(name))); err != nil {
			t.Errorf("AppendColor(%q) = %v, want a color", strings.ToUpper(name), err)
		}
	}
}

// TestAppendColorAllocs: a name in any case is looked up without
// allocating.
func TestAppendColorAllocs(t *testing.T) {
	if race.Enabled {
		t.Skip("allocation budgets are checked without -race")
	}
	dst := make([]byte, 0, 16)
	for _, in := range [][]byte{[]byte("brightgreen"), []byte("Purple"), []byte("LIGHTGOLDENRODYELLOW"), []byte("a1b2c3")} {
		if got := testing.AllocsPerRun(200, func() { dst, _ = AppendColor(dst[:0], in) }); got > 0 {
			t.Errorf("AppendColor(%q) allocs = %v, want 0", in, got)
		}
	}
}
