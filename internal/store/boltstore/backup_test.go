package boltstore

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/iotest"
	"time"

	"visitors/internal/store"
	"visitors/internal/store/storetest"
)

func TestExportImportRoundTrip(t *testing.T) {
	src := t.TempDir()
	clock := storetest.NewClock(storetest.At(0, "12:00"))
	s := mustOpen(t, Options{Dir: src, Now: clock.Now, FlushInterval: time.Hour})
	for range 7 {
		mustHit(t, s)
	}
	for _, k := range []string{"a", "b", "a", "weird \x00 \"key\" ü", ""} {
		mustIncr(t, s, []byte(k))
	}
	s.Flush()
	clock.Add(24 * time.Hour)
	s.Rollover()
	mustIncr(t, s, []byte("a"))
	mustClose(t, s)

	var first bytes.Buffer
	if err := Export(src, &first); err != nil {
		t.Fatal(err)
	}
	dst := t.TempDir()
	if err := Import(dst, bytes.NewReader(first.Bytes()), false); err != nil {
		t.Fatal(err)
	}
	var second bytes.Buffer
	if err := Export(dst, &second); err != nil {
		t.Fatal(err)
	}
	if first.String() != second.String() {
		t.Errorf("export → import → export changed the data:\n%s\nthen\n%s", first.String(), second.String())
	}
	for _, want := range []string{storetest.Dated(`"key":"a","total":3,"days":{"$D":2,"$D+1":1}`), `"key":"b","total":1`} {
		if !strings.Contains(first.String(), want) {
			t.Errorf("export lacks %s:\n%s", want, first.String())
		}
	}

	// Merging adds; replacing replaces.
	if err := Import(dst, bytes.NewReader(first.Bytes()), false); err != nil {
		t.Fatal(err)
	}
	var merged bytes.Buffer
	Export(dst, &merged)
	if !strings.Contains(merged.String(), storetest.Dated(`"key":"a","total":6,"days":{"$D":4,"$D+1":2}`)) {
		t.Errorf("merge import did not add:\n%s", merged.String())
	}
	if err := Import(dst, strings.NewReader(`{"format":"visitors-export-1","hits":100,"keys":[{"key":"z","total":5}]}`), true); err != nil {
		t.Fatal(err)
	}
	var replaced bytes.Buffer
	Export(dst, &replaced)
	if want := "{\"format\":\"visitors-export-1\",\"hits\":100,\"keys\":[\n{\"key\":\"z\",\"total\":5}\n]}\n"; replaced.String() != want {
		t.Errorf("after a replacing import, export = %q, want %q", replaced.String(), want)
	}
}

