package web

import (
	"errors"
	"strings"
)

// errEscape reports a malformed percent escape in a query string.
var errEscape = errors.New("invalid URL escape")

// queryValue returns the raw (still escaped) value of the first key in the
// query string q, as url.Values.Get would find it, and whether it was
// present. It allocates nothing. Keys are compared after unescaping only
// when they contain an escape, which the common case never does.
func queryValue(q, key string) (string, bool) {
	for q != "" {
		var pair string
		pair, q, _ = strings.Cut(q, "&")
		k, v := pair, ""
		if i := strings.IndexByte(pair, '='); i >= 0 {
			k, v = pair[:i], pair[i+1:]
		}
		if k == key || keyEqual(k, key) {
			return v, true
		}
	}
	return "", false
}

// keyEqual reports whether the escaped key k unescapes to key.
func keyEqual(k, key string) bool {
	if strings.IndexByte(k, '%') < 0 && strings.IndexByte(k, '+') < 0 {
		return false // k == key was already checked
	}
	var buf [64]byte
	if len(k) > len(buf) {
		return false
	}
	u, err := appendUnescape(buf[:0], k)
	return err == nil && string(u) == key
}

// appendUnescape appends the query-unescaped form of s to dst: %XX becomes
// the byte XX and '+' becomes a space, as url.QueryUnescape does.
func appendUnescape(dst []byte, s string) ([]byte, error) {
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case '%':
			if i+2 >= len(s) {
				return dst, errEscape
			}
			hi, ok1 := unhex(s[i+1])
			lo, ok2 := unhex(s[i+2])
			if !ok1 || !ok2 {
				return dst, errEscape
			}
			dst = append(dst, hi<<4|lo)
			i += 2
		case '+':
			dst = append(dst, ' ')
		default:
			dst = append(dst, c)
		}
	}
	return dst, nil
}

func unhex(c byte) (byte, bool) {
	switch {
	case '0' <= c && c <= '9':
		return c - '0', true
	case 'a' <= c && c <= 'f':
		return c - 'a' + 10, true
	case 'A' <= c && c <= 'F':
		return c - 'A' + 10, true
	}
	return 0, false
}
