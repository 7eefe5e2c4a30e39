package dump

import (
	"bytes"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"visitors/internal/store"
)

// decodeCSV converts in and decodes the dump it makes, as an import
// does.
func decodeCSV(tb testing.TB, in string) ([]Key, error) {
	tb.Helper()
	var b bytes.Buffer
	if err := FromCSV(strings.NewReader(in), &b); err != nil {
		return nil, err
	}
	var keys []Key
	_, err := Decode(&b, 0, func(ks []Key, _ []Span) error { keys = append(keys, ks...); return nil })
	if err != nil {
		tb.Fatalf("FromCSV(%q) made a dump Decode refuses: %v\n%s", in, err, b.String())
	}
	return keys, nil
}

func TestFromCSV(t *testing.T) {
	today := time.Now().UTC().Format(DateLayout)
	yesterday := time.Now().UTC().AddDate(0, 0, -1).Format(DateLayout)
	tests := []struct {
		name string
		in   string
		want []Key
	}{
		{"totals", "hits/a,12\ncountapi/ns/k,7\n", []Key{{Key: "hits/a", Total: 12}, {Key: "countapi/ns/k", Total: 7}}},
		{"header", "key,total\nghpvc/octo,3\n", []Key{{Key: "ghpvc/octo", Total: 3}}},
		{"days only: the total is their sum", "key,date,count\na," + yesterday + ",2\na," + today + ",3\n",
			[]Key{{Key: "a", Total: 5, Days: map[string]uint64{yesterday: 2, today: 3}}}},
		{"total and days, in any order", "a," + today + ",3\nb,1\na,10\n",
			[]Key{{Key: "b", Total: 1}, {Key: "a", Total: 10, Days: map[string]uint64{today: 3}}}},
		{"BOM and CRLF", "\uFEFFkey,total\r\na,1\r\nb,2\r\n", []Key{{Key: "a", Total: 1}, {Key: "b", Total: 2}}},
		{"quoted key with comma and quote", "\"a,\"\"b\",4\n", []Key{{Key: `a,"b`, Total: 4}}},
		{"the empty key, as a dump takes it", "\"\",4\n", []Key{{Key: "", Total: 4}}},
		{"bounds", fmt.Sprintf("a,%d\nb,%s,%d\n", uint64(store.MaxTotal), today, uint64(store.MaxDay)),
			[]Key{{Key: "a", Total: store.MaxTotal}, {Key: "b", Total: store.MaxDay, Days: map[string]uint64{today: store.MaxDay}}}},
		{"odd UTF-8 key", "ключ/ü,1\n", []Key{{Key: "ключ/ü", Total: 1}}},
		{"blank lines", "a,1\n\n\nb,2\n", []Key{{Key: "a", Total: 1}, {Key: "b", Total: 2}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := decodeCSV(t, tt.in)
			if err != nil || !reflect.DeepEqual(got, tt.want) {
				t.Errorf("FromCSV(%q) = %+v, %v; want %+v", tt.in, got, err, tt.want)
			}
		})
	}
}

func TestFromCSVRefuses(t *testing.T) {
	today := time.Now().UTC().Format(DateLayout)
	tests := []struct {
		name, in, want string
	}{
		{"empty", "", "line 1: no counts"},
		{"header only", "key,total\n", "line 1: no counts"},
		{"one field", "a,1\nb\n", "line 2: 1 fields"},
		{"four fields", "a,1\nb,2026-01-01,1,1\n", "line 2: 4 fields"},
		{"negative total", "a,1\nb,-5\n", `line 2: key "b": total "-5" is not a count`},
		{"plus sign", "a,+5\n", `line 1: key "a": total "+5" is not a count`},
		{"spaces", "a, 5\n", `line 1: key "a": total " 5" is not a count`},
		{"fraction", "a,1.5\n", `total "1.5" is not a count`},
		{"hex", "a,0x10\n", `total "0x10" is not a count`},
		{"empty count", "a,\n", `total "" is not a count`},
		{"huge total", fmt.Sprintf("a,%d\n", uint64(store.MaxTotal)+1), "line 1: key \"a\": total"},
		{"past uint64", "a,99999999999999999999\n", "is not a count"},
		{"huge day", fmt.Sprintf("a,%s,%d\n", today, uint64(store.MaxDay)+1), "is not a count"},
		{"bad date", "a,2026-02-30,1\n", `line 1: key "a": day "2026-02-30": want YYYY-MM-DD`},
		{"date layout", "a,2026/01/01,1\n", "want YYYY-MM-DD"},
		{"date with time", "a,2026-01-01T00:00:00Z,1\n", "want YYYY-MM-DD"},
		{"date too early", "a,1969-12-31,1\n", "outside 1970-01-01..9999-12-31"},
		{"duplicate total", "a,1\nb,2\na,3\n", `line 3: key "a": total given twice (first on line 1)`},
		{"duplicate day", "a," + today + ",1\na," + today + ",2\n", `line 2: key "a": day ` + today + ` given twice (first on line 1)`},
		{"days above the total", "a,2\na," + today + ",3\n", `line 2: key "a": the days add up to 3, more than the total 2`},
		{"key too long", strings.Repeat("k", store.MaxKeyBytes+1) + ",1\n", "line 1: key \"kkk"},
		{"key not UTF-8", "a\xff,1\n", "not a key the service accepts"},
		{"key a route", "ns/graph,1\n", "line 1: key \"ns/graph\": not a key the service accepts"},
		{"BOM past the start", "a,1\n\uFEFFb,2\n", "line 2: a byte order mark"},
		{"two BOMs", "\uFEFF\uFEFFa,1\n", "line 1: a byte order mark"},
		{"bare quote", "a\"b,1\n", "line 1: bare \" in non-quoted-field"},
		{"open quote", "a,1\n\"b,2\n", "extraneous or missing \" in quoted-field"},
		{"header in the middle", "a,1\nkey,total\n", `line 2: key "key": total "total" is not a count`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var b bytes.Buffer
			err := FromCSV(strings.NewReader(tt.in), &b)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("FromCSV(%q) = %v, want an error with %q", tt.in, err, tt.want)
			}
			if b.Len() != 0 {
				t.Errorf("FromCSV(%q) refused, and wrote %q", tt.in, b.String())
			}
		})
	}
}

// TestFromCSVLines: the dump a CSV makes names each key on the line of
// its last row, so that an import's refusal of a key (a write's
// KeyError) names the CSV's line.
func TestFromCSVLines(t *testing.T) {
	in := "key,total\r\na,1\nb,2\n\n\"c\nd\",3\na," + time.Now().UTC().Format(DateLayout) + ",1\ne,5\n"
	var b bytes.Buffer
	if err := FromCSV(strings.NewReader(in), &b); err != nil {
		t.Fatal(err)
	}
	want := map[string]int{"b": 3, "c\nd": 5, "a": 7, "e": 8}
	for key, line := range want {
		_, err := Decode(bytes.NewReader(b.Bytes()), 0, func(ks []Key, _ []Span) error {
			for i, k := range ks {
				if k.Key == key {
					return &KeyError{I: i, Err: errors.New("refused")}
				}
			}
			return nil
		})
		if wantErr := fmt.Sprintf("line %d: refused", line); err == nil || err.Error() != wantErr {
			t.Errorf("key %q refused: %v, want %q", key, err, wantErr)
		}
	}
}
