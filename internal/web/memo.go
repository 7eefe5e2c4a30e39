package web

import "visitors/internal/badge"

// badgeMemo is the last counter badge one scratch drew, so that the
// next request for the same badge is a copy of it with the count's
// digits written in. A badge is a function of its query and its count,
// and a count's width is a function of how many digits it has
// (Verdana's digits are all 6.99 px wide; see
// TestBadgeMemoMatchesAppendSVG): the same query and as many digits draw
// the same document but for the digits. Under load, most requests on a
// scratch ask for one badge; drawing it was a third of the handler
// (docs/performance.md).
//
// A memo is made only for a badge drawn twice in a row (the same query,
// as many digits), so traffic of many different badges, or of two
// counters of different lengths in turn, draws each once, as before,
// never twice.
type badgeMemo struct {
	query  string  // the raw query of svg
	digits int     // how many digits the count in svg has; 0: no svg
	svg    []byte  // the badge of query with a count of digits digits
	at     []int32 // where svg's count digits are, occurrence after occurrence
	alt    []byte  // the same with other digits, to find them

	lastQuery  string // the last badge drawn, not from the memo
	lastDigits int    // and its count's digits; 0 if not a plain count
}

// appendBadge appends b, the badge of raw query q, to dst.
func (m *badgeMemo) appendBadge(dst []byte, q string, b *badge.Badge) []byte {
	v := b.Value
	digits := 0
	if allDigits(v) {
		digits = len(v)
	}
	if digits > 0 && digits == m.digits && q == m.query {
		start := len(dst)
		dst = append(dst, m.svg...)
		out := dst[start:]
		for i, p := range m.at {
			out[p] = v[i%len(v)]
		}
		return dst
	}
	start := len(dst)
	dst = badge.AppendSVG(dst, b)
	if digits > 0 && digits == m.lastDigits && q == m.lastQuery {
		m.keep(q, dst[start:], b)
	}
	m.lastQuery, m.lastDigits = q, digits
	return dst
}

// keep makes svg, the badge b of query q, the memo: it draws b again
// with every digit of its count changed and notes where the two differ.
// If they differ anywhere but in the count's digits, nothing is kept.
func (m *badgeMemo) keep(q string, svg []byte, b *badge.Badge) {
	m.digits = 0
	v := b.Value
	var alt [24]byte
	for i, c := range v {
		alt[i] = '0' + (c-'0'+1)%10
	}
	other := *b
	other.Value = alt[:len(v)]
	m.alt = badge.AppendSVG(m.alt[:0], &other)
	if len(m.alt) != len(svg) {
		return
	}
	m.at = m.at[:0]
	for i := range svg {
		if svg[i] != m.alt[i] {
			if k := len(m.at) % len(v); svg[i] != v[k] || m.alt[i] != alt[k] {
				return
			}
			m.at = append(m.at, int32(i))
		}
	}
	if len(m.at) == 0 || len(m.at)%len(v) != 0 {
		return
	}
	m.svg = append(m.svg[:0], svg...)
	m.query, m.digits = q, len(v)
}

// allDigits reports whether v is a count of 1 to 20 decimal digits.
func allDigits(v []byte) bool {
	if len(v) == 0 || len(v) > 20 {
		return false
	}
	for _, c := range v {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}
