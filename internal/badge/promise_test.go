package badge

import (
	"encoding/xml"
	"math"
	"strconv"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"
)

// svgDoc is what the tests read back from a badge.
type svgDoc struct {
	Width     string `xml:"width,attr"`
	Height    string `xml:"height,attr"`
	AriaLabel string `xml:"aria-label,attr"`
	Title     string `xml:"title"`
	G         []struct {
		Rects []struct {
			X     string `xml:"x,attr"`
			Width string `xml:"width,attr"`
			Fill  string `xml:"fill,attr"`
		} `xml:"rect"`
		Texts []struct {
			X          string `xml:"x,attr"`
			TextLength string `xml:"textLength,attr"`
			Fill       string `xml:"fill,attr"`
			Text       string `xml:",chardata"`
		} `xml:"text"`
	} `xml:"g"`
}

func mustParse(tb testing.TB, svg []byte) svgDoc {
	tb.Helper()
	var d svgDoc
	if err := xml.Unmarshal(svg, &d); err != nil {
		tb.Fatalf("badge is not well-formed: %v\n%s", err, svg)
	}
	if len(d.G) != 2 {
		tb.Fatalf("badge has %d groups, want 2 (boxes, texts)\n%s", len(d.G), svg)
	}
	return d
}

func mustNum(tb testing.TB, s string) float64 {
	tb.Helper()
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		tb.Fatalf("badge number %q: %v", s, err)
	}
	return f
}

// wantTextWidth is the width a style gives text, computed from the
// promise: Verdana 11px widths, upper case and 1.25px more per
// character for for-the-badge.
func wantTextWidth(style Style, s string) float64 {
	if style != ForTheBadge {
		return TextWidth([]byte(s))
	}
	var w float64
	for _, r := range s { // each invalid byte is one U+FFFD
		w += TextWidth([]byte(string(unicode.ToUpper(r)))) + 1.25
	}
	return w
}

func tenth(f float64) float64 { return math.Round(f*10) / 10 }

// TestBadgeWidth: each half of a badge is as wide as its text measured
// in Verdana plus the style's padding, the value's box starts where the
// label's ends, the badge is as wide as both, and each text is centred
// in its box and set to its measured width. A longer label makes a wider
// badge, never an overflowing one.
func TestBadgeWidth(t *testing.T) {
	padding := map[Style]float64{Flat: 5, FlatSquare: 5, Plastic: 5, ForTheBadge: 12}
	tests := []struct{ label, value string }{
		{"visitors", "1.2k"},
		{"i", "1"},
		{"WWWWWWWWWW", "999999"},
		{"page views 世界 ü", "42"},
		{"", "7"},
	}
	for s := range styleNames {
		style := Style(s)
		for _, tt := range tests {
			d := mustParse(t, mustBadge(style, tt.label, tt.value))
			lt, vt := wantTextWidth(style, tt.label), wantTextWidth(style, tt.value)
			lw, vw := tenth(lt+2*padding[style]), tenth(vt+2*padding[style])
			if tt.label == "" {
				lw = 0
			}
			if got := mustNum(t, d.Width); !near(got, lw+vw) {
				t.Errorf("%s %q|%q: width %v, want %.1f (label box %.1f + value box %.1f)", style, tt.label, tt.value, got, lw+vw, lw, vw)
			}
			boxes := d.G[0].Rects
			if len(boxes) < 2 || !near(mustNum(t, boxes[0].Width), lw) || !near(mustNum(t, boxes[1].X), lw) || !near(mustNum(t, boxes[1].Width), vw) {
				t.Errorf("%s %q|%q: boxes %+v, want the label's %.1f wide and the value's at x=%.1f, %.1f wide", style, tt.label, tt.value, boxes, lw, lw, vw)
			}
			texts := d.G[1].Texts
			var wantTexts []float64 // x, textLength of each text element in order
			if tt.label != "" {
				wantTexts = append(wantTexts, lw/2, tenth(lt))
			}
			wantTexts = append(wantTexts, lw+vw/2, tenth(vt))
			perText := 1
			if style == Flat || style == Plastic {
				perText = 2 // the shadow, then the text
			}
			if len(texts) != perText*len(wantTexts)/2 {
				t.Fatalf("%s %q|%q: %d text elements, want %d", style, tt.label, tt.value, len(texts), perText*len(wantTexts)/2)
			}
			for i, tx := range texts {
				x, tl := wantTexts[2*(i/perText)], wantTexts[2*(i/perText)+1]
				if !near(mustNum(t, tx.X), x) || !near(mustNum(t, tx.TextLength), tl) {
					t.Errorf("%s %q|%q: text %d at x=%s with textLength %s, want %.1f and %.1f", style, tt.label, tt.value, i, tx.X, tx.TextLength, x, tl)
				}
			}
		}
		short := mustNum(t, mustParse(t, mustBadge(style, "a", "1")).Width)
		long := mustNum(t, mustParse(t, mustBadge(style, strings.Repeat("W", 64), "1")).Width)
		if long < short+64*9 {
			t.Errorf("%s: 64 W make a badge %.1f wide, the letter a %.1f: want at least 64 W's width more", style, long, short)
		}
	}
}

func near(a, b float64) bool { return math.Abs(a-b) < 0.051 }

