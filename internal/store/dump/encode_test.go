package dump

import (
	"bytes"
	"reflect"
	"testing"
)

// TestEncoderFramesADump: the encoder writes the head, one key a line
// with commas between them, and the end, and what it writes decodes to
// the same keys and hits.
func TestEncoderFramesADump(t *testing.T) {
	for _, tt := range []struct {
		keys []Key
		want string
	}{
		{nil, "{\"format\":\"visitors-export-1\",\"hits\":0,\"keys\":[\n]}\n"},
		{[]Key{{Key: "a", Total: 2, Days: map[string]uint64{"2026-11-20": 2}}, {Key: "b", Locked: true}, {Key: "c", Total: 1}},
			"{\"format\":\"visitors-export-1\",\"hits\":0,\"keys\":[\n" +
				`{"key":"a","total":2,"days":{"2026-11-20":2}},` + "\n" +
				`{"key":"b","total":0,"locked":true},` + "\n" +
				`{"key":"c","total":1}` + "\n]}\n"},
	} {
		var b bytes.Buffer
		e := NewEncoder(&b, 0)
		for i := range tt.keys {
			if err := e.Encode(&tt.keys[i]); err != nil {
				t.Fatal(err)
			}
		}
		if b.Len() != 0 && len(tt.keys) < 100 {
			t.Errorf("%d bytes reached the writer before Close, want none", b.Len())
		}
		if err := e.Close(); err != nil || b.String() != tt.want {
			t.Errorf("dump = %q, %v; want %q", b.String(), err, tt.want)
		}
		var got []Key
		if _, err := Decode(&b, 0, func(ks []Key, _ []Span) error { got = append(got, ks...); return nil }); err != nil || !reflect.DeepEqual(got, tt.keys) {
			t.Errorf("the dump decodes to %+v, %v; want %+v", got, err, tt.keys)
		}
	}
}
