package boltstore

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"visitors/internal/store"
	"visitors/internal/store/storetest"
)

func TestOpenRefuses(t *testing.T) {
	tests := []struct {
		name  string
		setup func(t *testing.T, dir string) string // returns the -data dir
		want  string
	}{
		{"a path under a file", func(t *testing.T, dir string) string {
			f := filepath.Join(dir, "file")
			if err := os.WriteFile(f, []byte("x"), 0o644); err != nil {
				t.Fatal(err)
			}
			return filepath.Join(f, "data")
		}, "create data directory"},
		{"another program's file", func(t *testing.T, dir string) string {
			if err := os.WriteFile(filepath.Join(dir, FileName), bytes.Repeat([]byte("not a database "), 1000), 0o644); err != nil {
				t.Fatal(err)
			}
			return dir
		}, "not a visitors data file"},
		{"another program's bbolt file", func(t *testing.T, dir string) string {
			writeBolt(t, filepath.Join(dir, FileName), nil, func(tx *bolt.Tx) error { _, err := tx.CreateBucket([]byte("users")); return err })
			return dir
		}, "not a visitors store"},
		{"corrupted meta pages", func(t *testing.T, dir string) string {
			mustFill(t, dir)
			corrupt(t, filepath.Join(dir, FileName), 0, 2*4096)
			return dir
		}, FileName},
		{"a directory in the file's place", func(t *testing.T, dir string) string {
			if err := os.Mkdir(filepath.Join(dir, FileName), 0o755); err != nil {
				t.Fatal(err)
			}
			return dir
		}, "not a regular file"},
		{"a bbolt file without a freelist", func(t *testing.T, dir string) string {
			writeBolt(t, filepath.Join(dir, FileName), &bolt.Options{NoFreelistSync: true}, createBuckets)
			return dir
		}, "no freelist"},
		{"an empty file", func(t *testing.T, dir string) string {
			if err := os.WriteFile(filepath.Join(dir, FileName), nil, 0o644); err != nil {
				t.Fatal(err)
			}
			return dir
		}, "empty"},
		{"a file truncated to 8 KiB", func(t *testing.T, dir string) string {
			mustFill(t, dir)
			if err := os.Truncate(filepath.Join(dir, FileName), 8<<10); err != nil {
				t.Fatal(err)
			}
			return dir
		}, "truncated"},
		{"a bad page header", func(t *testing.T, dir string) string {
			mustFill(t, dir)
			path := filepath.Join(dir, FileName)
			b, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			// Every page that holds key-7's total (a live one among them,
			// and copies bbolt has freed): a page of totals, which Open reads.
			k := keyPrefix([]byte("key-7"))
			needle := append(k, totalRecord(k, 1, store.DayOf(time.Now()), 1)...)
			for at := 0; ; {
				i := bytes.Index(b[at:], needle)
				if i < 0 {
					break
				}
				page := (at + i) / 4096
				corrupt(t, path, page*4096, page*4096+16)
				at = (page + 1) * 4096
			}
			return dir
		}, "damaged"},
		{"a flipped bit in a count", func(t *testing.T, dir string) string {
			mustFill(t, dir)
			k := keyPrefix([]byte("key-7"))
			flipAll(t, filepath.Join(dir, FileName), totalRecord(k, 1, store.DayOf(time.Now()), 1), 7) // the live copy among them
			return dir
		}, `key "key-7"`},
		{"a flipped bit in a plain total", func(t *testing.T, dir string) string {
			mustFill(t, dir)
			k := keyPrefix([]byte("key-7"))
			writeBolt(t, filepath.Join(dir, FileName), nil, func(tx *bolt.Tx) error { return tx.Bucket(bucketTotals).Put(k, record(tagTotals, k, 1)) })
			flip(t, filepath.Join(dir, FileName), record(tagTotals, k, 1), 7)
			return dir
		}, `key "key-7"`},
		{"a flipped bit in a key", func(t *testing.T, dir string) string {
			mustFill(t, dir)
			flipAll(t, filepath.Join(dir, FileName), []byte("key-123"), 6) // in the totals too, which Open reads
			return dir
		}, "damaged"},
		{"a foreign format", func(t *testing.T, dir string) string {
			writeBolt(t, filepath.Join(dir, FileName), nil, func(tx *bolt.Tx) error {
				b, err := tx.CreateBucket(bucketMeta)
				if err != nil {
					return err
				}
				return b.Put(keyFormat, []byte("visitors-counts-99"))
			})
			return dir
		}, "visitors-counts-99"},
		{"corrupted data pages", func(t *testing.T, dir string) string {
			mustFill(t, dir)
			corrupt(t, filepath.Join(dir, FileName), 2*4096, -1)
			return dir
		}, "corrupted"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := tt.setup(t, t.TempDir())
			before := fileSum(t, filepath.Join(dir, FileName))
			s, err := Open(Options{Dir: dir})
			if err == nil {
				s.Close()
				t.Fatalf("Open succeeded, want an error containing %q", tt.want)
			}
			if !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), dir) {
				t.Errorf("Open error = %q, want one naming %s and containing %q", err, dir, tt.want)
			}
			if after := fileSum(t, filepath.Join(dir, FileName)); after != before {
				t.Errorf("Open changed the file it refused")
			}
			if before != "" {
				var out bytes.Buffer
				if err := Check(dir, &out, 0); err == nil {
					t.Errorf("Check passed a file Open refuses:\n%s", out.String())
				}
			}
		})
	}
}

