package dump

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"
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
