package badge

import (
	_ "embed"
	"encoding/json"
	"sort"
	"sync"
	"unicode/utf8"
)

// verdanaJSON holds the advance width, in pixels, of every code point of
// Verdana at 11px, as ranges [first, last, width]: the table shields.io
// measures with (npm package anafanafo, MIT; see
// verdana-11px-normal.LICENSE).
//
//go:embed verdana-11px-normal.json
var verdanaJSON []byte

type widthRange struct {
	lo, hi rune
	w      float64
}

// fallbackWidth is used for code points the table lacks: about the width
// of a lowercase letter, so unknown text is neither squeezed nor padded
// much; textLength in the SVG makes the rendering fit it exactly.
const fallbackWidth = 7.0

// widthTable is the parsed width table: ASCII by index, the rest by
// range.
type widthTable struct {
	ascii  [128]float64
	ranges []widthRange
}

// widths returns the table, parsed on first use. It returns a pointer:
// the table by value is a 1 KiB copy on every call, which was 7% of a
// counter badge's request (a CPU profile of BenchmarkCounterBadge).
var widths = sync.OnceValue(func() *widthTable {
	t := new(widthTable)
	var raw [][3]float64
	if err := json.Unmarshal(verdanaJSON, &raw); err != nil {
		panic("badge: embedded width table: " + err.Error())
	}
	for _, r := range raw {
		t.ranges = append(t.ranges, widthRange{rune(r[0]), rune(r[1]), r[2]})
	}
	sort.Slice(t.ranges, func(i, j int) bool { return t.ranges[i].lo < t.ranges[j].lo })
	for c := range t.ascii {
		t.ascii[c] = lookup(t.ranges, rune(c))
	}
	return t
})

// lookup binary-searches the ranges for r (by hand: a closure passed to
// sort.Search could cost an allocation per character).
func lookup(ranges []widthRange, r rune) float64 {
	i, j := 0, len(ranges)
	for i < j {
		h := int(uint(i+j) >> 1)
		if ranges[h].hi < r {
			i = h + 1
		} else {
			j = h
		}
	}
	if i < len(ranges) && ranges[i].lo <= r {
		return ranges[i].w
	}
	if r < 0x20 {
		return 0 // control characters take no room
	}
	return fallbackWidth
}

// TextWidth returns the width in pixels of s set in Verdana 11px. Invalid
// UTF-8 counts as U+FFFD.
func TextWidth(s []byte) float64 {
	t := widths()
	w := 0.0
	for i := 0; i < len(s); {
		if c := s[i]; c < utf8.RuneSelf {
			w += t.ascii[c]
			i++
			continue
		}
		r, n := utf8.DecodeRune(s[i:])
		w += lookup(t.ranges, r)
		i += n
	}
	return w
}
