package boltstore

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"visitors/internal/store"
	"visitors/internal/store/storetest"
	"visitors/internal/store/tally"
)

// Tests of issue 16 (mutation testing): each states the promise a
// surviving mutant broke unseen.

// TestTokenRecordsRefused: a token record whose checksum is right but
// whose fields are not (another version, a field longer than the record,
// a short hash, a missing or extra field, nanoseconds past a second) is
// refused, never read as a token; the shortest well-formed record and
// the largest nanoseconds are read.
func TestTokenRecordsRefused(t *testing.T) {
	k := keyPrefix([]byte("id"))
	seal := func(data []byte) []byte {
		return binary.BigEndian.AppendUint32(bytes.Clone(data), tokenSum(k, data))
	}
	hash := bytes.Repeat([]byte{7}, 32)
	// fields: version, name, prefix, hash, seconds, nanoseconds.
	rec := func(version byte, name, prefix string, h []byte, tail ...[]byte) []byte {
		v := []byte{version}
		v = binary.AppendUvarint(v, uint64(len(name)))
		v = append(v, name...)
		v = binary.AppendUvarint(v, uint64(len(prefix)))
		v = append(v, prefix...)
		v = append(v, h...)
		for _, b := range tail {
			v = append(v, b...)
		}
		return v
	}
	sec := binary.AppendVarint(nil, 1_700_000_000)
	nsec := func(n uint64) []byte { return binary.AppendUvarint(nil, n) }

	good := []struct {
		name string
		data []byte
		want store.Token
	}{
		{"shortest", rec(1, "", "", hash, sec, nsec(0)), store.Token{ID: "id", Hash: [32]byte(hash), Created: time.Unix(1_700_000_000, 0).UTC()}},
		{"last nanosecond", rec(1, "n", "p/", hash, sec, nsec(999_999_999)), store.Token{ID: "id", Name: "n", Prefix: "p/", Hash: [32]byte(hash), Created: time.Unix(1_700_000_000, 999_999_999).UTC()}},
	}
	for _, tt := range good {
		got, err := decodeToken(k, seal(tt.data))
		if err != nil || got != tt.want {
			t.Errorf("%s: decodeToken = %+v, %v; want %+v", tt.name, got, err, tt.want)
		}
	}

	bad := []struct {
		name string
		data []byte
	}{
		{"version 2", rec(2, "", "", hash, sec, nsec(0))},
		{"version 0", rec(0, "", "", hash, sec, nsec(0))},
		{"name longer than the record", append([]byte{1, 5}, "abc"...)},
		{"name one byte longer than the rest", append([]byte{1, 4}, "abc"...)},
		{"no name length", []byte{1}},
		{"prefix longer than the record", append([]byte{1, 0, 40}, hash...)},
		{"hash of 31 bytes", rec(1, "", "", hash[:31])},
		{"hash and nothing after", rec(1, "", "", hash)},
		{"no nanoseconds", rec(1, "", "", hash, sec)},
		{"a second of nanoseconds", rec(1, "", "", hash, sec, nsec(1_000_000_000))},
		{"a byte after the nanoseconds", rec(1, "", "", hash, sec, nsec(5), []byte{0})},
		{"seconds cut", rec(1, "", "", hash, []byte{0x80})},
	}
	for _, tt := range bad {
		if got, err := decodeToken(k, seal(tt.data)); err == nil {
			t.Errorf("%s: decodeToken(% x) = %+v, want an error", tt.name, tt.data, got)
		}
	}
	for n := range 5 {
		if _, err := decodeToken(k, make([]byte, n)); err == nil {
			t.Errorf("decodeToken of %d zero bytes: no error", n)
		}
	}
}