// TestEmptyLabel: a badge without a label shows only its value, with no
// empty text and no "label: " in its title.
func TestEmptyLabel(t *testing.T) {
	for s := range styleNames {
		svg := mustBadge(Style(s), "", "42")
		d := mustParse(t, svg)
		if d.AriaLabel != "42" || d.Title != "42" {
			t.Errorf("%s: aria-label %q, title %q; want both %q", Style(s), d.AriaLabel, d.Title, "42")
		}
		for _, tx := range d.G[1].Texts {
			if tx.Text != "42" {
				t.Errorf("%s: text %q, want only the value 42", Style(s), tx.Text)
			}
		}
	}
}

// TestTextWidthEdges: widths come from the table, control characters
// take no room, code points the table lacks (past its end too) take the
// fallback width, and invalid UTF-8 is measured as U+FFFD.
func TestTextWidthEdges(t *testing.T) {
	tests := []struct {
		s    string
		want float64
	}{
		{" ", 3.87},       // the table's first entry
		{"\U000E007E", 9}, // its last
		{"\x01", 0},       // control character
		{"\x1f", 0},       // control character
		{"\U0010FFFF", 7}, // past the table's end
		{"\uFFFD", 7},     // not in the table
		{"\x80", 7},       // invalid UTF-8 is U+FFFD
		{"\xff\xfe", 14},  // two invalid bytes
		{"a\x80b", 7 + TextWidth([]byte("a")) + TextWidth([]byte("b"))},
	}
	for _, tt := range tests {
		if got := TextWidth([]byte(tt.s)); math.Abs(got-tt.want) > 1e-9 {
			t.Errorf("TextWidth(%q) = %v, want %v", tt.s, got, tt.want)
		}
	}
}

// TestAppendColorHex: a color of three or six characters is valid
// exactly when each is a hex digit, byte by byte.
func TestAppendColorHex(t *testing.T) {
	for c := range 256 {
		b := byte(c)
		isHex := '0' <= b && b <= '9' || 'a' <= b && b <= 'f' || 'A' <= b && b <= 'F'
		for _, in := range [][]byte{{b, b, b}, {'0', '0', '0', '0', '0', b}} {
			got, err := AppendColor(nil, in)
			if (err == nil) != isHex {
				t.Errorf("AppendColor(%q) = %q, %v; want valid %v", in, got, err, isHex)
			}
		}
	}
}

// wantVisible is the text a badge shows for s: each byte of invalid
// UTF-8 as U+FFFD, without the characters XML 1.0 forbids, upper-cased
// for for-the-badge.
func wantVisible(s string, upper bool) string {
	var b strings.Builder
	for _, r := range s { // each invalid byte is one U+FFFD
		if r < 0x20 || r == 0xFFFE || r == 0xFFFF {
			continue
		}
		if upper {
			r = unicode.ToUpper(r)
		}
		b.WriteRune(r)
	}
	return b.String()
}

// checkBadge checks everything a badge promises for any label and value.
func checkBadge(t *testing.T, b *Badge) {
	t.Helper()
	svg := AppendSVG(nil, b)
	if !utf8.Valid(svg) {
		t.Fatalf("%s %q: invalid UTF-8 in the badge", b.Style, b.Label)
	}
	d := mustParse(t, svg)
	upper := b.Style == ForTheBadge
	want := wantVisible(string(b.Value), upper)
	if l := wantVisible(string(b.Label), upper); len(b.Label) > 0 {
		want = l + ": " + want
	}
	if d.AriaLabel != want || d.Title != want {
		t.Fatalf("%s %q: aria-label %q, title %q; want %q", b.Style, b.Label, d.AriaLabel, d.Title, want)
	}
	boxes := d.G[0].Rects
	if len(boxes) < 2 || boxes[0].Fill != string(b.LabelColor) || boxes[1].Fill != string(b.Color) {
		t.Fatalf("%s %q: boxes %+v, want fills %s and %s", b.Style, b.Label, boxes, b.LabelColor, b.Color)
	}
	lt := wantTextWidth(b.Style, string(b.Label))
	if got := mustNum(t, d.Width); len(b.Label) > 0 && got < lt {
		t.Fatalf("%s %q: badge %.1f wide, narrower than its label (%.1f)", b.Style, b.Label, got, lt)
	}
}

func FuzzBadge(f *testing.F) {
	f.Add("visitors", "blue", "555", "1.2k")
	f.Add("<script>", "#fff", "x", "0")
	f.Add("\xff\x00", "ffffff", "GrEy", "")
	f.Add("a & b ' \" c \uFFFE", "A1B2C3", "informational", "9")
	f.Fuzz(func(t *testing.T, label, color, labelColor, value string) {
		pick := func(in string) []byte {
			c, err := AppendColor(nil, []byte(in))
			if err != nil {
				return []byte("#4c1") // a refused color falls back; the label is still drawn
			}
			if !strings.HasPrefix(string(c), "#") {
				t.Fatalf("AppendColor(%q) = %q, want a CSS color", in, c)
			}
			return c
		}
		b := &Badge{Label: []byte(label), Value: []byte(value), Color: pick(color), LabelColor: pick(labelColor)}
		for s := range styleNames {
			b.Style = Style(s)
			checkBadge(t, b)
		}
	})
}
