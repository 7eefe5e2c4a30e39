package badge

import (
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"visitors/internal/race"
)

// runeByRune is appendXML as it was before runs of plain ASCII were
// copied whole: the reference the fast path must agree with.
func runeByRune(dst, s []byte, upper bool) []byte {
	for i := 0; i < len(s); {
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
		default:
			if upper {
				r = unicode.ToUpper(r)
			}
			dst = utf8.AppendRune(dst, r)
		}
	}
	return dst
}

// TestAppendXMLAgreesRuneByRune: copying runs of plain ASCII whole
// changes no byte of the output, for every ASCII byte alone and in runs,
// markup, control characters, multi-byte runes, and bytes that are not
// UTF-8 (a lone continuation byte, a cut rune), in both cases.
func TestAppendXMLAgreesRuneByRune(t *testing.T) {
	var inputs []string
	for c := range 256 {
		inputs = append(inputs, string([]byte{byte(c)}), "ab"+string([]byte{byte(c)})+"yz")
	}
	inputs = append(inputs,
		"", "visitors", "a<b>&\"c'd", "\x80", "a\x80b", "\xe6\x97", "日本\xe6\x97", "é à ǅ ß", "\x7f\x1f\x20~",
		strings.Repeat("az AZ 09 ", 20), "\xef\xbf\xbe\xef\xbf\xbf")
	for _, s := range inputs {
		for _, upper := range []bool{false, true} {
			got, want := appendXML(nil, []byte(s), upper), runeByRune(nil, []byte(s), upper)
			if string(got) != string(want) {
				t.Errorf("appendXML(%q, upper %v) = %q, want %q", s, upper, got, want)
			}
		}
	}
}

// TestLogoNameBounds: a name of MaxLogoBytes resolves (white space is
// not part of a slug); one byte more is refused; the longest name, all
// of whose bytes become four-byte words, is looked up without an
// allocation.
func TestLogoNameBounds(t *testing.T) {
	name := "GitHub" + strings.Repeat(" ", MaxLogoBytes-len("GitHub"))
	if l, err := LookupLogo([]byte(name)); err != nil || l == nil {
		t.Errorf("LookupLogo(%d bytes: GitHub and spaces) = %v, %v; want the GitHub logo", len(name), l, err)
	}
	if _, err := LookupLogo([]byte(name + " ")); err != ErrLogo {
		t.Errorf("LookupLogo(%d bytes) = %v, want ErrLogo", len(name)+1, err)
	}
	if race.Enabled {
		return // allocation budgets are checked without -race
	}
	pluses := []byte(strings.Repeat("+", MaxLogoBytes))
	if got := testing.AllocsPerRun(100, func() { LookupLogo(pluses) }); got > 0 {
		t.Errorf("LookupLogo(%d pluses, a %d-byte slug) allocs = %v, want 0", MaxLogoBytes, 4*MaxLogoBytes, got)
	}
}