// TestPutTokenBounds: an id of store.MaxKeyBytes and a name and prefix of
// maxTokenField bytes are stored and read back after a restart, and
// DeleteToken deletes it; one byte more of any is refused and stores
// nothing.
func TestPutTokenBounds(t *testing.T) {
	dir := t.TempDir()
	s := mustOpen(t, Options{Dir: dir})
	longest := store.Token{
		ID:      strings.Repeat("i", store.MaxKeyBytes),
		Name:    strings.Repeat("n", maxTokenField),
		Prefix:  strings.Repeat("p", maxTokenField),
		Created: storetest.At(4, "00:00"),
	}
	if err := s.PutToken(ctx, longest); err != nil {
		t.Fatalf("PutToken of the longest fields: %v", err)
	}
	for _, tk := range []store.Token{
		{ID: longest.ID + "i"},
		{ID: "name", Name: longest.Name + "n"},
		{ID: "prefix", Prefix: longest.Prefix + "p"},
	} {
		if err := s.PutToken(ctx, tk); err == nil {
			t.Errorf("PutToken(id %d bytes, name %d, prefix %d) = nil, want an error", len(tk.ID), len(tk.Name), len(tk.Prefix))
		}
	}
	mustClose(t, s)
	s = mustOpen(t, Options{Dir: dir})
	defer mustClose(t, s)
	got, err := s.Tokens(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0] != longest {
		t.Errorf("Tokens after a restart = %d tokens, want only the longest one", len(got))
	}
	if found, err := s.DeleteToken(ctx, longest.ID); err != nil || !found {
		t.Errorf("DeleteToken of an id of %d bytes = %v, %v; want true", len(longest.ID), found, err)
	}
	if got, err := s.Tokens(ctx); err != nil || len(got) != 0 {
		t.Errorf("Tokens after DeleteToken = %d tokens, %v; want none", len(got), err)
	}
}

// TestImportSpoolFailureIsNotABadDump: a dump the online import cannot
// spool (the disk is full) is refused as the store's failure, not as a
// bad dump (store.ErrInvalidDump, which the API answers 400), and
// changes nothing.
func TestImportSpoolFailureIsNotABadDump(t *testing.T) {
	if !storetest.OwnProcess(t) {
		return
	}
	s := mustOpen(t, Options{Dir: t.TempDir()})
	defer mustClose(t, s)
	mustIncr(t, s, []byte("kept"))
	if err := s.Flush(); err != nil {
		t.Fatal(err)
	}
	var dump strings.Builder
	dump.WriteString(`{"format":"visitors-export-1","hits":9,"keys":[`)
	for i := range 5000 { // about 150 KB
		if i > 0 {
			dump.WriteString(",")
		}
		fmt.Fprintf(&dump, `{"key":"k%04d","total":%d}`, i, i+1)
	}
	dump.WriteString("]}")
	var err error
	storetest.WithFileSizeLimit(t, 64<<10, func() {
		err = s.Import(ctx, strings.NewReader(dump.String()), true)
	})
	if err == nil || errors.Is(err, store.ErrInvalidDump) || !strings.Contains(err.Error(), "spool") {
		t.Errorf("Import with a full disk = %v, want a spool error that is not ErrInvalidDump", err)
	}
	es, err := s.List(ctx, nil, nil, store.MaxList)
	if err != nil || len(es) != 1 || string(es[0].Key) != "kept" || es[0].Total != 1 {
		t.Errorf("List after a refused import = %v, %v; want only kept, total 1", es, err)
	}
}

// TestOnlineImportReplaceWhileAKeyFails: an online import that replaces,
// made while a key cannot be written (the file holds its visits through
// the log alone), is not undone by the log's replay after a crash: no
// key comes back with its counts from before, and the /hi counter is at
// least the dump's.
func TestOnlineImportReplaceWhileAKeyFails(t *testing.T) {
	s := openWithAFailingKey(t, t.TempDir(), "bad")
	mustIncrN(t, s, "bad", 2)
	mustIncrN(t, s, "lowered", 30)
	mustIncrN(t, s, "dropped", 5)
	dump := `{"format":"visitors-export-1","hits":5000,"keys":[{"key":"lowered","total":4}]}`
	if err := s.Import(ctx, strings.NewReader(dump), true); err != nil {
		t.Fatal(err)
	}
	if s.log.seq == s.log.applied {
		t.Fatal("the file caught up with the log although bad fails: the test sees no floor")
	}
	crashed := crashCopy(t, s)
	r := mustOpen(t, Options{Dir: crashed})
	for k, want := range map[string]uint64{"bad": 0, "lowered": 4, "dropped": 0} {
		if c := mustGet(t, r, []byte(k)); c.Total != want {
			t.Errorf("after a crash that followed an import -replace while bad failed, %s = %d, want %d", k, c.Total, want)
		}
	}
	if n := mustHit(t, r); n <= 5000 {
		t.Errorf("after a crash that followed an import of hits 5000, Hit() = %d, want more", n)
	}
	mustClose(t, r)
	s.putFault.Store(nil)
	mustClose(t, s)
}

