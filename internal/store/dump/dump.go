// Package dump is the JSON format that moves counts between stores: the
// document "visitors export" writes and "visitors import" and the owner
// API's /api/v1/import read, whatever the backend. It holds the
// document's types, its strict decoder (which every backend's import
// uses, so that every store refuses the same dumps, naming the line),
// its encoder (which every backend's export uses) and the spool an
// import checks a dump into before it changes anything.
package dump

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
	"time"

	"visitors/internal/store"
)

// Format names the JSON format of a [Dump].
const Format = "visitors-export-1"

// Dump is the JSON document an export writes and an import reads.
type Dump struct {
	Format string `json:"format"`
	Hits   uint64 `json:"hits"`
	Keys   []Key  `json:"keys"`
}

// Key is one key's counts in a [Dump]; Days maps a UTC date,
// 2006-01-02, to that day's count. Locked is the owner's lock (an import
// that adds keeps a key locked if either side has it locked).
type Key struct {
	Key    string            `json:"key"`
	Total  uint64            `json:"total"`
	Days   map[string]uint64 `json:"days,omitempty"`
	Locked bool              `json:"locked,omitempty"`
}

// DateLayout is the layout of a day's date in a [Key]'s Days.
const DateLayout = time.DateOnly

// UnmarshalJSON implements [json.Unmarshaler]: it decodes one key's
// object b, which encoding/json has found to be valid JSON, in one pass.
// It is stricter than encoding/json: a field is named exactly (not in
// another case), and a field or a day given twice is refused, where
// encoding/json takes the last ("key":"a","key":"b" imported into b).
func (kd *Key) UnmarshalJSON(b []byte) error {
	*kd = Key{}
	p := keyParser{b: b}
	return p.object(kd)
}

// keyParser reads one key's object of a dump: b, from offset i.
type keyParser struct {
	b []byte
	i int
}

// fail returns the error msg at the parser's offset.
func (p *keyParser) fail(format string, args ...any) error {
	return &valueError{at: int64(p.i), len: int64(len(p.b)), msg: fmt.Sprintf(format, args...)}
}

// object reads the key's object into kd.
func (p *keyParser) object(kd *Key) error {
	p.i = skipSpace(p.b, 0)
	if p.b[p.i] != '{' {
		return p.fail("a key's entry must be an object, not %.20s", p.b[p.i:])
	}
	p.i++
	var seen [len(keyFields)]bool
	for {
		p.i = skipSpace(p.b, p.i)
		switch p.b[p.i] {
		case '}':
			if !seen[0] {
				return p.fail("no key field: every entry names its key (\"\" is the empty name)")
			}
			return nil
		case ',':
			p.i = skipSpace(p.b, p.i+1)
		}
		name := p.str()
		f := slices.IndexFunc(keyFields[:], func(n string) bool { return string(name) == n })
		if f < 0 {
			return p.fail("unknown field %q", name)
		}
		if seen[f] {
			return p.fail("field %q given twice", name)
		}
		seen[f] = true
		p.i = skipSpace(p.b, skipSpace(p.b, p.i)+1) // past :
		var err error
		switch keyFields[f] {
		case "key":
			if bytes.HasPrefix(p.b[p.i:], []byte("null")) {
				return p.fail("key: null is not a string: every entry names its key (\"\" is the empty name)")
			}
			if p.b[p.i] != '"' {
				return p.fail("key: %.20s is not a string", p.b[p.i:])
			}
			if at := loneSurrogate(p.b[p.i:skipString(p.b, p.i)]); at >= 0 {
				p.i += at
				return p.fail("key: %.6s is half of a UTF-16 surrogate pair, which names no character: the key would not be the one the dump names", p.b[p.i:])
			}
			kd.Key = string(p.str())
		case "total":
			kd.Total, err = p.count("total")
		case "days":
			err = p.days(kd)
		case "locked":
			kd.Locked, err = p.bool("locked")
		}
		if err != nil {
			return err
		}
	}
}

// days reads the days' object, or null, into kd.Days.
func (p *keyParser) days(kd *Key) error {
	if p.null() {
		return nil
	}
	if p.b[p.i] != '{' {
		return p.fail("days: %.20s is not an object", p.b[p.i:])
	}
	p.i++
	kd.Days = map[string]uint64{}
	for {
		p.i = skipSpace(p.b, p.i)
		switch p.b[p.i] {
		case '}':
			p.i++
			return nil
		case ',':
			p.i = skipSpace(p.b, p.i+1)
		}
		date := string(p.str())
		if _, twice := kd.Days[date]; twice {
			return p.fail("key %q: day %s given twice", kd.Key, date)
		}
		p.i = skipSpace(p.b, skipSpace(p.b, p.i)+1) // past :
		n, err := p.count("day " + date)
		if err != nil {
			return err
		}
		kd.Days[date] = n
	}
}

// str reads a string, and returns its text.
func (p *keyParser) str() []byte {
	end := skipString(p.b, p.i)
	q := p.b[p.i:end]
	p.i = end
	if bytes.IndexByte(q, '\\') < 0 {
		return q[1 : len(q)-1]
	}
	var s string
	json.Unmarshal(q, &s) // valid: encoding/json has checked b
	return []byte(s)
}

