package badge

import (
	"bytes"
	"compress/flate"
	_ "embed"
	"encoding/binary"
	"errors"
	"io"
	"strconv"
	"sync"
	"sync/atomic"
)

// logoData holds the path of every Simple Icons logo, each compressed on
// its own (see scripts/genlogos for the format and scripts/logos.sh to
// regenerate it; simple-icons.LICENSE for the license). Compressed one
// by one, the set is 4% larger than as one stream, but a badge inflates
// only the logo it draws, once: the process holds the paths of the logos
// asked for, not all 4.6 MB of them.
//
//go:embed simple-icons.bin
var logoData []byte

// ErrLogo is returned for a logo name that is not in the set; its
// message is fit for a client.
var ErrLogo = errors.New("logo must be the name of a Simple Icons logo, such as github, go or docker (see simpleicons.org)")

// MaxLogoBytes is the longest logo name looked up.
const MaxLogoBytes = 64

// Logo is one drawable logo: SVG path data on a 24×24 canvas. A Logo is
// shared and never mutated; it is safe for concurrent use.
type Logo struct {
	slug   string
	packed []byte                 // raw DEFLATE of the path
	path   atomic.Pointer[[]byte] // inflated on first use
}

// Slug returns the logo's Simple Icons name.
func (l *Logo) Slug() string { return l.slug }

// Path returns the logo's SVG path data, inflating it on first use.
func (l *Logo) Path() []byte {
	if p := l.path.Load(); p != nil {
		return *p
	}
	p, err := io.ReadAll(flate.NewReader(bytes.NewReader(l.packed)))
	if err != nil {
		panic("badge: embedded logo " + l.slug + ": " + err.Error()) // TestLogosAllInflate checks every one
	}
	l.path.CompareAndSwap(nil, &p)
	return *l.path.Load()
}

// logos is the index of logoData, sorted by slug, built on first use.
var logos = sync.OnceValue(func() []Logo {
	ls := make([]Logo, 0, logoCount)
	for d := logoData; len(d) > 0; {
		n := int(d[0])
		slug := string(d[1 : 1+n])
		d = d[1+n:]
		size, k := binary.Uvarint(d)
		if k <= 0 || uint64(len(d)-k) < size {
			panic("badge: embedded logo data is corrupt after " + slug)
		}
		ls = append(ls, Logo{slug: slug, packed: d[k : k+int(size)]})
		d = d[k+int(size):]
	}
	return ls
})

// LookupLogo returns the logo named name: a Simple Icons slug ("github",
// "go", "dotnet") or its title as the set's rule turns a title into a
// slug ("GitHub", ".NET", "C++" are github, dotnet, cplusplus). It
// allocates nothing.
func LookupLogo(name []byte) (*Logo, error) {
	if len(name) == 0 || len(name) > MaxLogoBytes {
		return nil, ErrLogo
	}
	var buf [4 * MaxLogoBytes]byte
	slug := appendSlug(buf[:0], name)
	ls := logos()
	i, j := 0, len(ls) // binary search by hand, as in lookup
	for i < j {
		h := int(uint(i+j) >> 1)
		if ls[h].slug < string(slug) {
			i = h + 1
		} else {
			j = h
		}
	}
	if i == len(ls) || ls[i].slug != string(slug) {
		return nil, ErrLogo
	}
	return &ls[i], nil
}

// Logo geometry, as shields.io draws it: 14 px square, 3 px before the
// label.
const (
	logoSize = 14
	logoGap  = 3
)

// defaultLogoColor is shields.io's: whitesmoke, beside white text.
var defaultLogoColor = []byte("#f5f5f5")

// appendLogo appends l as a nested SVG at x, centred vertically.
func appendLogo(dst []byte, g *geometry, l *Logo, color []byte) []byte {
	if len(color) == 0 {
		color = defaultLogoColor
	}
	dst = append(dst, `<svg x="`...)
	dst = strconv.AppendInt(dst, int64(g.logoX), 10)
	dst = append(dst, `" y="`...)
	dst = strconv.AppendInt(dst, int64((g.height-logoSize)/2), 10)
	dst = append(dst, `" width="14" height="14" viewBox="0 0 24 24"><path fill="`...)
	dst = append(dst, color...)
	dst = append(dst, `" d="`...)
	dst = append(dst, l.Path()...)
	return append(dst, `"/></svg>`...)
}

// appendSlug appends the slug of title, as simple-icons' titleToSlug
// makes it for ASCII: lower case, + . & as plus, dot, and; every other
// character but a-z and 0-9 dropped. A slug is left as it is.
func appendSlug(dst, title []byte) []byte {
	for _, c := range title {
		switch {
		case 'A' <= c && c <= 'Z':
			dst = append(dst, c+'a'-'A')
		case 'a' <= c && c <= 'z', '0' <= c && c <= '9', c == '_':
			dst = append(dst, c)
		case c == '+':
			dst = append(dst, "plus"...)
		case c == '.':
			dst = append(dst, "dot"...)
		case c == '&':
			dst = append(dst, "and"...)
		}
	}
	return dst
}
