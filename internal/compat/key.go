package compat

import (
	"errors"
	"fmt"
	"strings"

	"visitors/internal/store"
)

// Namespaces of the keys each service counts into: a service's counters
// are the keys under its namespace, and /counter/{key} shows them too.
const (
	nsHITS         = "hits/"
	nsCountAPI     = "countapi/"
	nsVisitorBadge = "visitor-badge/"
	nsGHPVC        = "ghpvc/"
)

// msgKeyTooLong is the client's message for a key past the store's
// limit, from its constant.
var msgKeyTooLong = fmt.Sprintf("the counter's key, once escaped, would be longer than %d bytes: shorten the name", store.MaxKeyBytes)

// appendSegment appends name to dst as one segment of a key: the bytes
// A-Z a-z 0-9 . _ - stand for themselves, and every other byte,
// '~' and '/' included, is written ~XX, its value in upper-case hex. A
// segment that would be "." or ".." has its dots escaped, and one that
// is a route name (daily, graph, stream: store.KeyIsRoute) its first
// letter, so that every segment is one a public key may end with. As
// each ~XX reads back as one byte whatever it stands for, two distinct
// names never make the same segment.
func appendSegment(dst []byte, name string) []byte {
	start := len(dst)
	for i := 0; i < len(name); i++ {
		c := name[i]
		if plain(c) {
			dst = append(dst, c)
			continue
		}
		dst = appendEscaped(dst, c)
	}
	seg := dst[start:]
	switch {
	case string(seg) == "." || string(seg) == "..":
		dst = dst[:start]
		for range len(seg) {
			dst = appendEscaped(dst, '.')
		}
	case store.KeyIsRoute(seg):
		first := seg[0]
		rest := append([]byte(nil), seg[1:]...)
		dst = appendEscaped(dst[:start], first)
		dst = append(dst, rest...)
	}
	return dst
}

// plain reports whether c stands for itself in a key's segment.
func plain(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '.' || c == '_' || c == '-'
}

const upperHex = "0123456789ABCDEF"

// appendEscaped appends c as ~XX.
func appendEscaped(dst []byte, c byte) []byte {
	return append(dst, '~', upperHex[c>>4], upperHex[c&0xf])
}

// Key returns the key a service's URL counts into: the namespace of
// the service, then each part as one escaped segment (appendSegment),
// joined by '/'. It is the one spelling docs/migrate.md documents:
//
//	HITS           /api/count/incr/badge.svg?url=U  hits/<U>
//	CountAPI       /hit/NS/KEY                       countapi/<NS>/<KEY>
//	visitor-badge  /badge?page_id=ID                 visitor-badge/<ID>
//	ghpvc          /ghpvc/?username=NAME             ghpvc/<NAME>
//
// It returns false if a part is empty or the key would be longer than
// [store.MaxKeyBytes]. Every key it returns is a [store.ValidPublicKey].
func Key(s Service, parts ...string) ([]byte, bool) {
	k := []byte(namespaces[s])
	for i, p := range parts {
		if p == "" {
			return nil, false
		}
		if i > 0 {
			k = append(k, '/')
		}
		k = appendSegment(k, p)
		if len(k) > store.MaxKeyBytes {
			return nil, false
		}
	}
	return k, true
}

// namespaces are the services' namespaces, by [Service].
var namespaces = [numServices]string{HITS: nsHITS, CountAPI: nsCountAPI, VisitorBadge: nsVisitorBadge, GHPVC: nsGHPVC}

// namespaceParts is how many names a key of each service holds.
var namespaceParts = [numServices]int{HITS: 1, CountAPI: 2, VisitorBadge: 1, GHPVC: 1}

// CheckKey returns an error if key is in the namespace of a service
// (hits/, countapi/, visitor-badge/, ghpvc/) and yet no URL of that
// service counts into it, as a CSV of counts carried over may name it:
// "hits/https://github.com/o/r" where the badge counts into
// "hits/https~3A~2F~2Fgithub.com~2Fo~2Fr". Such a count would be
// imported into a key nothing shows, and the badge would start again
// from 0. The error says the key meant, where there is one. A key
// outside the namespaces is no concern of this package's: nil.
func CheckKey(key string) error {
	for s := range numServices {
		ns := namespaces[s]
		if !strings.HasPrefix(key, ns) {
			continue
		}
		rest := key[len(ns):]
		parts := strings.Split(rest, "/")
		if len(parts) == namespaceParts[s] {
			names := make([]string, len(parts))
			ok := true
			for i, p := range parts {
				names[i], ok = unescapeSegment(p)
				if !ok {
					break
				}
			}
			if ok {
				if k, ok := Key(s, names...); ok && string(k) == key {
					return nil
				}
			}
		}
		msg := fmt.Sprintf("no URL of %s counts into it: each name in it is written as docs/migrate.md says (\"The key each URL counts into\")", s)
		// The key meant, if the rest is the names as the URL gave them.
		raw := []string{rest}
		if s == CountAPI {
			if a, b, two := strings.Cut(rest, "/"); two {
				raw = []string{a, b}
			}
		}
		if k, ok := Key(s, raw...); ok && string(k) != key {
			msg += fmt.Sprintf("; did you mean %q?", k)
		}
		return errors.New(msg)
	}
	return nil
}

// unescapeSegment reads one segment of a key back into the name it
// escapes, and reports whether every '~' is followed by two upper-case
// hex digits.
func unescapeSegment(seg string) (string, bool) {
	var b []byte
	for i := 0; i < len(seg); i++ {
		if seg[i] != '~' {
			b = append(b, seg[i])
			continue
		}
		if i+2 >= len(seg) {
			return "", false
		}
		hi, lo := strings.IndexByte(upperHex, seg[i+1]), strings.IndexByte(upperHex, seg[i+2])
		if hi < 0 || lo < 0 {
			return "", false
		}
		b = append(b, byte(hi<<4|lo))
		i += 2
	}
	return string(b), true
}