// TestOnlineImportReplaceDropsEverySketch: a replace drops the
// unique-visitor sketches of every key the dump does not have, on every
// day, and keeps those of the keys it has.
func TestOnlineImportReplaceDropsEverySketch(t *testing.T) {
	s := mustOpen(t, Options{Dir: t.TempDir()})
	defer mustClose(t, s)
	day := store.DayOf(time.Now())
	for _, d := range []store.Day{day - 1, day} {
		err := s.PutSketches(d, []store.Sketch{{Key: []byte("a"), Data: []byte("sa")}, {Key: []byte("b"), Data: []byte("sb")}, {Key: []byte("c"), Data: []byte("sc")}})
		if err != nil {
			t.Fatal(err)
		}
	}
	dump := `{"format":"visitors-export-1","hits":0,"keys":[{"key":"a","total":1}]}`
	if err := s.Import(ctx, strings.NewReader(dump), true); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		key  string
		want bool
	}{{"a", true}, {"b", false}, {"c", false}} {
		got, err := s.SketchDays([]byte(tc.key), day, 2)
		if err != nil {
			t.Fatal(err)
		}
		for i := range got {
			if (got[i] != nil) != tc.want {
				t.Errorf("after a replace by a dump of a alone, the sketch of %q on day %d: %q, want present %v", tc.key, i, got[i], tc.want)
			}
		}
	}
}

// TestSetBounds: Set takes a total up to store.MaxTotal (2^62), the most
// the API sets, and refuses one more, changing nothing.
func TestSetBounds(t *testing.T) {
	s := mustOpen(t, Options{Dir: t.TempDir()})
	defer mustClose(t, s)
	if got := mustSet(t, s, "k", store.MaxTotal); got.Total != store.MaxTotal {
		t.Errorf("Set(k, 2^62) = %+v, want total 2^62", got)
	}
	if _, err := s.Set(ctx, []byte("k"), store.MaxTotal+1); err == nil {
		t.Error("Set(k, 2^62+1) = nil error, want a refusal")
	}
	if got := mustGet(t, s, []byte("k")); got.Total != store.MaxTotal {
		t.Errorf("Get(k) after a refused Set = %+v, want total 2^62", got)
	}
}

// logRecordOf returns a log record of the file with log id id: the
// header (size, checksum, id, seq) and payload, as wal.finish writes it.
func logRecordOf(id, seq uint64, payload []byte) []byte {
	b := make([]byte, logHeader, logHeader+len(payload))
	b = append(b, payload...)
	binary.LittleEndian.PutUint32(b, uint32(len(payload)))
	binary.LittleEndian.PutUint64(b[8:], id)
	binary.LittleEndian.PutUint64(b[16:], seq)
	binary.LittleEndian.PutUint32(b[4:], crc32.Checksum(b[8:], castagnoli))
	return b
}

// TestLogRecordsRefused: a log record is read only whole and well
// formed: one cut short anywhere (a copy of the log cut short: no byte
// past its end is read) or whose payload, under a right checksum, ends
// before its fields do or goes on after them is refused, and so ends
// the replay there.
func TestLogRecordsRefused(t *testing.T) {
	const id = 77
	u := binary.AppendUvarint
	// hits 9, one key "ab" with total 5 and one day (20000: 3).
	payload := u(u(u(u(append(u(u(u(nil, 9), 1), 2), "ab"...), 5), 1), 20000), 3)
	whole := logRecordOf(id, 4, payload)
	r, n, ok := parseRecord(whole, id)
	if !ok || n != len(whole) || r.seq != 4 || r.hits != 9 || len(r.keys) != 1 || string(r.keys[0].key) != "ab" ||
		r.keys[0].total != 5 || len(r.keys[0].days) != 1 || r.keys[0].days[0] != (tally.DayCount{Day: 20000, Count: 3}) {
		t.Fatalf("parseRecord(a whole record) = %+v, %d, %v", r, n, ok)
	}
	for cut := 1; cut < len(whole); cut++ {
		b := bytes.Clone(whole[:len(whole)-cut]) // its capacity ends with it
		if _, _, ok := parseRecord(b, id); ok {
			t.Errorf("a record cut %d bytes short was read", cut)
		}
	}
	for _, tt := range []struct {
		name    string
		payload []byte
	}{
		{"hits alone", u(nil, 9)},
		{"no key", u(u(nil, 9), 1)},
		{"a key's bytes cut", append(u(u(u(nil, 9), 1), 2), 'a')},
		{"no total", append(u(u(u(nil, 9), 1), 2), "ab"...)},
		{"no day count", u(u(append(u(u(u(nil, 9), 1), 2), "ab"...), 5), 1)},
		{"a day without its count", u(u(u(append(u(u(u(nil, 9), 1), 2), "ab"...), 5), 1), 20000)},
		{"a byte after the last field", append(bytes.Clone(payload), 0)},
		{"a key longer than a key may be", append(u(u(u(nil, 9), 1), store.MaxKeyBytes+1), make([]byte, store.MaxKeyBytes+3)...)},
	} {
		if r, _, ok := parseRecord(logRecordOf(id, 4, tt.payload), id); ok {
			t.Errorf("%s: parseRecord = %+v, want it refused", tt.name, r)
		}
	}
	if _, _, ok := parseRecord(whole, id+1); ok {
		t.Error("a record of another file's log was read")
	}
}

