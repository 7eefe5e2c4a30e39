package dump

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"hash/maphash"
	"io"
	"math"
	"math/bits"
	"slices"
	"unicode/utf8"

	"visitors/internal/store"
)

// Batch is how many keys [Decode] hands its write function at a time
// unless told otherwise.
const Batch = 10_000

// Span is where one key's JSON object lies in a dump: from Start, which
// may be preceded by the comma and white space before it, to End.
type Span struct{ Start, End int64 }

// Decode reads a [Dump] from r key by key, checks each key as every
// import must (a key the service accepts, its counts within their
// bounds, its dates real, its days adding up to no more than its total,
// no field, key or day given twice), hands them to write batch keys at a
// time ([Batch] if batch <= 0) with where each lies in r, and returns the
// dump's /hi counter. Errors carry the line; a write that fails with a
// [KeyError] is named by the line of that key.
func Decode(r io.Reader, batch int, write func([]Key, []Span) error) (hits uint64, err error) {
	if batch <= 0 {
		batch = Batch
	}
	lr := &lineReader{r: r}
	dec := json.NewDecoder(lr)
	lr.pos = dec.InputOffset
	dec.DisallowUnknownFields()
	at := func(off int64, format string, args ...any) error {
		return fmt.Errorf("line %d: %s", lr.line(off), fmt.Sprintf(format, args...))
	}
	syntax := func(err error) error {
		var se *json.SyntaxError
		var te *json.UnmarshalTypeError
		var ve *valueError
		switch {
		case errors.As(err, &se):
			return at(se.Offset, "%v", err)
		case errors.As(err, &te):
			// Offset is within the value, and the decoder has read all of
			// it: its last byte is the line to name.
			return at(dec.InputOffset()-1, "%v", err)
		case errors.As(err, &ve):
			// The decoder has read the whole object: it began len bytes
			// before where the decoder is.
			return at(dec.InputOffset()-ve.len+max(ve.at-1, 0), "%v", err)
		case errors.Is(err, errNotUTF8):
			return err // with the line of the first bad byte
		case errors.Is(err, errBlanksTooLarge):
			return at(dec.InputOffset(), "%v", err)
		case errors.Is(err, errValueTooLarge):
			// Named by where the value begins, past the blanks and comma
			// after what the decoder has passed.
			return at(lr.valueStart(dec.InputOffset()), "%v", err)
		case errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF):
			return at(dec.InputOffset(), "the document ends too early")
		}
		return at(dec.InputOffset(), "%v", err)
	}
	expect := func(want json.Delim) error {
		t, err := dec.Token()
		if err != nil {
			return syntax(err)
		}
		if t != want {
			return at(dec.InputOffset(), "want %q, found %v", want, t)
		}
		return nil
	}
	if err := expect('{'); err != nil {
		return 0, err
	}
	var format string
	keys := make([]Key, 0, batch)
	spans := make([]Span, 0, batch)
	lines := make([]int, 0, batch) // the line each batched key ends on
	// refused names the line of the key a write refused; nil if err
	// names no key.
	refused := func(err error) error {
		if ke := (*KeyError)(nil); errors.As(err, &ke) && ke.I >= 0 && ke.I < len(lines) {
			return fmt.Errorf("line %d: %v", lines[ke.I], err)
		}
		return nil
	}
	seen := map[string]bool{}
	seenKeys := newKeySet()
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return 0, syntax(err)
		}
		if name, ok := t.(string); ok {
			if seen[name] {
				return 0, at(dec.InputOffset(), "field %q given twice", name)
			}
			seen[name] = true
		}
		switch t {
		case "format":
			if err := dec.Decode(&format); err != nil {
				return 0, syntax(err)
			}
			if format != Format {
				return 0, at(dec.InputOffset(), "format %q, want %q", format, Format)
			}
		case "hits":
			if err := dec.Decode(&hits); err != nil {
				return 0, syntax(err)
			}
			if hits > store.MaxImportHits {
				return 0, at(dec.InputOffset(), "hits %d is above the most the /hi counter holds, %d", hits, uint64(store.MaxImportHits))
			}
		case "keys":
			if err := expect('['); err != nil {
				return 0, err
			}
			for dec.More() {
				var kd Key
				start := dec.InputOffset()
				if err := dec.Decode(&kd); err != nil {
					return 0, syntax(err)
				}
				if err := checkKey(&kd); err != nil {
					return 0, at(dec.InputOffset()-1, "%v", err)
				}
				line := lr.line(dec.InputOffset() - 1)
				seenKeys.add(kd.Key, line)
				keys = append(keys, kd)
				spans = append(spans, Span{start, dec.InputOffset()})
				lines = append(lines, line)
				if len(keys) == batch {
					if err := write(keys, spans); err != nil {
						if kerr := refused(err); kerr != nil {
							return 0, kerr
						}
						return 0, at(dec.InputOffset()-1, "%v", err)
					}
					keys, spans, lines = keys[:0], spans[:0], lines[:0]
				}
			}
			if err := expect(']'); err != nil {
				return 0, err
			}
		default:
			return 0, at(dec.InputOffset(), "unknown field %v", t)
		}
	}
	if err := expect('}'); err != nil {
		return 0, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return 0, at(dec.InputOffset(), "more after the end of the document")
	}
	if format == "" {
		return 0, at(dec.InputOffset(), "no format field: not a visitors export")
	}
	if line, first, twice := seenKeys.twice(); twice {
		return 0, fmt.Errorf("line %d: a key given twice (first on line %d)", line, first)
	}
	if err := write(keys, spans); err != nil {
		if kerr := refused(err); kerr != nil {
			return 0, kerr
		}
		return 0, at(dec.InputOffset(), "%v", err)
	}
	return hits, nil
}

