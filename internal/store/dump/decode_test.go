package dump

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"
	"testing/iotest"

	"visitors/internal/store"
)

// TestLineReader names the line of offsets across many 64-byte words,
// with the decoder's position moving on between reads, against a plain
// count of newlines.
func TestLineReader(t *testing.T) {
	var text strings.Builder
	for i := range 400 {
		text.WriteString(strings.Repeat("x", i%97))
		text.WriteByte('\n')
	}
	in := text.String()
	pos := int64(0)
	lr := &lineReader{r: iotest.OneByteReader(strings.NewReader(in)), pos: func() int64 { return pos }}
	buf := make([]byte, 37)
	for {
		n, err := lr.Read(buf)
		if n == 0 && err != nil {
			break
		}
		// Ask about every offset from the decoder's position to what was read.
		for off := pos; off < lr.read; off++ {
			if got, want := lr.line(off), strings.Count(in[:off], "\n")+1; got != want {
				t.Fatalf("line(%d) = %d, want %d", off, got, want)
			}
		}
		pos = max(0, lr.read-50) // the decoder lags behind what it read
	}
	if lr.read != int64(len(in)) {
		t.Fatalf("read %d bytes of %d", lr.read, len(in))
	}
	if len(lr.words) > 2 {
		t.Errorf("%d words held for a window of 50 bytes, want at most 2", len(lr.words))
	}
}

// TestLineReaderInAnyOrder: line names the right line whatever order
// the offsets it may be asked about come in, each offset asked after a
// later one as well as before (it starts from the last answer when it
// can), against a plain count of newlines.
func TestLineReaderInAnyOrder(t *testing.T) {
	var text strings.Builder
	for i := range 300 {
		text.WriteString(strings.Repeat("y", (i*7)%131))
		text.WriteByte('\n')
	}
	in := text.String()
	pos := int64(0)
	lr := &lineReader{r: strings.NewReader(in), pos: func() int64 { return pos }}
	buf := make([]byte, 301)
	rng := rand.New(rand.NewPCG(1, 2))
	for {
		n, err := lr.Read(buf)
		if n == 0 && err != nil {
			break
		}
		offs := make([]int64, 0, lr.read-pos+1)
		for off := pos; off <= lr.read; off++ {
			offs = append(offs, off)
		}
		rng.Shuffle(len(offs), func(i, j int) { offs[i], offs[j] = offs[j], offs[i] })
		for _, off := range offs {
			if got, want := lr.line(off), strings.Count(in[:off], "\n")+1; got != want {
				t.Fatalf("line(%d) = %d, want %d", off, got, want)
			}
		}
		pos = max(0, lr.read-200)
	}
	if lr.read != int64(len(in)) {
		t.Fatalf("read %d bytes of %d", lr.read, len(in))
	}
}

// head is a dump's head, up to its keys.
const head = `{"format":"visitors-export-1","hits":7,"keys":[`

// decodeAll decodes s with batch, and returns the keys of each call of
// write and what each key's span holds.
func decodeAll(s string, batch int) (hits uint64, calls [][]string, spans []string, err error) {
	hits, err = Decode(strings.NewReader(s), batch, func(keys []Key, sp []Span) error {
		var call []string
		for i, k := range keys {
			call = append(call, k.Key)
			spans = append(spans, strings.TrimLeft(s[sp[i].Start:sp[i].End], ", \t\r\n"))
		}
		calls = append(calls, call)
		return nil
	})
	return hits, calls, spans, err
}

// TestDecodeHandsKeysInBatches: Decode hands write every key of a dump,
// batch keys at a time ([Batch] for 0) and the rest at the end, each
// with the span its object lies in, and returns the dump's hits.
func TestDecodeHandsKeysInBatches(t *testing.T) {
	objs := []string{`{"key":"a","total":1}`, `{"key":"b","total":2,"days":{"2026-11-20":2}}`, `{"key":"c"}`, `{"key":"d","locked":true}`, `{"key":"e","total":5}`}
	s := head + "\n" + strings.Join(objs, ",\n") + "\n]}\n"
	for _, tt := range []struct {
		batch int
		want  [][]string
	}{
		{2, [][]string{{"a", "b"}, {"c", "d"}, {"e"}}},
		{5, [][]string{{"a", "b", "c", "d", "e"}, nil}},
		{0, [][]string{{"a", "b", "c", "d", "e"}}},
		{-1, [][]string{{"a", "b", "c", "d", "e"}}},
	} {
		hits, calls, spans, err := decodeAll(s, tt.batch)
		if err != nil || hits != 7 || !reflect.DeepEqual(calls, tt.want) || !reflect.DeepEqual(spans, objs) {
			t.Errorf("batch %d: hits %d, calls %q, spans %q, %v; want 7, %q, %q", tt.batch, hits, calls, spans, err, tt.want, objs)
		}
	}
}

