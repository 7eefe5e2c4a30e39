package dump

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"visitors/internal/store"
)

// plainKey is a Key decoded by encoding/json alone.
type plainKey struct {
	Key    string            `json:"key"`
	Total  uint64            `json:"total"`
	Days   map[string]uint64 `json:"days,omitempty"`
	Locked bool              `json:"locked,omitempty"`
}

// FuzzKeyDumpAgreesWithEncodingJSON: Key's own decoder never takes
// what encoding/json (unknown fields refused) refuses, and what it takes
// it decodes as encoding/json does: it only refuses more (a field in
// another case, a field or a day given twice).
func FuzzKeyDumpAgreesWithEncodingJSON(f *testing.F) {
	for _, s := range []string{
		`{"key":"a","total":3,"days":{"2026-11-20":1,"2026-11-21":2},"locked":true}`,
		"{ \"key\" : \"\" ,\n\"total\" :\t0 , \"days\" : { } , \"locked\" : false }",
		`{"key":"\u00e9t\u00e9 \"q\" \\","total":18446744073709551615,"days":null,"locked":null}`,
		`{"key":null,"total":null,"days":{"x":null}}`,
		`{"total":1e2}`, `{"total":-1}`, `{"total":1.5}`, `{"total":"1"}`, `{"total":18446744073709551616}`,
		`{"key":1}`, `{"days":[]}`, `{"days":{"a":"1"}}`, `{"locked":1}`, `{"locked":"true"}`,
		`{"key":"a","key":"b"}`, `{"Key":"a"}`, `{"k\u0065y":"a"}`, `{"days":{"d":1,"d":2}}`, `{"color":{"a":[1]}}`,
		`null`, `[]`, `"x"`, `1`, `{}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if !json.Valid(b) {
			return
		}
		var want plainKey
		dec := json.NewDecoder(bytes.NewReader(b))
		dec.DisallowUnknownFields()
		wantErr := dec.Decode(&want)
		var got Key
		gotErr := json.Unmarshal(b, &got)
		switch {
		case gotErr == nil && wantErr != nil:
			t.Fatalf("%q: Key took it as %+v; encoding/json refused it: %v", b, got, wantErr)
		case gotErr == nil && !reflect.DeepEqual(plainKey(got), want) && !(len(got.Days) == 0 && len(want.Days) == 0 && got.Key == want.Key && got.Total == want.Total && got.Locked == want.Locked):
			t.Fatalf("%q: Key = %+v, encoding/json = %+v", b, got, want)
		}
	})
}

// TestKeyDecodes: a key's object, with white space anywhere JSON allows
// it, escapes, nulls and counts from 0 to 2^64-1, decodes to the key it
// holds (the fuzz target only checks that Key refuses at least what
// encoding/json refuses).
func TestKeyDecodes(t *testing.T) {
	for _, tt := range []struct {
		in   string
		want Key
	}{
		{`{"key":"a","total":3,"days":{"2026-11-20":1,"2026-11-21":2},"locked":true}`,
			Key{Key: "a", Total: 3, Days: map[string]uint64{"2026-11-20": 1, "2026-11-21": 2}, Locked: true}},
		{" { \"key\" : \"b\" ,\n\t\"total\" :\r 9 , \"days\" : { \"d\" : 0 ,\n \"e\" : 10 } , \"locked\" : false } ",
			Key{Key: "b", Total: 9, Days: map[string]uint64{"d": 0, "e": 10}}},
		{`{"locked":true,"days":{},"total":18446744073709551615,"key":"\u00e9t\u00e9 \"q\" \\"}`,
			Key{Key: `été "q" \`, Total: 1<<64 - 1, Days: map[string]uint64{}, Locked: true}},
		{`{"key":"","total":null,"days":{"x":null},"locked":null}`, Key{Days: map[string]uint64{"x": 0}}},
		{`{"days":null,"key":""}`, Key{}},
		{`{"total":90,"key":"\ud83c\udf89 \u0000"}`, Key{Key: "🎉 \x00", Total: 90}},
		{`{"key":"\\ud800"}`, Key{Key: `\ud800`}}, // an escaped backslash, then text
		{`{"key":""}`, Key{}},
	} {
		var got Key
		if err := json.Unmarshal([]byte(tt.in), &got); err != nil || !reflect.DeepEqual(got, tt.want) {
			t.Errorf("%q: %+v, %v; want %+v", tt.in, got, err, tt.want)
		}
	}
}

// TestKeyRefusesNamingWhy: what Key refuses, it refuses with a message
// that says what is wrong, and where in the object (the offset Decode
// turns into a line).
func TestKeyRefusesNamingWhy(t *testing.T) {
	for _, tt := range []struct {
		in, want string
		at       int64
	}{
		{`{"key":"a","key":"b"}`, `field "key" given twice`, 16},
		{`{"Key":"a"}`, `unknown field "Key"`, 6},
		{`{"total":1,"color":1}`, `unknown field "color"`, 18},
		{`{"days":{"d":1,"d":2}}`, `key "": day d given twice`, 18},
		{`{"key":1}`, `key: 1} is not a string`, 7},
		{`{"days":[]}`, `days: []} is not an object`, 8},
		{`{"total":"1"}`, `total: "1"} is not a count`, 9},
		{`{"total":true}`, `total: true} is not a count`, 9},
		{`{"total":-1}`, `total: -1 is not a count (a whole number from 0 to 18446744073709551615)`, 9},
		{`{"total":1.5}`, `total: 1.5 is not a count (a whole number from 0 to 18446744073709551615)`, 9},
		{`{"total":1e2}`, `total: 1e2 is not a count (a whole number from 0 to 18446744073709551615)`, 9},
		{`{"total":18446744073709551616}`, `total: 18446744073709551616 is not a count (a whole number from 0 to 18446744073709551615)`, 9},
		{`{"days":{"d":"1"}}`, `day d: "1"}} is not a count`, 13},
		{`{"locked":1}`, `locked: 1} is not true or false`, 10},
		{`{"locked":"true"}`, `locked: "true"} is not true or false`, 10},
		{`{"key":null}`, `key: null is not a string: every entry names its key ("" is the empty name)`, 7},
		{`{"key":null,"total":1}`, `key: null is not a string: every entry names its key ("" is the empty name)`, 7},
		{`{"total":1}`, `no key field: every entry names its key ("" is the empty name)`, 10},
		{`{}`, `no key field: every entry names its key ("" is the empty name)`, 1},
		{`{"key":"\u0000\ud800"}`, `key: \ud800 is half of a UTF-16 surrogate pair, which names no character: the key would not be the one the dump names`, 14},
		{`{"key":"a\udc00b"}`, `key: \udc00 is half of a UTF-16 surrogate pair, which names no character: the key would not be the one the dump names`, 9},
		{`{"key":"\ud800\u0041"}`, `key: \ud800 is half of a UTF-16 surrogate pair, which names no character: the key would not be the one the dump names`, 8},
		{`{"key":"\ud800"}`, `key: \ud800 is half of a UTF-16 surrogate pair, which names no character: the key would not be the one the dump names`, 8},
		{`[]`, `a key's entry must be an object, not []`, 0},
		{`  "x"`, `a key's entry must be an object, not "x"`, 2},
	} {
		var got Key
		err := got.UnmarshalJSON([]byte(tt.in))
		var ve *valueError
		if !errors.As(err, &ve) || err.Error() != tt.want || ve.at != tt.at || ve.len != int64(len(tt.in)) {
			t.Errorf("%s: %v (%+v); want %q at %d of %d", tt.in, err, ve, tt.want, tt.at, len(tt.in))
		}
	}
}