// KeyError is a write function's failure at keys[I] of the batch
// [Decode] handed it, so that Decode names that key's line.
type KeyError struct {
	I   int
	Err error
}

func (e *KeyError) Error() string { return e.Err.Error() }
func (e *KeyError) Unwrap() error { return e.Err }

// lineReader counts the lines of what it reads, so that an offset in it
// can be named by its line. It keeps two bits per byte read that the
// decoder has not passed yet (at most MaxValueBytes of blanks and as much
// of a value, which Read refuses to exceed), so its memory, and the
// decoder's, are bounded whatever the dump.
type lineReader struct {
	r     io.Reader
	pos   func() int64 // where the decoder is: nothing before it is asked about
	read  int64        // bytes read so far
	base  int64        // the offset bit 0 of words stands for; a multiple of 64
	words []uint64     // bit i: byte base+i is a newline
	solid []uint64     // bit i: byte base+i is not blank (a space, tab, return, newline, comma or colon)
	lines int          // newlines before base
	pend  []byte       // read and not yet checked as UTF-8: a rune the next read may end

	// The last offset line was asked about, and the newlines before it:
	// where the next call, for a later offset, starts counting.
	lastOff   int64
	lastLines int
}

// errNotUTF8 refuses a dump that is not UTF-8. JSON must be, and
// encoding/json would quietly turn the bad bytes of a key into U+FFFD:
// an import would make a key that the dump does not name.
var errNotUTF8 = errors.New("the dump is not valid UTF-8")

// checkUTF8 checks b, the bytes just read, as UTF-8, leaving a rune cut
// at the end of b for the next call; at eof nothing may be left.
func (l *lineReader) checkUTF8(b []byte, eof bool) error {
	l.pend = append(l.pend, b...)
	cut := len(l.pend)
	if !eof {
		for i := len(l.pend) - 1; i >= 0 && i >= len(l.pend)-utf8.UTFMax; i-- {
			if utf8.RuneStart(l.pend[i]) {
				if !utf8.FullRune(l.pend[i:]) {
					cut = i
				}
				break
			}
		}
	}
	if !utf8.Valid(l.pend[:cut]) {
		bad := 0
		for bad < cut {
			r, size := utf8.DecodeRune(l.pend[bad:cut])
			if r == utf8.RuneError && size <= 1 {
				break
			}
			bad += size
		}
		return fmt.Errorf("line %d: %w", l.line(l.read-int64(len(l.pend))+int64(bad)), errNotUTF8)
	}
	l.pend = append(l.pend[:0], l.pend[cut:]...)
	return nil
}

// errValueTooLarge refuses a JSON value that would hold too much memory,
// and errBlanksTooLarge as many blanks before one.
var (
	errValueTooLarge  = fmt.Errorf("a value of more than %d MiB", MaxValueBytes>>20)
	errBlanksTooLarge = fmt.Errorf("more than %d MiB of blanks between two values", MaxValueBytes>>20)
)