// mustFill writes a store with a few hundred keys into dir.
func mustFill(t *testing.T, dir string) {
	t.Helper()
	s := mustOpen(t, Options{Dir: dir})
	for i := range 500 {
		mustIncr(t, s, fmt.Appendf(nil, "key-%d", i))
	}
	mustClose(t, s)
}

// corrupt overwrites bytes [from, to) of path (to -1: the end) with a
// pattern no valid page holds.
func corrupt(t *testing.T, path string, from, to int) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if to < 0 {
		to = len(b)
	}
	for i := from; i < to; i++ {
		b[i] = byte(0xA5 ^ i)
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// fileSum returns a hash of the file at path, or "" if there is none.
func fileSum(t *testing.T, path string) string {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		return "" // none, or its directory is not one
	}
	if fi.IsDir() {
		return "a directory"
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("%x", sha256.Sum256(b))
}

// flip flips the low bit of byte i of the first place where the file at
// path holds want.
func flip(t *testing.T, path string, want []byte, i int) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	at := bytes.Index(b, want)
	if at < 0 {
		t.Fatalf("%s does not hold %q", path, want)
	}
	b[at+i] ^= 1
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestEveryDamagedPageIsRefusedOrHarmless damages each page's header in
// turn: opening never crashes, and a refusal leaves the file as it was,
// as does a store that opened and whose background check then found the
// damage (it refuses every write). A page no tree refers to (a free
// page) may go unnoticed; then every count must still read back.
func TestEveryDamagedPageIsRefusedOrHarmless(t *testing.T) {
	src := t.TempDir()
	mustFill(t, src)
	b, err := os.ReadFile(filepath.Join(src, FileName))
	if err != nil {
		t.Fatal(err)
	}
	for page := 2; page < len(b)/4096; page++ {
		dir := t.TempDir()
		path := filepath.Join(dir, FileName)
		d := bytes.Clone(b)
		for i := range 16 {
			d[page*4096+i] ^= 0x5A
		}
		if err := os.WriteFile(path, d, 0o644); err != nil {
			t.Fatal(err)
		}
		s, err := Open(Options{Dir: dir})
		if err != nil {
			if got, rerr := os.ReadFile(path); rerr != nil || !bytes.Equal(got, d) {
				t.Errorf("page %d: Open refused (%v) but changed the file", page, err)
			}
			continue
		}
		waitChecked(t, s)
		if s.Health() != nil { // found by the check after Open
			if _, err := storetest.Incr(ctx, s, []byte("key-0")); err == nil {
				t.Errorf("page %d: the check found %v, but a visit was counted", page, s.Health())
			}
			s.Close()
			if got, rerr := os.ReadFile(path); rerr != nil || !bytes.Equal(got, d) {
				t.Errorf("page %d: the check found %v, but the file changed", page, s.Health())
			}
			continue
		}
		for _, i := range []int{0, 250, 499} {
			if c := mustGet(t, s, fmt.Appendf(nil, "key-%d", i)); c.Total != 1 {
				t.Errorf("page %d damaged, Open accepted the file, but key-%d = %d", page, i, c.Total)
			}
		}
		s.Close()
	}
}

// TestMigratesFormat1 opens a store the previous version wrote: its
// counts and /hi counter carry over, and the file is checked afterwards
// in the new format.
func TestMigratesFormat1(t *testing.T) {
	dir := t.TempDir()
	be := func(n uint64) []byte { return binary.BigEndian.AppendUint64(nil, n) }
	today := store.DayOf(nowUTC())
	writeBolt(t, filepath.Join(dir, FileName), nil, func(tx *bolt.Tx) error {
		for _, b := range [][]byte{bucketMeta, bucketTotals, bucketDays} {
			if _, err := tx.CreateBucket(b); err != nil {
				return err
			}
		}
		meta, totals, days := tx.Bucket(bucketMeta), tx.Bucket(bucketTotals), tx.Bucket(bucketDays)
		return errors.Join(
			meta.Put(keyFormat, []byte(formatValueV1)),
			meta.Put(keyHits, be(42)),
			totals.Put([]byte("octocat"), be(7)),
			days.Put(dayKey([]byte("octocat"), today-1), be(5)),
			days.Put(dayKey([]byte("octocat"), today), be(2)))
	})
	var out bytes.Buffer
	if err := Check(dir, &out, 0); err != nil || !strings.Contains(out.String(), ": 1 keys, 2 day records, /hi at 42 (format 1") {
		t.Errorf("Check of a format 1 store = %v, %q; want ok naming format 1", err, out.String())
	}

	s := mustOpen(t, Options{Dir: dir})
	if n := mustHit(t, s); n != 43 {
		t.Errorf("Hit() after migrating = %d, want 43", n)
	}
	if c := mustGet(t, s, []byte("octocat")); c.Total != 7 || c.Today != 2 {
		t.Errorf("Get after migrating = %+v, want total 7, today 2", c)
	}
	if d := mustDays(t, s, []byte("octocat"), 2); fmt.Sprint(d.Counts) != "[5 2]" {
		t.Errorf("Days after migrating = %v, want [5 2]", d.Counts)
	}
	mustIncrN(t, s, "", 1) // the key format 1 could not hold
	mustClose(t, s)
	out.Reset()
	if err := Check(dir, &out, 0); err != nil || !strings.Contains(out.String(), "ok: ") || strings.Contains(out.String(), "format 1") {
		t.Errorf("Check after migrating = %v, %q; want ok in format 2", err, out.String())
	}
}

func TestCheckReportsEveryDamagedRecord(t *testing.T) {
	dir := t.TempDir()
	mustFill(t, dir)
	var out bytes.Buffer
	if err := Check(dir, &out, 0); err != nil || !strings.Contains(out.String(), "ok: ") || !strings.Contains(out.String(), ": 500 keys, 500 day records, /hi at 0") {
		t.Fatalf("Check of a sound store = %v, %q", err, out.String())
	}
	path := filepath.Join(dir, FileName)
	for _, k := range []string{"key-3", "key-300"} {
		kp := keyPrefix([]byte(k))
		flipAll(t, path, totalRecord(kp, 1, store.DayOf(time.Now()), 1), 0) // the live copy among them
	}
	before := fileSum(t, path)
	out.Reset()
	err := Check(dir, &out, 0)
	if err == nil {
		t.Fatalf("Check passed a damaged store: %s", out.String())
	}
	for _, k := range []string{"key-3", "key-300"} {
		if !strings.Contains(out.String(), fmt.Sprintf("key %q", k)) {
			t.Errorf("Check output lacks %s:\n%s", k, out.String())
		}
	}
	if !strings.Contains(err.Error(), `in 2 places, the first: the total of key "key-3"`) {
		t.Errorf("Check error = %v, want it to count 2 places and name key-3 first", err)
	}
	out.Reset()
	err = Check(dir, &out, 1) // at most one problem
	if n := strings.Count(out.String(), "damaged: "); n != 1 || err == nil || !strings.Contains(err.Error(), "1 or more places") {
		t.Errorf("Check with max 1 printed %d problems, error %v; want 1 and \"or more\"", n, err)
	}
	if fileSum(t, path) != before {
		t.Error("Check changed the file")
	}
	if err := Check(t.TempDir(), &out, 0); err == nil {
		t.Error("Check of a directory without a store passed")
	}
}

func nowUTC() time.Time { return time.Now().UTC() }

// writeFormat1 writes a store as the previous version did (format 1: raw
// keys, bare values) into dir, with the /hi counter and totals given.
func writeFormat1(t *testing.T, dir string, hits uint64, totals map[string]uint64) {
	t.Helper()
	be := func(n uint64) []byte { return binary.BigEndian.AppendUint64(nil, n) }
	writeBolt(t, filepath.Join(dir, FileName), nil, func(tx *bolt.Tx) error {
		for _, b := range [][]byte{bucketMeta, bucketTotals, bucketDays} {
			if _, err := tx.CreateBucket(b); err != nil {
				return err
			}
		}
		meta := tx.Bucket(bucketMeta)
		errs := []error{meta.Put(keyFormat, []byte(formatValueV1)), meta.Put(keyHits, be(hits))}
		for k, n := range totals {
			errs = append(errs, tx.Bucket(bucketTotals).Put([]byte(k), be(n)))
		}
		return errors.Join(errs...)
	})
}

// writeBolt opens the bbolt file at path with o (making it if missing),
// runs update in one transaction and closes the file, failing the test
// on any error.
func writeBolt(t *testing.T, path string, o *bolt.Options, update func(tx *bolt.Tx) error) {
	t.Helper()
	db, err := bolt.Open(path, 0o644, o)
	if err != nil {
		t.Fatal(err)
	}
	err = db.Update(update)
	if cerr := db.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		t.Fatal(err)
	}
}

