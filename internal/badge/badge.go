// Package badge renders the SVG badges of visitors' counters: a label on
// the left, a value on the right, in the four styles of shields.io (flat,
// flat-square, plastic, for-the-badge). Text is measured with Verdana's
// real advance widths, so a label never overflows its box, and rendering
// appends to the caller's buffer without allocating.
package badge

import (
	"errors"
	"strconv"
	"unicode"
	"unicode/utf8"
)

// MaxLabelRunes is the longest label a badge parameter may ask for, in
// characters: the counter badges' label and the labels of the URLs of
// closed services (internal/compat) alike.
const MaxLabelRunes = 64

// Style is a badge's look.
type Style uint8

// The styles, as shields.io names them.
const (
	Flat Style = iota
	FlatSquare
	Plastic
	ForTheBadge
)

var styleNames = []string{"flat", "flat-square", "plastic", "for-the-badge"}

// String returns the style's name.
func (s Style) String() string { return styleNames[s] }

// ParseStyle returns the style named s; "" is Flat.
func ParseStyle(s []byte) (Style, error) {
	if len(s) == 0 {
		return Flat, nil
	}
	for i, n := range styleNames {
		if string(s) == n {
			return Style(i), nil
		}
	}
	return Flat, ErrStyle
}

// Errors for bad parameters; the messages are fit for a client.
var (
	ErrStyle = errors.New("style must be flat, flat-square, plastic or for-the-badge")
	ErrColor = errors.New("colors must be a name (brightgreen, green, yellowgreen, yellow, orange, red, blue, lightgrey, grey, …, or a CSS color name such as purple), or 3 or 6 hex digits without #")
)

// namedColors are shields.io's names. They win over the CSS names where
// both define one (red, green, yellow, orange, blue, grey, gray,
// yellowgreen, blueviolet, lightgrey, lightgray), as on shields.io.
var namedColors = map[string]string{
	"brightgreen": "#4c1", "green": "#97ca00", "yellowgreen": "#a4a61d", "yellow": "#dfb317",
	"orange": "#fe7d37", "red": "#e05d44", "blue": "#007ec6", "lightgrey": "#9f9f9f",
	"lightgray": "#9f9f9f", "grey": "#555", "gray": "#555", "blueviolet": "#8a2be2",
	"success": "#4c1", "important": "#fe7d37", "critical": "#e05d44",
	"informational": "#007ec6", "inactive": "#9f9f9f",
}

// maxColorName is the length of the longest color name,
// lightgoldenrodyellow.
const maxColorName = 20

// AppendColor appends the CSS color for a color parameter to dst: a name
// of shields.io's or a CSS color name, in any case, or 3 or 6 hex digits
// without '#'. It allocates nothing beyond dst.
func AppendColor(dst, c []byte) ([]byte, error) {
	if v, ok := lookupColor(c); ok {
		return append(dst, v...), nil
	}
	if len(c) != 3 && len(c) != 6 {
		return dst, ErrColor
	}
	for _, b := range c {
		if !('0' <= b && b <= '9' || 'a' <= b && b <= 'f' || 'A' <= b && b <= 'F') {
			return dst, ErrColor
		}
	}
	dst = append(dst, '#')
	return append(dst, c...), nil
}

// lookupColor returns the color named c, in any case: shields.io's name
// first, then the CSS one.
func lookupColor(c []byte) (string, bool) {
	if len(c) > maxColorName {
		return "", false
	}
	var buf [maxColorName]byte
	lower := buf[:len(c)]
	for i, b := range c {
		if 'A' <= b && b <= 'Z' {
			b += 'a' - 'A'
		}
		lower[i] = b
	}
	if v, ok := namedColors[string(lower)]; ok {
		return v, true
	}
	v, ok := cssColors[string(lower)]
	return v, ok
}

// Badge is what to draw. Label and Value are plain text; Color,
// LabelColor and LogoColor are CSS colors as AppendColor returns them.
// Logo, if not nil, is drawn left of the label in LogoColor (whitesmoke
// when empty), and the label's box widens to hold it.
type Badge struct {
	Label, Value      []byte
	Color, LabelColor []byte
	Style             Style
	Logo              *Logo
	LogoColor         []byte
}

// geometry is what differs between the styles.
type geometry struct {
	height   int
	radius   int
	padding  float64 // each side of the text
	fontSize int
	textY    int // baseline of the text; its shadow is one lower
	shadow   bool
	gradient string // a <linearGradient> with id "s", or ""
	upper    bool   // for-the-badge shouts
	spacing  float64
	scale    float64 // text width relative to Verdana 11px
	bold     bool
	logoX    int // where a logo starts
}