// TestImportIsStrict: each bad dump is refused with its line and the
// reason, and the store is left byte for byte as it was.
func TestImportIsStrict(t *testing.T) {
	const head = `{"format":"visitors-export-1","hits":1,"keys":[` + "\n"
	tests := []struct{ name, dump, want string }{
		{"not json", "hello", "line 1"},
		{"empty", "", "ends too early"},
		{"wrong format", `{"format":"other","hits":1,"keys":[]}`, "format"},
		{"no format", `{"hits":1,"keys":[]}`, "no format"},
		{"bad date", head + `{"key":"a","total":1,"days":{"yesterday":1}}]}`, "line 2: key \"a\": day \"yesterday\": want YYYY-MM-DD"},
		{"loose date", head + `{"key":"a","total":1,"days":{"2026-1-01":1}}]}`, "YYYY-MM-DD"},
		{"date before 1970", head + `{"key":"a","total":1},` + "\n" + `{"key":"b","total":1,"days":{"1969-12-31":1}}]}`, "line 3: key \"b\": day 1969-12-31: outside 1970-01-01..9999-12-31"},
		{"negative total", head + `{"key":"a","total":-1}]}`, "line 2"},
		{"a type error on the last line of a key", head + `{"key":"a","total":-1}` + "\n]}", "line 2:"},
		{"a bad key on the last line of a key", head + `{"key":"a","total":1,"days":{"x":1}}` + "\n]}", "line 2:"},
		{"total over 64 bits", head + `{"key":"a","total":18446744073709551616}]}`, "line 2"},
		{"total at the edge", head + `{"key":"a","total":4611686018427387905}]}`, "above the most a counter holds"},
		{"a day's count over 40 bits", head + storetest.Dated(`{"key":"a","total":1099511627776,"days":{"$D":1099511627776}}]}`), "above the most a day holds"},
		{"a value over 4 MiB", head + `{"key":"a","total":1,"days":{` + strings.Repeat(storetest.Dated(`"$D":1,`), 1<<19) + storetest.Dated(`"$D+1":0}}]}`), "line 2: a value of more than 4 MiB"},
		{"days over the total", head + storetest.Dated(`{"key":"a","total":1,"days":{"$D":2}}]}`), "more than the total"},
		{"days overflow", head + storetest.Dated(`{"key":"a","total":1,"days":{"$D":18446744073709551615,"$D+1":1}}]}`), "above the most a day holds"},
		{"a key not UTF-8", head + "{\"key\":\"a\xff\",\"total\":1}\n]}", "line 2: the dump is not valid UTF-8"},
		{"a rune cut short in a key", head + "{\"key\":\"a\",\"total\":1},\n{\"key\":\"\xe6\x97\",\"total\":1}]}", "line 3: the dump is not valid UTF-8"},
		{"key too long", head + `{"key":"` + strings.Repeat("k", 129) + `","total":1}]}`, "not a key the service accepts"},
		{"unknown field", `{"format":"visitors-export-1","hits":1,"keys":[],"extra":1}`, "unknown field"},
		{"keys twice", `{"format":"visitors-export-1","hits":1,"keys":[],"keys":[{"key":"a","total":1}]}`, `field "keys" given twice`},
		{"unknown key field", head + `{"key":"a","total":1,"color":"red"}]}`, "unknown field"},
		{"trailing garbage", `{"format":"visitors-export-1","hits":1,"keys":[]}` + "\n" + `{"more":1}`, "line 2: more after the end"},
		{"truncated", head + `{"key":"a","total":1}`, "ends too early"},
		{"merge over the most a total holds", head + `{"key":"full","total":4611686018427387904}]}`, "above the most it may hold"},
	}
	for _, d := range storetest.StrictDumps(time.Now().UTC().Format(time.DateOnly)) { // any date: the dump is refused for another reason
		tests = append(tests, struct{ name, dump, want string }{d.Name, d.Dump, d.Want})
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			s := mustOpen(t, Options{Dir: dir})
			mustIncrN(t, s, "full", 1)
			mustIncrN(t, s, "a", 1)
			mustClose(t, s)
			before := fileSum(t, dir+"/"+FileName)
			for _, replace := range []bool{false, true} {
				if replace && strings.HasPrefix(tt.name, "merge") {
					continue // only adding overflows
				}
				err := Import(dir, strings.NewReader(tt.dump), replace)
				if err == nil || !strings.Contains(err.Error(), tt.want) {
					t.Errorf("Import(%.80q, replace=%v) = %v, want an error containing %q", tt.dump, replace, err, tt.want)
				}
				if after := fileSum(t, dir+"/"+FileName); after != before {
					t.Errorf("a refused import (replace=%v) changed the store", replace)
				}
			}
		})
	}
}

// TestImportTakesRunesSplitAcrossReads: the UTF-8 check of a dump takes
// a multi-byte rune that one read cuts and the next ends.
func TestImportTakesRunesSplitAcrossReads(t *testing.T) {
	dir := t.TempDir()
	dump := `{"format":"visitors-export-1","hits":1,"keys":[` + "\n" + `{"key":"日本é😀","total":3}]}`
	if err := Import(dir, iotest.OneByteReader(strings.NewReader(dump)), false); err != nil {
		t.Fatalf("Import one byte a read: %v", err)
	}
	s := mustOpen(t, Options{Dir: dir})
	defer mustClose(t, s)
	if got, _ := s.Get(ctx, []byte("日本é😀")); got.Total != 3 {
		t.Errorf("Get = %+v, want total 3", got)
	}
}