// TestLogIsPreallocated: a sync store's log is written to its full size
// (logSize) at open, so that a record's fdatasync writes only its own
// blocks, never the file's size: a log shorter than that (left by a
// store with a smaller one) is filled up to it, not past it; and a log
// already that size is kept as it is at the next open.
func TestLogIsPreallocated(t *testing.T) {
	for _, short := range []int64{-1, logSize - 1000} {
		dir := t.TempDir()
		path := filepath.Join(dir, LogName)
		if short >= 0 {
			if err := os.WriteFile(path, make([]byte, short), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		for i := range 2 {
			s := openSyncLogOnly(t, dir)
			mustIncr(t, s, []byte("k"))
			fi, err := os.Stat(path)
			if err != nil {
				t.Fatal(err)
			}
			if fi.Size() != logSize {
				t.Errorf("log of %d bytes before, open %d: the log is %d bytes, want %d, preallocated", short, i+1, fi.Size(), logSize)
			}
			mustClose(t, s)
		}
	}
}

// TestLogThatCannotBePreparedGivesItsRoomBack: a sync store whose log
// cannot be preallocated (here a file size limit; ENOSPC instead runs
// without the log, as cmd/visitors' disk-full test shows) refuses to
// start, saying so, and gives back the room the log took.
func TestLogThatCannotBePreparedGivesItsRoomBack(t *testing.T) {
	if !storetest.OwnProcess(t) {
		return
	}
	dir := t.TempDir()
	var err error
	storetest.WithFileSizeLimit(t, uint64(logSize/4), func() {
		var s *Store
		if s, err = Open(Options{Dir: dir, Durability: store.Sync}); err == nil {
			s.Close()
		}
	})
	if err == nil || !strings.Contains(err.Error(), LogName) {
		t.Errorf("Open with no room for the log = %v, want an error naming %s", err, LogName)
	}
	fi, serr := os.Stat(filepath.Join(dir, LogName))
	if serr == nil && fi.Size() != 0 {
		t.Errorf("the log that could not be preallocated keeps %d bytes, want 0", fi.Size())
	}
}

// TestOfflineImportFailsWhenTheLogCannotBeApplied: an offline import
// first applies the visits a crash left in the log; if that fails (the
// disk is full), the import fails, naming the log, and changes nothing:
// the visits are still there for the next start.
func TestOfflineImportFailsWhenTheLogCannotBeApplied(t *testing.T) {
	if !storetest.OwnProcess(t) {
		return
	}
	s := openSyncLogOnly(t, t.TempDir())
	for i := range 2000 {
		mustIncr(t, s, fmt.Appendf(nil, "key-%04d", i))
	}
	crashed := crashCopy(t, s)
	mustClose(t, s)
	fi, err := os.Stat(filepath.Join(crashed, FileName))
	if err != nil {
		t.Fatal(err)
	}
	dump := `{"format":"visitors-export-1","hits":0,"keys":[{"key":"x","total":1}]}`
	storetest.WithFileSizeLimit(t, uint64(fi.Size()), func() {
		err = Import(crashed, strings.NewReader(dump), false)
	})
	if err == nil || !strings.Contains(err.Error(), LogName) {
		t.Errorf("Import while the log cannot be applied = %v, want an error naming %s", err, LogName)
	}
	r := mustOpen(t, Options{Dir: crashed})
	defer mustClose(t, r)
	for _, k := range []string{"key-0000", "key-1999"} {
		if c := mustGet(t, r, []byte(k)); c.Total != 1 {
			t.Errorf("after the failed import and a start, %s = %d, want 1 (from the log)", k, c.Total)
		}
	}
	if c := mustGet(t, r, []byte("x")); c.Total != 0 {
		t.Errorf("x = %d after a failed import, want 0", c.Total)
	}
}