// TestDecodeBatchesByDefault: a batch of 0 is Batch keys.
func TestDecodeBatchesByDefault(t *testing.T) {
	var sizes []int
	_, err := Decode(strings.NewReader(bigDump(Batch+1)), 0, func(keys []Key, _ []Span) error {
		sizes = append(sizes, len(keys))
		return nil
	})
	if err != nil || !reflect.DeepEqual(sizes, []int{Batch, 1}) {
		t.Errorf("Decode of %d keys, batch 0: batches %v, %v; want [%d 1]", Batch+1, sizes, err, Batch)
	}
}

// TestDecodeRefusesNamingTheLine: every dump Decode refuses is refused
// with the line of what is wrong and why.
func TestDecodeRefusesNamingTheLine(t *testing.T) {
	const f = `"format":"visitors-export-1"`
	for _, tt := range []struct{ in, want string }{
		{`[]`, `line 1: want "{", found [`},
		{`{"format":"x"}`, `line 1: format "x", want "visitors-export-1"`},
		{"{" + f + ",\n" + f + "}", `line 2: field "format" given twice`},
		{"{" + f + ",\n\"keys\":[],\n\"keys\":[]}", `line 3: field "keys" given twice`},
		{"{" + f + fmt.Sprintf(",\n\"hits\":%d}", uint64(store.MaxImportHits)+1), `line 2: hits 4611686022722355201 is above the most the /hi counter holds, 4611686022722355200`},
		{"{" + f + ",\n\"hits\":\"1\"}", `line 2: json: cannot unmarshal string into Go value of type uint64`},
		{"{" + f + ",\n\"hits\":\"1\"\n}", `line 2: json: cannot unmarshal string into Go value of type uint64`},
		{"{" + f + ",\n\"color\":1}", `line 2: unknown field color`},
		{"{" + f + "}\n\nx", `line 3: more after the end of the document`},
		{"{\"hits\":1,\n\"keys\":[]\n}", `line 3: no format field: not a visitors export`},
		{"{" + f + ",\n\n\"hits\":1,,}", `line 3: invalid character ',' looking for beginning of object key string`},
		{"{" + f + ",\n\"keys\":[\n", `line 2: the document ends too early`},
		{"{" + f + ",\n\"keys\":{}}", `line 2: want "[", found {`},
		{head + "\n{\"key\":\"a\"}\n}", `line 3: invalid character '}' after array element`},
		{head + "\n{\"key\":\"a\"},\n{\"key\":\"b\"},\n{\"key\":\"a\"}\n]}", `line 4: a key given twice (first on line 2)`},
		{head + "\n{\"key\":\"a\"},\n{\"key\":\"b\",\n\"total\":4,\n\"days\":{\"2026-11-20\":5}}\n]}", `line 5: key "b": the days add up to 5, more than the total 4`},
		{head + "\n{\"key\":\"a\"},\n{\"key\":\"b\",\n\"total\":-1}\n]}", `line 4: total: -1 is not a count (a whole number from 0 to 18446744073709551615)`},
		{head + "\n{\"key\":\"a\"},\n{\"key\":\"b\",\n\n\"key\":\"c\"}\n]}", `line 5: field "key" given twice`},
		{head + "\n{\"key\":\"a\"},\n{\"key\":\"b\",\"key\"\n:\"c\"}\n]}", `line 3: field "key" given twice`},
		{head + "\n{\"key\":\"a\"},\n{\"key\":\"b\",\"total\":[1]}\n]}", `line 3: total: [1]} is not a count`},
		{head + "\n{\"key\":\"a\"},\n\n{\"key\":\"b\xff\"}\n]}", `line 4: the dump is not valid UTF-8`},
		{head + "\n{\"key\":\"a\"},\n{\"total\":1,\n\"key\":null}\n]}", `line 4: key: null is not a string: every entry names its key ("" is the empty name)`},
		{head + "\n{\"key\":\"a\"},\n{\"total\":1}\n]}", `line 3: no key field: every entry names its key ("" is the empty name)`},
		{head + "\n{\"key\":\"a\"},\n{\"total\":1,\n\"key\":\"\\u0000\\ud800\"}\n]}", `line 4: key: \ud800 is half of a UTF-16 surrogate pair, which names no character: the key would not be the one the dump names`},
		{head + "\n{\"key\":\"a\"},\n{\"key\":\"b\xe2\x82\"}\n]}", `line 3: the dump is not valid UTF-8`},
		{head + "\n{\"key\":\"a\xe2\x82", `line 2: the dump is not valid UTF-8`},
	} {
		_, _, _, err := decodeAll(tt.in, 0)
		if err == nil || err.Error() != tt.want {
			t.Errorf("%q: %v, want %q", tt.in, err, tt.want)
		}
	}
}