func (l *lineReader) Read(p []byte) (int, error) {
	if l.pos != nil {
		at := l.pos()
		l.forget(at)
		// The value the decoder reads begins past the blanks after at;
		// each is bounded on its own.
		start, limit, tooLarge := l.valueStart(at), int64(MaxValueBytes), errValueTooLarge
		if !l.isSolid(start) { // only blanks so far, and then the value's first byte
			limit, tooLarge = MaxValueBytes+1, errBlanksTooLarge
		}
		room := limit - (l.read - start)
		if room <= 0 {
			return 0, tooLarge
		}
		if int64(len(p)) > room { // the next call sees the limit
			p = p[:room]
		}
	}
	n, err := l.r.Read(p)
	for i, c := range p[:n] {
		off := l.read + int64(i) - l.base
		for int(off/64) >= len(l.words) {
			l.words = append(l.words, 0)
			l.solid = append(l.solid, 0)
		}
		switch c {
		case '\n':
			l.words[off/64] |= 1 << (off % 64)
		case ' ', '\t', '\r', ',', ':':
		default:
			l.solid[off/64] |= 1 << (off % 64)
		}
	}
	l.read += int64(n)
	if uerr := l.checkUTF8(p[:n], err == io.EOF); uerr != nil {
		return 0, uerr
	}
	return n, err
}

// forget drops the bits of whole words before off, counting their lines.
func (l *lineReader) forget(off int64) {
	k := int((off - l.base) / 64)
	if k <= 0 {
		return
	}
	k = min(k, len(l.words))
	for _, w := range l.words[:k] {
		l.lines += bits.OnesCount64(w)
	}
	l.words = append(l.words[:0], l.words[k:]...)
	l.solid = append(l.solid[:0], l.solid[k:]...)
	l.base += int64(k) * 64
}

// isSolid reports whether the byte at off, which was read, is not blank.
func (l *lineReader) isSolid(off int64) bool {
	return off < l.read && l.solid[(off-l.base)/64]>>(off%64)&1 != 0
}

// valueStart returns the offset of the first byte at or after off that
// is not blank: where the value after off begins; or off, if none was
// read yet.
func (l *lineReader) valueStart(off int64) int64 {
	for o := off; o < l.read; {
		i, b := (o-l.base)/64, o%64
		if w := l.solid[i] >> b; w != 0 {
			return o + int64(bits.TrailingZeros64(w))
		}
		o += 64 - b
	}
	return off
}

// line returns the 1-based line of byte offset off, which must not be
// before an offset the decoder has passed. It counts from its last
// answer when off is not before it, so that asking about each key of a
// dump in turn costs what lies between them.
func (l *lineReader) line(off int64) int {
	off = min(off, l.read) // nothing past what was read is known
	from, n := l.base, l.lines
	if l.lastOff >= l.base && l.lastOff <= off {
		from, n = l.lastOff, l.lastLines
	}
	for o := from; o < off; {
		i, b := (o-l.base)/64, o%64 // base is a multiple of 64
		take := min(64-b, off-o)
		n += bits.OnesCount64(l.words[i] >> b & (1<<take - 1))
		o += take
	}
	l.lastOff, l.lastLines = off, n
	return n + 1
}

// keySet is the keys of a dump read so far, to refuse one given twice
// (an import would add the two, even replacing). It keeps 96 bits of
// each key, hashed with seeds of its own that no dump can know, and the
// line it ends on: 16 bytes a key, not the key itself (a map of them
// took 90). The keys given twice are found once all are read, by a sort.
type keySet struct {
	seeds [2]maphash.Seed
	marks []keyMark
}

// keyMark is one key of a [keySet]: its hash and its line.
type keyMark struct {
	hi       uint64
	lo, line uint32
}

func newKeySet() *keySet {
	return &keySet{seeds: [2]maphash.Seed{maphash.MakeSeed(), maphash.MakeSeed()}}
}

// add notes key, which ends on line.
func (s *keySet) add(key string, line int) {
	s.marks = append(s.marks, keyMark{
		hi:   maphash.String(s.seeds[0], key),
		lo:   uint32(maphash.String(s.seeds[1], key)),
		line: uint32(min(line, math.MaxUint32)),
	})
}

// twice reports whether a key was given twice, and if so the first line
// that gives a key again, and the line that gave it first.
func (s *keySet) twice() (line, first int, twice bool) {
	slices.SortFunc(s.marks, func(a, b keyMark) int {
		return cmp.Or(cmp.Compare(a.hi, b.hi), cmp.Compare(a.lo, b.lo), cmp.Compare(a.line, b.line))
	})
	for i := 1; i < len(s.marks); i++ {
		a, b := s.marks[i-1], s.marks[i]
		if a.hi == b.hi && a.lo == b.lo && (!twice || int(b.line) < line) {
			line, first, twice = int(b.line), int(a.line), true
		}
	}
	return line, first, twice
}