// TestCheckNamesKeysEndingInARouteName: a key made before route names
// were refused (ns/graph: the graph of ns, not a badge) is exported, and
// an import refuses it, so a backup would not restore; check names each
// such key and what to do, before the backup is needed (the hostile
// review of issue 23 found check silent).
func TestCheckNamesKeysEndingInARouteName(t *testing.T) {
	dir := t.TempDir()
	s := mustOpen(t, Options{Dir: dir})
	for _, k := range []string{"ns/graph", "daily", "ns/graphs", "a/stream"} {
		mustIncr(t, s, []byte(k))
	}
	mustClose(t, s)
	var out strings.Builder
	if err := Check(dir, &out, 0); err != nil {
		t.Fatalf("Check = %v\n%s", err, out.String())
	}
	for _, k := range []string{`"ns/graph"`, `"daily"`, `"a/stream"`} {
		if !strings.Contains(out.String(), "warning: key "+k+" ends in a route name") {
			t.Errorf("check does not name %s:\n%s", k, out.String())
		}
	}
	if strings.Contains(out.String(), `"ns/graphs"`) {
		t.Errorf("check names ns/graphs, a key like any other:\n%s", out.String())
	}
}

// TestCheckNamesALeftoverImport: an offline import stopped (SIGKILL)
// leaves its temporary file; the store is as it was, and check says so
// and what to do with the file (before, it said only ok).
func TestCheckNamesALeftoverImport(t *testing.T) {
	dir := t.TempDir()
	mustClose(t, mustOpen(t, Options{Dir: dir}))
	if err := os.WriteFile(filepath.Join(dir, FileName+".import"), []byte("partial"), 0o600); err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	if err := Check(dir, &out, 0); err != nil {
		t.Fatalf("Check = %v", err)
	}
	if !strings.Contains(out.String(), "warning: "+filepath.Join(dir, FileName)+".import (7 bytes) is what an offline import left") {
		t.Errorf("check does not name the leftover import:\n%s", out.String())
	}
}