// TestDecodeNamesTheLineOfAKeyWriteRefused: a write failing with a
// KeyError is named by that key's line, in a full batch or the last;
// any other failure by the line Decode had read to.
func TestDecodeNamesTheLineOfAKeyWriteRefused(t *testing.T) {
	s := head + "\n{\"key\":\"a\"},\n{\"key\":\"b\"},\n{\"key\":\"c\"}\n]}\n"
	boom := errors.New("boom")
	for _, tt := range []struct {
		name  string
		batch int
		fail  func(keys []Key) error
		want  string
	}{
		{"the second key of a full batch", 2, func(keys []Key) error {
			if keys[0].Key == "a" {
				return &KeyError{I: 1, Err: boom}
			}
			return nil
		}, "line 3: boom"},
		{"the last batch's key", 2, func(keys []Key) error {
			if keys[0].Key == "c" {
				return &KeyError{I: 0, Err: boom}
			}
			return nil
		}, "line 4: boom"},
		{"a full batch, no key named", 2, func(keys []Key) error {
			if len(keys) == 2 {
				return boom
			}
			return nil
		}, "line 3: boom"},
		{"a key out of the batch", 2, func(keys []Key) error {
			if len(keys) == 2 {
				return &KeyError{I: 2, Err: boom}
			}
			return nil
		}, "line 3: boom"},
		{"a key before the batch", 2, func(keys []Key) error {
			if len(keys) == 2 {
				return &KeyError{I: -1, Err: boom}
			}
			return nil
		}, "line 3: boom"},
		{"the last batch, no key named", 100, func(keys []Key) error { return boom }, "line 5: boom"},
	} {
		_, err := Decode(strings.NewReader(s), tt.batch, func(keys []Key, _ []Span) error { return tt.fail(keys) })
		if err == nil || err.Error() != tt.want {
			t.Errorf("%s: %v, want %q", tt.name, err, tt.want)
		}
	}
	// The commas leading the lines: a full batch's failure is on the
	// line its last key ends, not the next.
	commas := head + "\n{\"key\":\"a\"}\n,{\"key\":\"b\"}\n,{\"key\":\"c\"}\n]}\n"
	if _, err := Decode(strings.NewReader(commas), 2, func(keys []Key, _ []Span) error { return boom }); err == nil || err.Error() != "line 3: boom" {
		t.Errorf("a full batch, no key named, commas leading: %v, want line 3", err)
	}
}

// TestDecodeReadsRunesCutBetweenReads: a dump read a byte at a time,
// its keys' runes of 2, 3 and 4 bytes cut between reads, decodes whole.
func TestDecodeReadsRunesCutBetweenReads(t *testing.T) {
	keys := []string{"été", "€uro", "😀", "a😀é€"}
	var b bytes.Buffer
	b.WriteString(head)
	for i, k := range keys {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, "\n{\"key\":%q,\"total\":1}", k)
	}
	b.WriteString("\n]}\n")
	var got []string
	hits, err := Decode(iotest.OneByteReader(&b), 0, func(ks []Key, _ []Span) error {
		for _, k := range ks {
			got = append(got, k.Key)
		}
		return nil
	})
	if err != nil || hits != 7 || !reflect.DeepEqual(got, keys) {
		t.Errorf("Decode a byte at a time: %d, %q, %v; want 7, %q", hits, got, err, keys)
	}
}

