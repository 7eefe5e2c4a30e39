package web

import (
	"strconv"
	"time"
	"unicode/utf8"
)

// appendHTML appends s to dst escaped for HTML text and attribute values,
// exactly as html.EscapeString escapes it.
func appendHTML(dst, s []byte) []byte {
	last := 0
	for i, c := range s {
		var esc string
		switch c {
		case '<':
			esc = "&lt;"
		case '>':
			esc = "&gt;"
		case '&':
			esc = "&amp;"
		case '\'':
			esc = "&#39;"
		case '"':
			esc = "&#34;"
		default:
			continue
		}
		dst = append(dst, s[last:i]...)
		dst = append(dst, esc...)
		last = i + 1
	}
	return append(dst, s[last:]...)
}

const hexDigits = "0123456789abcdef"

// appendJSON appends s to dst as a quoted JSON string. Invalid UTF-8
// becomes U+FFFD, and <, > and & are escaped as encoding/json does, so the
// output is safe to embed in HTML.
func appendJSON(dst []byte, s string) []byte {
	dst = append(dst, '"')
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			switch {
			case c == '"' || c == '\\':
				dst = append(dst, '\\', c)
			case c == '\n':
				dst = append(dst, '\\', 'n')
			case c == '\r':
				dst = append(dst, '\\', 'r')
			case c == '\t':
				dst = append(dst, '\\', 't')
			case c < 0x20 || c == '<' || c == '>' || c == '&':
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			default:
				dst = append(dst, c)
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			dst = append(dst, `\ufffd`...)
		case r == '\u2028' || r == '\u2029':
			dst = append(dst, `\u202`...)
			dst = append(dst, hexDigits[r&0xf])
		default:
			dst = append(dst, s[i:i+size]...)
		}
		i += size
	}
	return append(dst, '"')
}

// appendDuration appends d in the style of time.Duration.String, with at
// most three decimals: 0s, 850ns, 12.345µs, 1.5ms. It allocates nothing.
func appendDuration(dst []byte, d time.Duration) []byte {
	if d <= 0 {
		return append(dst, "0s"...) // a clock step back reads as no time
	}
	unit, div := "ns", time.Duration(1)
	switch {
	case d >= time.Second:
		unit, div = "s", time.Second
	case d >= time.Millisecond:
		unit, div = "ms", time.Millisecond
	case d >= time.Microsecond:
		unit, div = "µs", time.Microsecond
	}
	dst = strconv.AppendInt(dst, int64(d/div), 10)
	if frac := (d % div) * 1000 / div; frac > 0 {
		dst = append(dst, '.')
		dst = append(dst, byte('0'+frac/100), byte('0'+frac/10%10), byte('0'+frac%10))
		for dst[len(dst)-1] == '0' {
			dst = dst[:len(dst)-1]
		}
	}
	return append(dst, unit...)
}