var geometries = [...]geometry{
	Flat: {height: 20, radius: 3, padding: 5, fontSize: 11, textY: 14, shadow: true, scale: 1, logoX: 5,
		gradient: `<linearGradient id="s" x2="0" y2="100%"><stop offset="0" stop-color="#bbb" stop-opacity=".1"/><stop offset="1" stop-opacity=".1"/></linearGradient>`},
	FlatSquare: {height: 20, radius: 0, padding: 5, fontSize: 11, textY: 14, scale: 1, logoX: 5},
	Plastic: {height: 18, radius: 4, padding: 5, fontSize: 11, textY: 13, shadow: true, scale: 1, logoX: 5,
		gradient: `<linearGradient id="s" x2="0" y2="100%"><stop offset="0" stop-color="#fff" stop-opacity=".7"/><stop offset=".1" stop-color="#aaa" stop-opacity=".1"/><stop offset=".9" stop-opacity=".3"/><stop offset="1" stop-opacity=".5"/></linearGradient>`},
	// Verdana bold 10px is about as wide as regular 11px; letters get
	// 1.25px of extra spacing each.
	ForTheBadge: {height: 28, radius: 0, padding: 12, fontSize: 10, textY: 18, upper: true, spacing: 1.25, scale: 1, bold: true, logoX: 9},
}

// textWidth is the width of s as style g draws it.
func (g *geometry) textWidth(s []byte) float64 {
	w := TextWidth(s) * g.scale
	if g.upper {
		w = 0
		var buf [4]byte
		for i := 0; i < len(s); {
			r, n := utf8.DecodeRune(s[i:])
			w += TextWidth(utf8.AppendRune(buf[:0], unicode.ToUpper(r)))
			i += n
		}
		w *= g.scale
	}
	if g.spacing > 0 {
		w += g.spacing * float64(utf8.RuneCount(s))
	}
	return w
}

// AppendSVG appends b as an SVG document to dst. It allocates nothing
// when dst has room.
func AppendSVG(dst []byte, b *Badge) []byte {
	g := &geometries[b.Style]
	lt, vt := g.textWidth(b.Label), g.textWidth(b.Value)
	lw := round1(lt + 2*g.padding)
	vw := round1(vt + 2*g.padding)
	lx := lw / 2 // the label's centre
	if len(b.Label) == 0 {
		lw = 0
	}
	if b.Logo != nil {
		lw, lx = logoBox(g, lt, len(b.Label) > 0)
	}
	w := lw + vw

	dst = append(dst, `<svg xmlns="http://www.w3.org/2000/svg" width="`...)
	dst = appendNum(dst, w)
	dst = append(dst, `" height="`...)
	dst = strconv.AppendInt(dst, int64(g.height), 10)
	dst = append(dst, `" role="img" aria-label="`...)
	dst = appendTitle(dst, b, g.upper)
	dst = append(dst, `"><title>`...)
	dst = appendTitle(dst, b, g.upper)
	dst = append(dst, `</title>`...)
	dst = append(dst, g.gradient...)
	dst = append(dst, `<clipPath id="r"><rect width="`...)
	dst = appendNum(dst, w)
	dst = append(dst, `" height="`...)
	dst = strconv.AppendInt(dst, int64(g.height), 10)
	dst = append(dst, `" rx="`...)
	dst = strconv.AppendInt(dst, int64(g.radius), 10)
	dst = append(dst, `" fill="#fff"/></clipPath><g clip-path="url(#r)"><rect width="`...)
	dst = appendNum(dst, lw)
	dst = append(dst, `" height="`...)
	dst = strconv.AppendInt(dst, int64(g.height), 10)
	dst = append(dst, `" fill="`...)
	dst = append(dst, b.LabelColor...)
	dst = append(dst, `"/><rect x="`...)
	dst = appendNum(dst, lw)
	dst = append(dst, `" width="`...)
	dst = appendNum(dst, vw)
	dst = append(dst, `" height="`...)
	dst = strconv.AppendInt(dst, int64(g.height), 10)
	dst = append(dst, `" fill="`...)
	dst = append(dst, b.Color...)
	dst = append(dst, `"/>`...)
	if g.gradient != "" {
		dst = append(dst, `<rect width="`...)
		dst = appendNum(dst, w)
		dst = append(dst, `" height="`...)
		dst = strconv.AppendInt(dst, int64(g.height), 10)
		dst = append(dst, `" fill="url(#s)"/>`...)
	}
	dst = append(dst, `</g><g fill="#fff" text-anchor="middle" font-family="Verdana,Geneva,DejaVu Sans,sans-serif" text-rendering="geometricPrecision" font-size="`...)
	dst = strconv.AppendInt(dst, int64(g.fontSize), 10)
	dst = append(dst, '"')
	if g.bold {
		dst = append(dst, ` font-weight="bold"`...)
	}
	if g.spacing > 0 {
		dst = append(dst, ` letter-spacing="`...)
		dst = appendNum(dst, g.spacing)
		dst = append(dst, '"')
	}
	dst = append(dst, '>')
	if len(b.Label) > 0 {
		dst = appendText(dst, g, b.Label, lx, lt)
	}
	dst = appendText(dst, g, b.Value, lw+vw/2, vt)
	dst = append(dst, "</g>"...)
	if b.Logo != nil {
		dst = appendLogo(dst, g, b.Logo, b.LogoColor)
	}
	return append(dst, "</svg>\n"...)
}