// TestDecodeBoundsAValue: a key's object of MaxValueBytes is taken; one
// byte more is refused as too large, named by the line the object
// begins on, whatever blank lines come before it or it holds itself.
func TestDecodeBoundsAValue(t *testing.T) {
	const plain = `{"key":"a","total":1}`
	for _, tt := range []struct {
		name         string
		before, fill string // before the object, and its blanks
		line         int    // the object begins on
	}{
		{"after a key", "\n{\"key\":\"b\"},\n", " ", 3},
		{"the first key", "\n", " ", 2},
		{"blank lines and a comma on its own", "\n{\"key\":\"b\"}\n\n,\n\n", " ", 6},
		{"on the line of the key before", "\n{\"key\":\"b\"}, ", " ", 2},
		{"holding newlines", "\n{\"key\":\"b\"},\n", "\n", 3},
	} {
		for _, size := range []int{MaxValueBytes, MaxValueBytes + 1} {
			obj := `{"key":"a",` + strings.Repeat(tt.fill, size-len(plain)) + `"total":1}`
			s := head + tt.before + obj + "\n]}\n"
			_, calls, _, err := decodeAll(s, 0)
			want := fmt.Sprintf("line %d: a value of more than 4 MiB", tt.line)
			switch {
			case size == MaxValueBytes && (err != nil || len(calls) == 0 || !slices.Contains(calls[len(calls)-1], "a")):
				t.Errorf("%s: an object of %d bytes: %q, %v; want it taken", tt.name, size, calls, err)
			case size > MaxValueBytes && (err == nil || err.Error() != want):
				t.Errorf("%s: an object of %d bytes: %v; want %q", tt.name, size, err, want)
			}
		}
	}
}

// TestDecodeBoundsBlanks: blanks between two values are bounded apart
// from the value (MaxValueBytes of them are taken, one more refused), so
// that neither they nor the value after them can make Decode hold more.
func TestDecodeBoundsBlanks(t *testing.T) {
	for _, n := range []int{MaxValueBytes, MaxValueBytes + 1} {
		s := head + "\n{\"key\":\"b\"}," + strings.Repeat(" ", n) + `{"key":"a"}` + "\n]}\n"
		_, calls, _, err := decodeAll(s, 0)
		switch {
		case n == MaxValueBytes && (err != nil || len(calls) == 0 || !slices.Contains(calls[len(calls)-1], "a")):
			t.Errorf("%d blanks: %q, %v; want taken", n, calls, err)
		case n > MaxValueBytes && (err == nil || err.Error() != "line 2: more than 4 MiB of blanks between two values"):
			t.Errorf("%d blanks: %v; want refused on line 2", n, err)
		}
	}
}

// TestDecodeNamesTheFirstKeyGivenAgain: with many keys given twice,
// Decode names the first line that gives a key again and the line that
// gave it first, whatever order its hashes sort the keys in.
func TestDecodeNamesTheFirstKeyGivenAgain(t *testing.T) {
	var b strings.Builder
	b.WriteString(head)
	for i := range 60 { // k00 … k29 on lines 2-31, then k29 … k00 on 32-61
		k := i
		if i >= 30 {
			k = 59 - i
		}
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, "\n{\"key\":\"k%02d\"}", k)
	}
	b.WriteString("\n]}\n")
	for range 5 { // each Decode hashes with seeds of its own
		if _, _, _, err := decodeAll(b.String(), 0); err == nil || err.Error() != "line 32: a key given twice (first on line 31)" {
			t.Fatalf("%v, want line 32, first on line 31", err)
		}
	}
}

// TestDecodeTakesHitsUpToTheBound: a dump's hits of MaxImportHits, the
// most the /hi counter holds, is taken (one more is refused:
// TestDecodeRefusesNamingTheLine).
func TestDecodeTakesHitsUpToTheBound(t *testing.T) {
	s := fmt.Sprintf(`{"format":"visitors-export-1","hits":%d,"keys":[]}`, uint64(store.MaxImportHits))
	if hits, _, _, err := decodeAll(s, 0); err != nil || hits != store.MaxImportHits {
		t.Errorf("hits of MaxImportHits: %d, %v; want it taken", hits, err)
	}
}