// TestTruncatedAtEveryPageIsRefused guards checkMetaPages: a file
// cut at any page boundary below its high-water mark must be refused
// with an error, not mapped (touching a mapped page past the end of the
// file is a SIGBUS that kills the process). (Passes; without the size
// check no other test fails, since the suite's 8 KiB cut of a small
// store happens not to fault.)
// Found by review (was TestReviewTruncatedAtEveryPageIsRefused).
func TestTruncatedAtEveryPageIsRefused(t *testing.T) {
	src := t.TempDir()
	s := mustOpen(t, Options{Dir: src})
	for i := range 3000 {
		mustIncr(t, s, fmt.Appendf(nil, "name-%d", i))
	}
	mustClose(t, s)
	good, err := os.ReadFile(filepath.Join(src, FileName))
	if err != nil {
		t.Fatal(err)
	}
	m, err := checkMetaPagesOf(filepath.Join(src, FileName))
	if err != nil {
		t.Fatal(err)
	}
	ps := int(m.pageSize)
	for pages := 2; pages < int(m.pgid); pages++ {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, FileName), good[:pages*ps], 0o644); err != nil {
			t.Fatal(err)
		}
		s, err := Open(Options{Dir: dir})
		if err == nil {
			s.Close()
			t.Fatalf("a file cut to %d of its %d pages opened", pages, m.pgid)
		}
		// Refused before it is mapped: by the size check, not by luck
		// in reading pages past its end.
		if !strings.Contains(err.Error(), "truncated") {
			t.Fatalf("a file cut to %d of its %d pages: %v, want it called truncated", pages, m.pgid, err)
		}
	}
}