// loneSurrogate returns the offset in the JSON string q of the first
// \u escape of a UTF-16 surrogate not in a pair, or -1 if there is none.
// encoding/json decodes one as U+FFFD, so that the key imported would
// not be the key the dump names.
func loneSurrogate(q []byte) int {
	for i := 0; i < len(q); i++ {
		if q[i] != '\\' {
			continue
		}
		if i+1 < len(q) && q[i+1] != 'u' {
			i++ // past the escaped byte, which may be a backslash
			continue
		}
		r, ok := hex4(q, i+2)
		switch {
		case !ok || r < 0xd800 || r >= 0xe000:
			i += 5
		case r < 0xdc00: // high: a low must follow
			if lo, ok := hex4(q, i+8); ok && i+7 < len(q) && q[i+6] == '\\' && q[i+7] == 'u' && lo >= 0xdc00 && lo < 0xe000 {
				i += 11
				continue
			}
			return i
		default: // a low with no high before it
			return i
		}
	}
	return -1
}

// hex4 returns the four hex digits at q[i:i+4] as a number, and whether
// there are four.
func hex4(q []byte, i int) (rune, bool) {
	if i+4 > len(q) {
		return 0, false
	}
	n, err := strconv.ParseUint(string(q[i:i+4]), 16, 32)
	return rune(n), err == nil
}

// null reads a null, and reports whether there was one.
func (p *keyParser) null() bool {
	if !bytes.HasPrefix(p.b[p.i:], []byte("null")) {
		return false
	}
	p.i += len("null")
	return true
}

// token returns the number or literal at the offset, and moves past it.
func (p *keyParser) token() []byte {
	start := p.i
	for ; p.i < len(p.b); p.i++ {
		switch p.b[p.i] {
		case ',', '}', ']', ' ', '\t', '\r', '\n':
			return p.b[start:p.i]
		}
	}
	return p.b[start:]
}

// count reads a count, a whole number of 64 bits, or null (0), of what.
func (p *keyParser) count(what string) (uint64, error) {
	if p.null() {
		return 0, nil
	}
	if c := p.b[p.i]; c != '-' && (c < '0' || c > '9') {
		return 0, p.fail("%s: %.20s is not a count", what, p.b[p.i:])
	}
	at := p.i
	t := p.token()
	n, err := strconv.ParseUint(string(t), 10, 64)
	if err != nil {
		p.i = at
		return 0, p.fail("%s: %s is not a count (a whole number from 0 to %d)", what, t, uint64(math.MaxUint64))
	}
	return n, nil
}

// bool reads true, false or null (false), of what.
func (p *keyParser) bool(what string) (bool, error) {
	switch t := p.token(); string(t) {
	case "true":
		return true, nil
	case "false", "null":
		return false, nil
	default:
		p.i -= len(t)
		return false, p.fail("%s: %.20s is not true or false", what, p.b[p.i:])
	}
}

// keyFields are the names of a [Key]'s fields in JSON.
var keyFields = [...]string{"key", "total", "days", "locked"}

// skipSpace returns the offset of the first byte at or after i in b that
// is not JSON white space.
func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// skipString returns the offset just past the JSON string that starts
// at b[i].
func skipString(b []byte, i int) int {
	for i++; i < len(b); i++ {
		switch b[i] {
		case '\\':
			i++
		case '"':
			return i + 1
		}
	}
	return i
}

// valueError refuses one key's object, len bytes long, at offset at in
// it: a field or a day given twice, a value of the wrong type.
type valueError struct {
	at, len int64
	msg     string
}

func (e *valueError) Error() string { return e.msg }

// MaxValueBytes bounds one JSON value of a dump (a key's object with
// all its days, or a run of white space), and so the memory an import
// needs: 4 MiB holds the days of more than five hundred years.
const MaxValueBytes = 4 << 20

// The dates a dump may hold.
var (
	firstDate = time.Date(1970, 1, 1, 0, 0, 0, 0, time.UTC)
	lastDate  = time.Date(9999, 12, 31, 0, 0, 0, 0, time.UTC)
)

// checkKey refuses a key's dump that the store could not hold as the
// service would have written it.
func checkKey(kd *Key) error {
	if err := checkKeyName(kd.Key); err != nil {
		return err
	}
	if kd.Total > store.MaxTotal {
		return fmt.Errorf("key %q: total %d is above the most a counter holds, %d", kd.Key, kd.Total, uint64(store.MaxTotal))
	}
	var sum uint64
	for date, n := range kd.Days {
		if n > store.MaxDay {
			return fmt.Errorf("key %q: day %s: count %d is above the most a day holds, %d", kd.Key, date, n, uint64(store.MaxDay))
		}
		if err := checkDate(date); err != nil {
			return fmt.Errorf("key %q: %w", kd.Key, err)
		}
		if sum+n < sum {
			return fmt.Errorf("key %q: the days' counts overflow", kd.Key)
		}
		sum += n
	}
	if sum > kd.Total {
		return fmt.Errorf("key %q: the days add up to %d, more than the total %d", kd.Key, sum, kd.Total)
	}
	return nil
}

// TooManyKeys is the error of an import that would take a store past
// its limit of distinct keys: it wraps [store.ErrTooManyKeys] and says
// both numbers.
func TooManyKeys(keys, limit int) error {
	return fmt.Errorf("the store would hold %d keys, more than its limit of %d (-max-keys): %w", keys, limit, store.ErrTooManyKeys)
}
