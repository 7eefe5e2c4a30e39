package boltstore

import (
	"bufio"
	"bytes"
	"cmp"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/maphash"
	"io"
	"math"
	"math/bits"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"time"
	"unicode/utf8"

	bolt "go.etcd.io/bbolt"

	"visitors/internal/store"
)

// ExportFormat names the JSON format of [Export] and [Import].
const ExportFormat = "visitors-export-1"

// Dump is the JSON document [Export] writes and [Import] reads.
type Dump struct {
	Format string    `json:"format"`
	Hits   uint64    `json:"hits"`
	Keys   []KeyDump `json:"keys"`
}

// KeyDump is one key's counts in a [Dump]; Days maps a UTC date,
// 2006-01-02, to that day's count. Locked is the owner's lock (an import
// that adds keeps a key locked if either side has it locked).
type KeyDump struct {
	Key    string            `json:"key"`
	Total  uint64            `json:"total"`
	Days   map[string]uint64 `json:"days,omitempty"`
	Locked bool              `json:"locked,omitempty"`
}

const dateLayout = "2006-01-02"

// UnmarshalJSON implements [json.Unmarshaler]: it decodes one key's
// object b, which encoding/json has found to be valid JSON, in one pass.
// It is stricter than encoding/json: a field is named exactly (not in
// another case), and a field or a day given twice is refused, where
// encoding/json takes the last ("key":"a","key":"b" imported into b).
func (kd *KeyDump) UnmarshalJSON(b []byte) error {
	*kd = KeyDump{}
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
func (p *keyParser) object(kd *KeyDump) error {
	p.i = skipSpace(p.b, 0)
	if p.b[p.i] != '{' {
		return p.fail("a key's entry must be an object, not %.20s", p.b[p.i:])
	}
	p.i++
	var seen [len(keyDumpFields)]bool
	for {
		p.i = skipSpace(p.b, p.i)
		switch p.b[p.i] {
		case '}':
			return nil
		case ',':
			p.i = skipSpace(p.b, p.i+1)
		}
		name := p.str()
		f := slices.IndexFunc(keyDumpFields[:], func(n string) bool { return string(name) == n })
		if f < 0 {
			return p.fail("unknown field %q", name)
		}
		if seen[f] {
			return p.fail("field %q given twice", name)
		}
		seen[f] = true
		p.i = skipSpace(p.b, skipSpace(p.b, p.i)+1) // past :
		var err error
		switch keyDumpFields[f] {
		case "key":
			if p.null() {
				continue
			}
			if p.b[p.i] != '"' {
				return p.fail("key: %.20s is not a string", p.b[p.i:])
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
func (p *keyParser) days(kd *KeyDump) error {
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

// keyDumpFields are the names of a [KeyDump]'s fields in JSON.
var keyDumpFields = [...]string{"key", "total", "days", "locked"}

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

// The most a counter may hold after an import: a total leaves room for
// 2^62 more visits, a day's count for 2^39 more (memory keeps a day's
// count in 40 bits).
const (
	maxImportTotal = 1 << 62
	maxImportDay   = 1 << 39
)

// maxValueBytes bounds one JSON value of a dump (a key's object with
// all its days, or a run of white space), and so the memory an import
// needs: 4 MiB holds the days of more than five hundred years.
const maxValueBytes = 4 << 20

// The dates a dump may hold.
var (
	firstDate = time.Date(1970, 1, 1, 0, 0, 0, 0, time.UTC)
	lastDate  = time.Date(9999, 12, 31, 0, 0, 0, 0, time.UTC)
)

// Export writes every counter of the store in dir, totals, daily counts
// and locks, as one JSON [Dump] to w, one key a line, streaming. The store
// must not be open in another process: Export takes its lock. A record
// whose checksum fails stops the export with an error naming it.
func Export(dir string, w io.Writer) error {
	path := filepath.Join(dir, FileName)
	if _, err := os.Stat(path); err != nil {
		return fmt.Errorf("export: %w", err)
	}
	if _, err := verifyFile(path); err != nil {
		return err
	}
	db, err := boltOpen(path, &bolt.Options{Timeout: 200 * time.Millisecond, ReadOnly: true})
	if err != nil {
		return err
	}
	defer db.Close()
	// Visits a crash left in the log are exported too, from a copy:
	// export writes nothing in dir.
	switch n, err := logPending(db, dir); {
	case err != nil:
		return fmt.Errorf("export %s: %w", path, err)
	case n > 0:
		cp, remove, err := settledCopy(db, dir)
		if err != nil {
			return fmt.Errorf("export: %w", err)
		}
		defer remove()
		db = cp
	}
	bw := bufio.NewWriter(w)
	err = db.View(func(tx *bolt.Tx) error {
		meta := tx.Bucket(bucketMeta)
		if meta == nil || string(meta.Get(keyFormat)) != formatValue {
			return errors.New("not a visitors data file of this version (start the service once to migrate an older one)")
		}
		hits, err := readRecord(tagMeta, keyHits, meta.Get(keyHits))
		if err != nil {
			return fmt.Errorf("the /hi counter: %w", err)
		}
		return exportTx(tx, hits, bw)
	})
	if err != nil {
		return fmt.Errorf("export %s: %w", path, err)
	}
	return bw.Flush()
}

// exportTx writes the dump of the store in tx, with hits as its /hi
// counter, to bw: one key a line, in the file's order.
func exportTx(tx *bolt.Tx, hits uint64, bw *bufio.Writer) error {
	fmt.Fprintf(bw, "{\"format\":%q,\"hits\":%d,\"keys\":[", ExportFormat, hits)
	days := tx.Bucket(bucketDays).Cursor()
	locks := tx.Bucket(bucketLocks) // nil in a file from before locks
	first := true
	err := tx.Bucket(bucketTotals).ForEach(func(k, v []byte) error {
		key, err := splitTotalKey(k)
		if err != nil {
			return fmt.Errorf("a total's key %q: %w", k, err)
		}
		total, err := readRecord(tagTotals, k, v)
		if err != nil {
			return fmt.Errorf("the total of key %q: %w", key, err)
		}
		kd := KeyDump{Key: string(key), Total: total, Days: map[string]uint64{}}
		if locks != nil {
			if lv := locks.Get(k); lv != nil {
				if _, err := readRecord(tagLocks, k, lv); err != nil {
					return fmt.Errorf("the lock of key %q: %w", key, err)
				}
				kd.Locked = true
			}
		}
		for dk, dv := days.Seek(k); dk != nil && len(dk) == len(k)+4 && string(dk[:len(k)]) == string(k); dk, dv = days.Next() {
			_, d, err := splitDayKey(dk)
			if err != nil {
				return fmt.Errorf("a day of key %q: %w", key, err)
			}
			n, err := readRecord(tagDays, dk, dv)
			if err != nil {
				return fmt.Errorf("the count of key %q on %s: %w", key, d.Time().Format(dateLayout), err)
			}
			kd.Days[d.Time().Format(dateLayout)] = n
		}
		b, err := json.Marshal(kd)
		if err != nil {
			return err
		}
		if !first {
			bw.WriteByte(',')
		}
		first = false
		bw.WriteString("\n")
		_, err = bw.Write(b)
		return err
	})
	if err != nil {
		return err
	}
	_, err = bw.WriteString("\n]}\n")
	return err
}

// importBatch is how many keys one transaction of an import writes. A
// test lowers it.
var importBatch = 10_000

// Import reads a [Dump] from r into the store in dir, creating it if
// needed. With replace, the dump replaces every count and lock (the
// owner's tokens are kept); otherwise its counts are added to what the
// store holds, and its locks join the store's. Either way the /hi counter
// becomes the larger of the two, so no number is handed out twice.
//
// It is strict and all or nothing: a dump with a date outside
// 1970-01-01..9999-12-31, a count that would overflow, days adding up to
// more than the key's total, a key the service would not accept, a field
// it does not know, or anything after the document is refused with its
// line and the reason, and the store is left as it was. It streams: the
// dump is read one key at a time into a copy of the store, which replaces
// the store (a rename) only once the whole dump has been read. The store
// must not be open in another process.
func Import(dir string, r io.Reader, replace bool) error {
	return ImportLimited(dir, r, replace, 0)
}

// ImportLimited is [Import] into a store that may hold at most maxKeys
// distinct keys (<= 0: no limit): a dump that would take it past them is
// refused whole, with an error wrapping [store.ErrTooManyKeys].
func ImportLimited(dir string, r io.Reader, replace bool, maxKeys int) error {
	if err := os.MkdirAll(dir, DirMode); err != nil {
		return fmt.Errorf("import: create data directory %s: %w", dir, err)
	}
	path := filepath.Join(dir, FileName)
	// The store, if there is one, is checked and opened read-only: its
	// shared lock keeps a service from starting on it meanwhile, and
	// nothing writes to it (a format 1 store is migrated in the copy).
	var live *bolt.DB
	format := ""
	switch _, err := os.Stat(path); {
	case err == nil:
		if format, err = verifyFile(path); err != nil {
			return err
		}
		// Visits a crash left in the log join the store first. (A store
		// made from scratch below gets a log id of its own, so the old
		// log's records can never replay onto it.)
		if err := settleLog(dir, path); err != nil {
			return fmt.Errorf("import: %w", err)
		}
		if live, err = boltOpen(path, &bolt.Options{Timeout: 200 * time.Millisecond, ReadOnly: true}); err != nil {
			return err
		}
		defer live.Close()
	case !errors.Is(err, os.ErrNotExist):
		return fmt.Errorf("import: %w", err)
	}
	tmpPath := path + ".import"
	if err := os.Remove(tmpPath); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("import: remove the leftover %s: %w", tmpPath, err)
	}
	var oldHits uint64
	var tokens []kv // replace keeps the owner's tokens: they are not counts
	held := 0       // the keys the store holds besides the dump's new ones
	if live != nil {
		err := live.View(func(tx *bolt.Tx) error {
			var err error
			oldHits, err = readHits(tx, format)
			if err != nil {
				return err
			}
			if !replace {
				held = tx.Bucket(bucketTotals).Stats().KeyN
			}
			if replace {
				tokens, err = readTokens(tx)
				return err
			}
			return tx.CopyFile(tmpPath, FileMode)
		})
		if err != nil {
			os.Remove(tmpPath)
			return fmt.Errorf("import: read %s: %w", path, err)
		}
	}
	tmp, err := bolt.Open(tmpPath, FileMode, &bolt.Options{NoSync: true})
	if err != nil {
		os.Remove(tmpPath)
		return fmt.Errorf("import: open %s: %w", tmpPath, err)
	}
	placed := false
	defer func() {
		if !placed {
			tmp.Close()
			os.Remove(tmpPath)
		}
	}()
	switch {
	case live == nil || replace:
		err = tmp.Update(func(tx *bolt.Tx) error {
			if err := createBuckets(tx); err != nil {
				return err
			}
			b := tx.Bucket(bucketTokens)
			for _, t := range tokens {
				if err := b.Put(t.k, t.v); err != nil {
					return err
				}
			}
			return nil
		})
	case format == formatValueV1:
		err = tmp.Update(migrateV1)
	}
	if err != nil {
		return fmt.Errorf("import: %s: %w", tmpPath, err)
	}
	hits, err := DecodeDump(r, func(keys []KeyDump) error {
		added, err := writeKeys(tmp, keys)
		held += added
		return err
	})
	if err == nil && maxKeys > 0 && held > maxKeys {
		err = TooManyKeys(held, maxKeys)
	}
	if err != nil {
		return fmt.Errorf("import: %w; the store was not changed", err)
	}
	err = tmp.Update(func(tx *bolt.Tx) error {
		return tx.Bucket(bucketMeta).Put(keyHits, record(tagMeta, keyHits, max(oldHits, hits)))
	})
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("import: write %s: %w; the store was not changed", tmpPath, err)
	}
	if live != nil {
		err = os.Rename(tmpPath, path)
	} else if err = os.Link(tmpPath, path); err == nil { // fails if a store appeared meanwhile
		os.Remove(tmpPath)
	}
	if err != nil {
		return fmt.Errorf("import: put the new store in place: %w; the store was not changed", err)
	}
	placed = true
	if err := syncDir(dir); err != nil {
		return fmt.Errorf("import: %w", err)
	}
	return nil
}

// kv is one bbolt record, copied.
type kv struct{ k, v []byte }

// readTokens copies the token records of the store in tx, checking them.
func readTokens(tx *bolt.Tx) ([]kv, error) {
	b := tx.Bucket(bucketTokens)
	if b == nil {
		return nil, nil
	}
	var out []kv
	err := b.ForEach(func(k, v []byte) error {
		if _, err := decodeToken(k, v); err != nil {
			return fmt.Errorf("the token %q: %w", k, err)
		}
		out = append(out, kv{bytes.Clone(k), bytes.Clone(v)})
		return nil
	})
	return out, err
}

// readHits reads the /hi counter of a store of the given format.
func readHits(tx *bolt.Tx, format string) (uint64, error) {
	v := tx.Bucket(bucketMeta).Get(keyHits)
	if format == formatValueV1 {
		if len(v) != 8 {
			return 0, errors.New("the /hi counter is malformed")
		}
		return binary.BigEndian.Uint64(v), nil
	}
	return readRecord(tagMeta, keyHits, v)
}

// syncDir makes a rename in dir durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("sync %s: %w", dir, err)
	}
	return nil
}

// DecodeDump reads a [Dump] from r key by key, checks each key as
// [Import] does, hands them to write importBatch keys at a time, and
// returns the dump's /hi counter. Errors carry the line. Other stores'
// imports use it, so that every store refuses the same dumps.
func DecodeDump(r io.Reader, write func([]KeyDump) error) (hits uint64, err error) {
	return decodeDump(r, func(keys []KeyDump, _ []span) error { return write(keys) })
}

// span is where one key's JSON object lies in a dump: from start, which
// may be preceded by the comma and white space before it, to end.
type span struct{ start, end int64 }

// decodeDump is DecodeDump, handing write each key's span in r too.
func decodeDump(r io.Reader, write func([]KeyDump, []span) error) (hits uint64, err error) {
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
		case errors.Is(err, errValueTooLarge):
			return at(dec.InputOffset(), "%v", err)
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
	batch := make([]KeyDump, 0, importBatch)
	spans := make([]span, 0, importBatch)
	lines := make([]int, 0, importBatch) // the line each batched key ends on
	// refused names the line of the key a write refused; nil if err
	// names no key.
	refused := func(err error) error {
		if ke := (*keyError)(nil); errors.As(err, &ke) {
			return fmt.Errorf("line %d: %v", lines[ke.i], err)
		}
		return nil
	}
	seen := map[string]bool{}
	keys := newKeySet()
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
			if format != ExportFormat {
				return 0, at(dec.InputOffset(), "format %q, want %q", format, ExportFormat)
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
				var kd KeyDump
				start := dec.InputOffset()
				if err := dec.Decode(&kd); err != nil {
					return 0, syntax(err)
				}
				if err := checkKeyDump(&kd); err != nil {
					return 0, at(dec.InputOffset()-1, "%v", err)
				}
				line := lr.line(dec.InputOffset() - 1)
				keys.add(kd.Key, line)
				batch = append(batch, kd)
				spans = append(spans, span{start, dec.InputOffset()})
				lines = append(lines, line)
				if len(batch) == importBatch {
					if err := write(batch, spans); err != nil {
						if kerr := refused(err); kerr != nil {
							return 0, kerr
						}
						return 0, at(dec.InputOffset()-1, "%v", err)
					}
					batch, spans, lines = batch[:0], spans[:0], lines[:0]
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
	if line, first, twice := keys.twice(); twice {
		return 0, fmt.Errorf("line %d: a key given twice (first on line %d)", line, first)
	}
	if err := write(batch, spans); err != nil {
		if kerr := refused(err); kerr != nil {
			return 0, kerr
		}
		return 0, at(dec.InputOffset(), "%v", err)
	}
	return hits, nil
}

// checkKeyDump refuses a key's dump that the store could not hold as the
// service would have written it.
func checkKeyDump(kd *KeyDump) error {
	if !store.ValidKey([]byte(kd.Key)) {
		return fmt.Errorf("key %q: not a key the service accepts (at most %d bytes of valid UTF-8)", kd.Key, store.MaxKeyBytes)
	}
	if store.KeyIsRoute(kd.Key) {
		return fmt.Errorf("key %q: not a key the service accepts: %s", kd.Key, store.MsgRoute)
	}
	if kd.Total > maxImportTotal {
		return fmt.Errorf("key %q: total %d is above the most a counter holds, %d", kd.Key, kd.Total, uint64(maxImportTotal))
	}
	var sum uint64
	for date, n := range kd.Days {
		if n > maxImportDay {
			return fmt.Errorf("key %q: day %s: count %d is above the most a day holds, %d", kd.Key, date, n, uint64(maxImportDay))
		}
		t, err := time.Parse(dateLayout, date)
		if err != nil || t.Format(dateLayout) != date {
			return fmt.Errorf("key %q: day %q: want YYYY-MM-DD", kd.Key, date)
		}
		if t.Before(firstDate) || t.After(lastDate) {
			return fmt.Errorf("key %q: day %s: outside %s..%s", kd.Key, date, firstDate.Format(dateLayout), lastDate.Format(dateLayout))
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

// writeKeys adds the keys' counts to what db holds, in one transaction,
// and returns how many of them it did not hold.
func writeKeys(db *bolt.DB, keys []KeyDump) (added int, err error) {
	err = db.Update(func(tx *bolt.Tx) error {
		added, err = addKeys(tx, keys)
		return err
	})
	return added, err
}

// TooManyKeys is the error of an import that would take a store past
// its limit of distinct keys: it wraps [store.ErrTooManyKeys] and says
// both numbers.
func TooManyKeys(keys, limit int) error {
	return fmt.Errorf("the store would hold %d keys, more than its limit of %d (-max-keys): %w", keys, limit, store.ErrTooManyKeys)
}

// addKeys adds the keys' counts to what tx holds, and locks the keys
// the dump locks. It returns how many of the keys tx did not hold.
func addKeys(tx *bolt.Tx, keys []KeyDump) (added int, err error) {
	totals, days := tx.Bucket(bucketTotals), tx.Bucket(bucketDays)
	locks, err := tx.CreateBucketIfNotExists(bucketLocks) // a copy of a file from before locks lacks it
	if err != nil {
		return 0, err
	}
	for i, kd := range keys {
		key := []byte(kd.Key)
		tk := keyPrefix(key)
		if totals.Get(tk) == nil {
			added++
		}
		if err := addRecord(totals, tagTotals, tk, kd.Total, maxImportTotal); err != nil {
			return added, &keyError{i, fmt.Errorf("key %q: total: %w", kd.Key, err)}
		}
		dates := make([]string, 0, len(kd.Days))
		for d := range kd.Days {
			dates = append(dates, d)
		}
		slices.Sort(dates)
		for _, date := range dates {
			t, _ := time.Parse(dateLayout, date) // checked by checkKeyDump
			if err := addRecord(days, tagDays, dayKey(key, store.DayOf(t)), kd.Days[date], maxImportDay); err != nil {
				return added, &keyError{i, fmt.Errorf("key %q: day %s: %w", kd.Key, date, err)}
			}
		}
		if kd.Locked {
			if err := locks.Put(tk, record(tagLocks, tk, 1)); err != nil {
				return added, &keyError{i, fmt.Errorf("key %q: lock: %w", kd.Key, err)}
			}
		}
	}
	return added, nil
}

// addRecord adds n to the record under k, up to most.
func addRecord(b *bolt.Bucket, tag byte, k []byte, n, most uint64) error {
	old, err := readRecord(tag, k, b.Get(k))
	if err != nil {
		return err
	}
	if old > most || n > most-old {
		return &overflowError{old, n, most}
	}
	if old+n == 0 && tag == tagDays {
		return nil
	}
	return b.Put(k, record(tag, k, old+n))
}

// overflowError refuses a count that an import would raise above the
// most it may hold.
type overflowError struct{ old, n, most uint64 }

func (e *overflowError) Error() string {
	return fmt.Sprintf("%d + %d is above the most it may hold, %d", e.old, e.n, e.most)
}

// keyError is addKeys' failure at keys[i], so that an import names
// that key's line.
type keyError struct {
	i   int
	err error
}

func (e *keyError) Error() string { return e.err.Error() }
func (e *keyError) Unwrap() error { return e.err }

// lineReader counts the lines of what it reads, so that an offset in it
// can be named by its line. It keeps one bit per byte read that the
// decoder has not passed yet (at most maxValueBytes, which Read refuses
// to exceed), so its memory is bounded whatever the dump.
type lineReader struct {
	r     io.Reader
	pos   func() int64 // where the decoder is: nothing before it is asked about
	read  int64        // bytes read so far
	base  int64        // the offset bit 0 of words stands for; a multiple of 64
	words []uint64     // bit i: byte base+i is a newline
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

// errValueTooLarge refuses a JSON value that would hold too much memory.
var errValueTooLarge = fmt.Errorf("a value of more than %d MiB", maxValueBytes>>20)

func (l *lineReader) Read(p []byte) (int, error) {
	if l.pos != nil {
		at := l.pos()
		l.forget(at)
		room := maxValueBytes + 1 - (l.read - at)
		if room <= 0 {
			return 0, errValueTooLarge
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
		}
		if c == '\n' {
			l.words[off/64] |= 1 << (off % 64)
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
	l.base += int64(k) * 64
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
