package dump

import (
	"bufio"
	"bytes"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"visitors/internal/store"
)

// The CSV format of counts carried over from another counter, which
// "visitors import -format csv" and POST /api/v1/import?format=csv
// read. Each row is one of
//
//	key,total             the key's total
//	key,date,count        the key's count of one UTC day, YYYY-MM-DD
//
// A key may have a total row, day rows, or both; without a total row,
// its total is the sum of its days; with one, its days may add up to no
// more than it. A first row that is exactly key,total or key,date,count
// is a header, and skipped. Fields are RFC 4180's (encoding/csv): a key
// holding a comma or a quote is quoted. Two harmless habits of
// spreadsheets are taken: a UTF-8 byte order mark at the very start,
// and CRLF line ends. Everything else a dump refuses is refused here
// too, naming the line: a key the service does not accept, a count that
// is not a whole number from 0 to its bound, a date that is not a real
// one, a key's total or one of its days given twice, and also a row of
// another number of fields, and a byte order mark anywhere else.

// bom is the UTF-8 byte order mark.
const bom = "\uFEFF"

// csvKey is one key of a CSV being read: its counts, and the lines that
// gave them.
type csvKey struct {
	Key
	hasTotal  bool
	totalLine int
	dayLines  map[string]int
	last      int // the last line that gave the key a count
}

// FromCSV reads counts in the CSV format above from r and writes them
// to w as a [Dump] with no /hi counter, for an import. The dump names
// each key on the line of the key's last row in the CSV, so that an
// import's refusal of a key (its line) names the CSV's line. A CSV
// refused is an error naming its line, and nothing is written. It holds
// the keys in memory.
func FromCSV(r io.Reader, w io.Writer) error {
	return FromCSVChecked(r, w, nil)
}

// FromCSVChecked is [FromCSV] with one more check of each key, check
// (nil: none): a key it refuses refuses the CSV, naming the key's line.
// The imports pass internal/compat's, which refuses a key in a closed
// service's namespace that none of its URLs counts into.
func FromCSVChecked(r io.Reader, w io.Writer, check func(key string) error) error {
	keys, err := readCSV(r, check)
	if err != nil {
		return err
	}
	return writeCSVDump(w, keys)
}

// readCSV reads and checks every row of r, and returns its keys in
// order of their last line.
func readCSV(r io.Reader, check func(string) error) ([]*csvKey, error) {
	br := bufio.NewReader(r)
	if b, err := br.Peek(len(bom)); err == nil && string(b) == bom {
		br.Discard(len(bom))
	}
	cr := csv.NewReader(br)
	cr.FieldsPerRecord = -1 // two or three, checked here with the line
	byKey := map[string]*csvKey{}
	first := true
	for {
		rec, err := cr.Read()
		if err == io.EOF {
			break
		}
		if err != nil {
			var pe *csv.ParseError
			if errors.As(err, &pe) {
				return nil, fmt.Errorf("line %d: %v", pe.Line, pe.Err)
			}
			return nil, err // the reader's: a body past its limit, a failed read
		}
		line, _ := cr.FieldPos(0)
		if first && (slices.Equal(rec, []string{"key", "total"}) || slices.Equal(rec, []string{"key", "date", "count"})) {
			first = false
			continue
		}
		first = false
		if err := addRow(byKey, rec, line, check); err != nil {
			return nil, fmt.Errorf("line %d: %w", line, err)
		}
	}
	if len(byKey) == 0 {
		return nil, errors.New("line 1: no counts: want rows of key,total or key,date,count")
	}
	keys := make([]*csvKey, 0, len(byKey))
	for _, k := range byKey {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b *csvKey) int { return a.last - b.last })
	for _, k := range keys {
		if err := k.complete(); err != nil {
			return nil, err
		}
	}
	return keys, nil
}