// checkMetaPagesOf reads the newest valid meta page of the file at path.
func checkMetaPagesOf(path string) (boltMeta, error) {
	f, err := os.Open(path)
	if err != nil {
		return boltMeta{}, err
	}
	defer f.Close()
	return readMeta(f, 0)
}

// TestCheckRefusesALockOfAnotherValue: a lock record is the value 1; one
// with a right checksum and another value (0, 2) is a damaged record,
// which visitors check reports, naming the key and the value, and which
// Open refuses.
func TestCheckRefusesALockOfAnotherValue(t *testing.T) {
	for _, n := range []uint64{0, 2} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			dir := t.TempDir()
			s := mustOpen(t, Options{Dir: dir})
			if _, err := s.Lock(ctx, []byte("b"), true); err != nil {
				t.Fatal(err)
			}
			mustClose(t, s)
			kp := keyPrefix([]byte("b"))
			writeBolt(t, filepath.Join(dir, FileName), nil, func(tx *bolt.Tx) error { return tx.Bucket(bucketLocks).Put(kp, record(tagLocks, kp, n)) })
			var out bytes.Buffer
			want := fmt.Sprintf(`the lock of key "b": value %d, want 1`, n)
			if err := Check(dir, &out, 0); err == nil || !strings.Contains(out.String(), want) {
				t.Errorf("Check = %v, %q; want the record refused: %s", err, out.String(), want)
			}
			if s, err := Open(Options{Dir: dir}); err == nil || !strings.Contains(err.Error(), want) {
				if err == nil {
					s.Close()
				}
				t.Errorf("Open = %v, want the record refused: %s", err, want)
			}
		})
	}
}

// TestOpenWithTheFirstMetaPageTorn: bbolt keeps two meta pages and reads
// the valid one, so a store whose first meta page is damaged (a torn
// write) and whose second holds the last commit opens with every count:
// the check of the meta pages before bbolt maps the file looks for the
// second at the machine's page size when the first cannot say where it
// is, and does not refuse the file.
func TestOpenWithTheFirstMetaPageTorn(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, FileName)
	s := mustOpen(t, Options{Dir: dir})
	mustIncrN(t, s, "a", 3)
	mustClose(t, s)
	metas := func() (m0, m1 boltMeta) {
		t.Helper()
		f, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		if m0, err = readMeta(f, 0); err != nil {
			t.Fatal(err)
		}
		if m1, err = readMeta(f, int64(m0.pageSize)); err != nil {
			t.Fatal(err)
		}
		return m0, m1
	}
	// The last commit on the second page: an empty commit moves it there
	// if it is on the first (bbolt alternates).
	if m0, m1 := metas(); m0.txid > m1.txid {
		writeBolt(t, path, nil, func(*bolt.Tx) error { return nil })
		if m0, m1 = metas(); m0.txid > m1.txid {
			t.Fatalf("the last commit is still on the first meta page (txids %d, %d)", m0.txid, m1.txid)
		}
	}
	corrupt(t, path, pageHeaderSize+metaChecksumOff, pageHeaderSize+metaChecksumOff+8) // its checksum
	r, err := Open(Options{Dir: dir})
	if err != nil {
		t.Fatalf("Open with the first meta page torn: %v", err)
	}
	defer mustClose(t, r)
	if c := mustGet(t, r, []byte("a")); c.Total != 3 {
		t.Errorf("a = %+v, want total 3", c)
	}
}