// logoBox returns the width of a label box that holds a logo and, if
// hasLabel, a label lt wide after it, and the centre of that label.
func logoBox(g *geometry, lt float64, hasLabel bool) (width, centre float64) {
	start := float64(g.logoX + logoSize)
	if !hasLabel {
		return start + float64(g.logoX), 0
	}
	start += logoGap
	width = round1(start + lt + g.padding)
	return width, start + lt/2
}

// appendText appends s centred on x, squeezed or stretched to exactly
// width by textLength, with a shadow one pixel below in the styles that
// have one.
func appendText(dst []byte, g *geometry, s []byte, x, width float64) []byte {
	for _, shadow := range [2]bool{true, false} {
		if shadow && !g.shadow {
			continue
		}
		dst = append(dst, `<text x="`...)
		dst = appendNum(dst, x)
		dst = append(dst, `" y="`...)
		y := g.textY
		if shadow {
			y++
		}
		dst = strconv.AppendInt(dst, int64(y), 10)
		if shadow {
			dst = append(dst, `" fill="#010101" fill-opacity=".3`...)
		}
		dst = append(dst, `" textLength="`...)
		dst = appendNum(dst, round1(width))
		dst = append(dst, `" lengthAdjust="spacingAndGlyphs">`...)
		dst = appendXML(dst, s, g.upper)
		dst = append(dst, `</text>`...)
	}
	return dst
}

// appendTitle appends "label: value", escaped, for the title and the
// aria-label.
func appendTitle(dst []byte, b *Badge, upper bool) []byte {
	if len(b.Label) > 0 {
		dst = appendXML(dst, b.Label, upper)
		dst = append(dst, ": "...)
	}
	return appendXML(dst, b.Value, upper)
}

// appendXML appends s escaped for XML text and attributes. Invalid UTF-8
// becomes U+FFFD and control characters, which XML 1.0 forbids, are
// dropped; with upper, letters are upper-cased.
func appendXML(dst, s []byte, upper bool) []byte {
	for i := 0; i < len(s); {
		// A run of printable ASCII that needs no escape is copied whole:
		// most text is, and decoding it a rune at a time was a fifth of a
		// counter badge's request.
		if j := plainRun(s[i:], upper); j > 0 {
			dst = append(dst, s[i:i+j]...)
			i += j
			continue
		}
		r, n := utf8.DecodeRune(s[i:])
		i += n
		switch {
		case r == '<':
			dst = append(dst, "&lt;"...)
		case r == '>':
			dst = append(dst, "&gt;"...)
		case r == '&':
			dst = append(dst, "&amp;"...)
		case r == '"':
			dst = append(dst, "&quot;"...)
		case r == '\'':
			dst = append(dst, "&apos;"...)
		case r < 0x20 || r == 0xFFFE || r == 0xFFFF:
			// not allowed in XML 1.0
		default:
			if upper {
				r = unicode.ToUpper(r)
			}
			dst = utf8.AppendRune(dst, r)
		}
	}
	return dst
}

// plain marks the ASCII bytes appendXML copies as they are: printable
// and no markup; with upper, not a lowercase letter either.
var plain, plainUpper = func() (p, u [utf8.RuneSelf]bool) {
	for c := byte(0x20); c < utf8.RuneSelf; c++ {
		switch c {
		case '<', '>', '&', '"', '\'':
			continue
		}
		p[c] = true
		u[c] = c < 'a' || c > 'z'
	}
	return p, u
}()

// plainRun returns how many bytes at the start of s appendXML may copy
// as they are.
func plainRun(s []byte, upper bool) int {
	t := &plain
	if upper {
		t = &plainUpper
	}
	i := 0
	for i < len(s) && s[i] < utf8.RuneSelf && t[s[i]] {
		i++
	}
	return i
}

func round1(f float64) float64 { return float64(int64(f*10+0.5)) / 10 }

// appendNum appends f rounded to one decimal, without a trailing ".0".
// It formats tenths as an integer: strconv.AppendFloat's shortest form
// cost most of a badge's rendering time.
func appendNum(dst []byte, f float64) []byte {
	tenths := int64(f*10 + 0.5)
	if tenths < 0 {
		tenths = 0
	}
	dst = strconv.AppendInt(dst, tenths/10, 10)
	if d := tenths % 10; d != 0 {
		dst = append(dst, '.', byte('0'+d))
	}
	return dst
}

// AppendCount appends n in decimal, or with abbreviated as 1.2k, 3.4M,
// 5.6B (one decimal, rounded down, so that 999,999 is 999.9k, never 1000k).
func AppendCount(dst []byte, n uint64, abbreviated bool) []byte {
	if !abbreviated || n < 1000 {
		return strconv.AppendUint(dst, n, 10)
	}
	units := []struct {
		div    uint64
		suffix byte
	}{{1e12, 'T'}, {1e9, 'B'}, {1e6, 'M'}, {1e3, 'k'}}
	for _, u := range units {
		if n >= u.div {
			tenths := n / (u.div / 10)
			dst = strconv.AppendUint(dst, tenths/10, 10)
			if d := tenths % 10; d != 0 {
				dst = append(dst, '.', byte('0'+d))
			}
			return append(dst, u.suffix)
		}
	}
	return dst
}