// TestImportNeverLowersHi: neither a merge nor a replace may make the
// /hi counter hand out a number again.
func TestImportNeverLowersHi(t *testing.T) {
	for _, replace := range []bool{false, true} {
		t.Run(fmt.Sprintf("replace=%v", replace), func(t *testing.T) {
			dir := t.TempDir()
			s := mustOpen(t, Options{Dir: dir})
			var last uint64
			for range 50 {
				last = mustHit(t, s)
			}
			mustClose(t, s)
			if err := Import(dir, strings.NewReader(`{"format":"visitors-export-1","hits":3,"keys":[]}`), replace); err != nil {
				t.Fatal(err)
			}
			s = mustOpen(t, Options{Dir: dir})
			defer mustClose(t, s)
			if n := mustHit(t, s); n != last+1 {
				t.Errorf("after importing a dump with a lower /hi, Hit() = %d, want %d", n, last+1)
			}
		})
	}
}

// TestImportStreamsLargeDumps imports a dump of 3,000 keys produced on
// the fly, in transactions of 1,000 keys, and reads it back.
func TestImportStreamsLargeDumps(t *testing.T) {
	defer func(n int) { importBatch = n }(importBatch)
	importBatch = 1000
	const n = 3_000
	pr, pw := io.Pipe()
	go func() {
		fmt.Fprint(pw, `{"format":"visitors-export-1","hits":9,"keys":[`)
		for i := range n {
			if i > 0 {
				fmt.Fprint(pw, ",")
			}
			fmt.Fprintf(pw, "\n{\"key\":\"k%d\",\"total\":%d,\"days\":{\"%s\":%d}}", i, i+1, storetest.Date(0), i)
		}
		fmt.Fprint(pw, "\n]}\n")
		pw.Close()
	}()
	dir := t.TempDir()
	if err := Import(dir, pr, false); err != nil {
		t.Fatal(err)
	}
	clock := storetest.NewClock(storetest.At(0, "12:00"))
	s := mustOpen(t, Options{Dir: dir, Now: clock.Now})
	defer mustClose(t, s)
	if s.Keys() != n {
		t.Errorf("Keys() = %d, want %d", s.Keys(), n)
	}
	for _, i := range []int{0, 999, 1000, n - 1} {
		if c := mustGet(t, s, fmt.Appendf(nil, "k%d", i)); c.Total != uint64(i+1) || c.Today != uint64(i) {
			t.Errorf("k%d = %+v, want total %d, today %d", i, c, i+1, i)
		}
	}
}

func TestExportRefusesARunningStore(t *testing.T) {
	dir := t.TempDir()
	s := mustOpen(t, Options{Dir: dir})
	defer mustClose(t, s)
	if err := Export(dir, new(bytes.Buffer)); err == nil || !strings.Contains(err.Error(), "another process") {
		t.Errorf("Export of an open store = %v, want an error saying to stop visitors", err)
	}
}