// TestOpenPageSizesOfOtherMachines: bbolt writes a file with the page
// size of the machine that made it (64 KiB on some arm64 and ppc64le
// kernels) or the one it is told, any power of two from 512 bytes to 64
// KiB; a store moved from such a machine opens here, counts and reopens.
func TestOpenPageSizesOfOtherMachines(t *testing.T) {
	for _, ps := range []int{512, 1024, 16 << 10, 64 << 10} {
		t.Run(fmt.Sprint(ps), func(t *testing.T) {
			dir := t.TempDir()
			writeBolt(t, filepath.Join(dir, FileName), &bolt.Options{PageSize: ps}, func(tx *bolt.Tx) error {
				if err := createBuckets(tx); err != nil {
					return err
				}
				kp := keyPrefix([]byte("a"))
				return tx.Bucket(bucketTotals).Put(kp, record(tagTotals, kp, 41))
			})
			s, err := Open(Options{Dir: dir})
			if err != nil {
				t.Fatalf("Open of a file with %d-byte pages: %v", ps, err)
			}
			mustIncr(t, s, []byte("a"))
			s = reopen(t, s, Options{Dir: dir})
			if c := mustGet(t, s, []byte("a")); c.Total != 42 {
				t.Errorf("%d-byte pages: a = %+v after a visit and a reopen, want total 42", ps, c)
			}
			mustClose(t, s)
		})
	}
}

// TestCheckOfAStoreInUseIsRefused: visitors check of a directory whose
// store another process (here another Open) holds is refused at once,
// saying so, rather than waiting for the lock for ever.
func TestCheckOfAStoreInUseIsRefused(t *testing.T) {
	dir := t.TempDir()
	s := mustOpen(t, Options{Dir: dir})
	defer mustClose(t, s)
	done := make(chan error, 1)
	go func() { done <- Check(dir, new(bytes.Buffer), 0) }()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "another process has it open") {
			t.Errorf("Check of a store in use = %v, want it refused: another process has it open", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Check of a store in use still waits for its lock after 10 s")
	}
}

// TestOpenWhileTheStoreIsReadIsRefused: a store that another process
// reads (visitors check or export: a read-only open, which shares the
// file's lock, so the check of the file before Open passes) is refused
// by Open at once, saying so, rather than waited for.
func TestOpenWhileTheStoreIsReadIsRefused(t *testing.T) {
	dir := t.TempDir()
	mustClose(t, mustOpen(t, Options{Dir: dir}))
	reader, err := bolt.Open(filepath.Join(dir, FileName), 0o644, &bolt.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	type opened struct {
		s   *Store
		err error
	}
	done := make(chan opened, 1)
	go func() { s, err := Open(Options{Dir: dir}); done <- opened{s, err} }()
	select {
	case o := <-done:
		if o.err == nil {
			o.s.Close()
		}
		if o.err == nil || !strings.Contains(o.err.Error(), "another process has it open") {
			t.Errorf("Open of a store being read = %v, want it refused: another process has it open", o.err)
		}
		reader.Close()
	case <-time.After(10 * time.Second):
		reader.Close()
		if o := <-done; o.err == nil {
			o.s.Close()
		}
		t.Fatal("Open of a store being read still waited for its lock after 10 s")
	}
}