// TestCheckKeyBounds: a key is taken up to every bound the service
// keeps, and refused one past it, with a message naming the key and the
// bound: its length and UTF-8, a route's name, the total, a day's count,
// a date's form and range, the days' sum against the total and its
// overflow (a day of 0 is no overflow).
func TestCheckKeyBounds(t *testing.T) {
	long := strings.Repeat("k", store.MaxKeyBytes)
	for _, tt := range []struct {
		name string
		kd   Key
		want string // "" if taken
	}{
		{"the longest key", Key{Key: long}, ""},
		{"a key one byte longer", Key{Key: long + "k"}, `key "` + long + `k": not a key the service accepts (at most 128 bytes of valid UTF-8)`},
		{"not UTF-8", Key{Key: "a\xff"}, `key "a\xff": not a key the service accepts (at most 128 bytes of valid UTF-8)`},
		{"a route", Key{Key: "ns/graph"}, `key "ns/graph": not a key the service accepts: ` + store.MsgRoute},
		{"the largest total", Key{Key: "a", Total: store.MaxTotal}, ""},
		{"a total past it", Key{Key: "a", Total: store.MaxTotal + 1}, `key "a": total 4611686018427387905 is above the most a counter holds, 4611686018427387904`},
		{"the largest day", Key{Key: "a", Total: store.MaxDay, Days: map[string]uint64{"2026-11-20": store.MaxDay}}, ""},
		{"a day past it", Key{Key: "a", Total: store.MaxTotal, Days: map[string]uint64{"2026-11-20": store.MaxDay + 1}}, `key "a": day 2026-11-20: count 549755813889 is above the most a day holds, 549755813888`},
		{"a date not of the form", Key{Key: "a", Total: 1, Days: map[string]uint64{"2026-1-20": 1}}, `key "a": day "2026-1-20": want YYYY-MM-DD`},
		{"a date that is not", Key{Key: "a", Total: 1, Days: map[string]uint64{"2026-02-30": 1}}, `key "a": day "2026-02-30": want YYYY-MM-DD`},
		{"the first date", Key{Key: "a", Total: 1, Days: map[string]uint64{"1970-01-01": 1}}, ""},
		{"the day before", Key{Key: "a", Total: 1, Days: map[string]uint64{"1969-12-31": 1}}, `key "a": day 1969-12-31: outside 1970-01-01..9999-12-31`},
		{"the last date", Key{Key: "a", Total: 1, Days: map[string]uint64{"9999-12-31": 1}}, ""},
		{"days adding up to the total", Key{Key: "a", Total: 5, Days: map[string]uint64{"2026-11-20": 2, "2026-11-21": 3, "2026-11-22": 0}}, ""},
		{"days of one visit each", Key{Key: "a", Total: 3, Days: map[string]uint64{"2026-11-20": 1, "2026-11-21": 1, "2026-11-22": 1}}, ""},
		{"days adding up to more", Key{Key: "a", Total: 4, Days: map[string]uint64{"2026-11-20": 2, "2026-11-21": 3}}, `key "a": the days add up to 5, more than the total 4`},
	} {
		err := checkKey(&tt.kd)
		if got := fmt.Sprint(err); (tt.want == "" && err != nil) || (tt.want != "" && got != tt.want) {
			t.Errorf("%s: %v, want %q", tt.name, err, tt.want)
		}
	}
}