// TestImportTakesTheLimitsExactly: the largest total and day count an
// import takes, and exactly one batch of keys.
func TestImportTakesTheLimitsExactly(t *testing.T) {
	defer func(n int) { importBatch = n }(importBatch)
	importBatch = 3
	dir := t.TempDir()
	day := time.Now().UTC().Format(time.DateOnly)
	dump := fmt.Sprintf(`{"format":"visitors-export-1","hits":7,"keys":[
{"key":"a","total":%d,"days":{%q:%d}},
{"key":"b","total":1},
{"key":"c","total":2}
]}`, uint64(store.MaxTotal), day, uint64(store.MaxDay))
	if err := Import(dir, strings.NewReader(dump), false); err != nil {
		t.Fatalf("Import at the limits: %v", err)
	}
	s := mustOpen(t, Options{Dir: dir})
	defer mustClose(t, s)
	if c := mustGet(t, s, []byte("a")); c.Total != store.MaxTotal || c.Today != store.MaxDay {
		t.Errorf("a = %+v, want total %d, today %d", c, uint64(store.MaxTotal), uint64(store.MaxDay))
	}
	if c := mustGet(t, s, []byte("c")); c.Total != 2 || s.Keys() != 3 {
		t.Errorf("c = %+v, keys %d; want 2 and 3 (a whole batch written)", c, s.Keys())
	}
	if n := mustHit(t, s); n != 8 {
		t.Errorf("Hit() = %d, want 8", n)
	}
}

// TestImportLeavesNothingBehind: a leftover copy from an import that
// died is replaced, and a good import leaves only the store, whether
// the directory had one or not.
func TestImportLeavesNothingBehind(t *testing.T) {
	dump := `{"format":"visitors-export-1","hits":1,"keys":[{"key":"a","total":1}]}`
	for _, existing := range []bool{false, true} {
		dir := t.TempDir()
		if existing {
			mustFill(t, dir)
		}
		if err := os.WriteFile(filepath.Join(dir, FileName+".import"), []byte("a dead import's copy"), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := Import(dir, strings.NewReader(dump), false); err != nil {
			t.Fatalf("existing %v: Import: %v", existing, err)
		}
		entries, err := os.ReadDir(dir)
		if err != nil || len(entries) != 1 || entries[0].Name() != FileName {
			t.Errorf("existing %v: after an import the directory holds %v (%v), want only %s", existing, entries, err, FileName)
		}
	}
}

// TestImportIntoFormat1 merges a dump into a store the previous version
// wrote: its counts and /hi counter carry over into the new format.
func TestImportIntoFormat1(t *testing.T) {
	dir := t.TempDir()
	writeFormat1(t, dir, 42, map[string]uint64{"octocat": 7})
	dump := `{"format":"visitors-export-1","hits":3,"keys":[{"key":"octocat","total":1},{"key":"","total":2}]}`
	if err := Import(dir, strings.NewReader(dump), false); err != nil {
		t.Fatal(err)
	}
	s := mustOpen(t, Options{Dir: dir})
	defer mustClose(t, s)
	if c := mustGet(t, s, []byte("octocat")); c.Total != 8 {
		t.Errorf("octocat = %d after merging into format 1, want 8", c.Total)
	}
	if c := mustGet(t, s, []byte("")); c.Total != 2 {
		t.Errorf("the empty key = %d, want 2", c.Total)
	}
	if n := mustHit(t, s); n != 43 {
		t.Errorf("Hit() = %d, want 43", n)
	}
}

// TestImportEdges: a day of 0 visits makes no record, and a counter at
// the most it may hold still takes a merge that adds nothing.
func TestImportEdges(t *testing.T) {
	dir := t.TempDir()
	for _, dump := range []string{
		fmt.Sprintf(storetest.Dated(`{"format":"visitors-export-1","hits":0,"keys":[{"key":"a","total":%d,"days":{"$D-1":0,"$D":1}}]}`), uint64(store.MaxTotal)),
		`{"format":"visitors-export-1","hits":0,"keys":[{"key":"a","total":0}]}`, // onto a full counter
	} {
		if err := Import(dir, strings.NewReader(dump), false); err != nil {
			t.Fatal(err)
		}
	}
	var out bytes.Buffer
	if err := Export(dir, &out); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(out.String(), storetest.Date(-1)) || !strings.Contains(out.String(), storetest.Dated(`"$D":1`)) {
		t.Errorf("export = %s, want the day with visits and not the day without", out.String())
	}
}