// addRow adds one row, rec, of line to byKey, its key checked by check
// if not nil.
func addRow(byKey map[string]*csvKey, rec []string, line int, check func(string) error) error {
	if len(rec) != 2 && len(rec) != 3 {
		return fmt.Errorf("%d fields: want key,total or key,date,count", len(rec))
	}
	for _, f := range rec {
		if strings.Contains(f, bom) {
			return errors.New("a byte order mark (U+FEFF) past the start of the file: two files joined?")
		}
	}
	key := rec[0]
	if err := checkKeyName(key); err != nil {
		return err
	}
	if check != nil {
		if err := check(key); err != nil {
			return fmt.Errorf("key %q: %w", key, err)
		}
	}
	k := byKey[key]
	if k == nil {
		k = &csvKey{Key: Key{Key: key}}
		byKey[key] = k
	}
	k.last = line
	if len(rec) == 2 {
		if k.hasTotal {
			return fmt.Errorf("key %q: total given twice (first on line %d)", key, k.totalLine)
		}
		n, err := parseCount(rec[1], "total", store.MaxTotal)
		if err != nil {
			return fmt.Errorf("key %q: %w", key, err)
		}
		k.Total, k.hasTotal, k.totalLine = n, true, line
		return nil
	}
	date := rec[1]
	if err := checkDate(date); err != nil {
		return fmt.Errorf("key %q: %w", key, err)
	}
	if at, twice := k.dayLines[date]; twice {
		return fmt.Errorf("key %q: day %s given twice (first on line %d)", key, date, at)
	}
	n, err := parseCount(rec[2], "day "+date, store.MaxDay)
	if err != nil {
		return fmt.Errorf("key %q: %w", key, err)
	}
	if k.Days == nil {
		k.Days, k.dayLines = map[string]uint64{}, map[string]int{}
	}
	k.Days[date], k.dayLines[date] = n, line
	return nil
}

// parseCount parses s, the count of what, a whole number from 0 to max
// in decimal digits.
func parseCount(s, what string, max uint64) (uint64, error) {
	n, err := strconv.ParseUint(s, 10, 64)
	if err != nil || n > max {
		return 0, fmt.Errorf("%s %q is not a count (a whole number from 0 to %d)", what, s, max)
	}
	return n, nil
}

// complete gives a key without a total row the sum of its days, and
// checks the key as a dump's, naming its last line.
func (k *csvKey) complete() error {
	if !k.hasTotal {
		var sum uint64
		for _, n := range k.Days {
			sum += n // each at most MaxDay, 2^39: no overflow in 2^24 days
		}
		if sum > store.MaxTotal {
			return fmt.Errorf("line %d: key %q: the days add up to %d, above the most a counter holds, %d", k.last, k.Key.Key, sum, uint64(store.MaxTotal))
		}
		k.Total = sum
	}
	if err := checkKey(&k.Key); err != nil {
		return fmt.Errorf("line %d: %w", k.last, err)
	}
	return nil
}

// writeCSVDump writes keys as a dump to w, each key's object ending on
// the line of its last row (keys are in that order).
func writeCSVDump(w io.Writer, keys []*csvKey) error {
	var b bytes.Buffer
	fmt.Fprintf(&b, `{"format":%q,"hits":0,"keys":[`, Format)
	line := 1
	for i, k := range keys {
		if i > 0 {
			b.WriteByte(',')
		}
		for ; line < k.last; line++ {
			b.WriteByte('\n')
		}
		obj, err := json.Marshal(&k.Key)
		if err != nil {
			return err
		}
		b.Write(obj)
	}
	b.WriteString("]}\n")
	_, err := w.Write(b.Bytes())
	return err
}

// checkKeyName refuses a key the service does not accept, as a dump's.
func checkKeyName(key string) error {
	if !store.ValidKey([]byte(key)) {
		return fmt.Errorf("key %q: not a key the service accepts (at most %d bytes of valid UTF-8)", key, store.MaxKeyBytes)
	}
	if store.KeyIsRoute(key) {
		return fmt.Errorf("key %q: not a key the service accepts: %s", key, store.MsgRoute)
	}
	return nil
}

// checkDate refuses a date that is not a real YYYY-MM-DD within the
// dates a dump may hold.
func checkDate(date string) error {
	t, err := time.Parse(DateLayout, date)
	if err != nil || t.Format(DateLayout) != date {
		return fmt.Errorf("day %q: want YYYY-MM-DD", date)
	}
	if t.Before(firstDate) || t.After(lastDate) {
		return fmt.Errorf("day %s: outside %s..%s", date, firstDate.Format(DateLayout), lastDate.Format(DateLayout))
	}
	return nil
}
