// The file as a whole: its modes, opening and locking it, the checks of
// its meta pages, format and records (at open, in the background, and
// [Check]), adding the buckets of later formats and migrating format 1.
// The encoding of what it holds is in format.go.

package boltstore

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"time"

	bolt "go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"

	"visitors/internal/store"
)

// FileName is the bbolt file inside the data directory.
const FileName = "visitors.db"

// The modes the store creates its data directory and its files with: the
// files hold the owner's token hashes, private keys and today's
// unique-visitor sketches, which no one else on the host may read. An
// existing directory keeps its modes: [LooseModes] says what to change.
const (
	DirMode  fs.FileMode = 0o700
	FileMode fs.FileMode = 0o600
)

// LooseModes returns a line for dir, and for each directory and file
// under it, whose mode lets anyone but its owner in (more than
// [DirMode] or [FileMode]): the path, its mode and the chmod that fixes
// it. It changes nothing; a path it cannot read is skipped.
func LooseModes(dir string) []string {
	var lines []string
	filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		fi, err := d.Info()
		if err != nil {
			return nil
		}
		want := FileMode
		if d.IsDir() {
			want = DirMode
		} else if !fi.Mode().IsRegular() {
			return nil
		}
		if m := fi.Mode().Perm(); m&^want != 0 {
			lines = append(lines, fmt.Sprintf("%s has mode %#o: others on the host may read it; chmod %o %s", path, m, want, path))
		}
		return nil
	})
	return lines
}

// What a user is told to do about a damaged file.
const (
	restoreHint = "restore it from a backup (visitors import), or move it away to start an empty store"
	foreignHint = "refusing to start rather than overwrite it; point -data at another directory"
)

// openDB opens, or creates, the store's file in dir for reading and
// writing. An existing file is first checked without writing a byte:
// its meta pages (see [checkMetaPages]) and its format, and, unless
// lazy, everything (see [checkDB]): checked says whether it was. A lazy
// open checks everything first anyway when the file needs a write at
// open: a file of format 1, which is migrated, or one that lacks a
// bucket, which is added. Errors name the file and say what to do.
func openDB(dir string, lazy bool) (db *bolt.DB, path string, checked bool, err error) {
	if err := os.MkdirAll(dir, DirMode); err != nil {
		return nil, "", false, fmt.Errorf("create data directory %s: %w", dir, err)
	}
	path = filepath.Join(dir, FileName)
	exists := false
	switch _, err := os.Stat(path); {
	case err == nil:
		exists = true
		if err := checkMetaPages(path); err != nil {
			return nil, "", false, err
		}
	case !errors.Is(err, fs.ErrNotExist):
		return nil, "", false, fmt.Errorf("open %s: %w", path, err)
	}
	db, err = boltOpen(path, &bolt.Options{Timeout: 200 * time.Millisecond})
	if err != nil {
		return nil, "", false, err
	}
	fail := func(err error) (*bolt.DB, string, bool, error) {
		db.Close()
		return nil, "", false, err
	}
	if !exists {
		if err := db.Update(createBuckets); err != nil {
			return fail(fmt.Errorf("open %s: %w", path, err))
		}
		return db, path, true, nil
	}
	format, complete, err := fileFormat(db)
	if err != nil {
		return fail(fmt.Errorf("read %s: %w", path, err))
	}
	if !lazy || format == formatValueV1 || !complete {
		if err := checkDB(db, path); err != nil {
			return fail(err)
		}
		checked = true
	}
	if format == formatValueV1 {
		err = db.Update(migrateV1)
	} else {
		err = addBuckets(db)
	}
	if err != nil {
		return fail(fmt.Errorf("open %s: %w", path, err))
	}
	return db, path, checked, nil
}

// fileFormat returns the format of the store in db, and whether it has
// every bucket (a format 1 file never has: it is migrated). An error is a
// file that is no visitors store at all.
func fileFormat(db *bolt.DB) (format string, complete bool, err error) {
	err = safely(func() error {
		return db.View(func(tx *bolt.Tx) error {
			if format, err = checkFormat(tx); err != nil {
				return err
			}
			complete = format != formatValueV1
			for _, b := range append([][]byte{bucketTotals, bucketDays}, laterBuckets...) {
				complete = complete && tx.Bucket(b) != nil
			}
			return nil
		})
	})
	if errors.Is(err, errDamagedPage) {
		err = fmt.Errorf("the file is damaged: %w; %s", err, restoreHint)
	}
	return format, complete, err
}

// safely runs fn, which reads the file, and returns its error, or the
// panic bbolt raises on some damaged pages as an error (unchecked pages
// are read before the background check: see [Open]).
func safely(fn func() error) (err error) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%w (%v)", errDamagedPage, r)
		}
	}()
	return fn()
}

// errDamagedPage is a page that made bbolt panic.
var errDamagedPage = errors.New("a damaged page")

// checkFormat returns the format the meta bucket of tx names, or an error
// if tx is no visitors store of a format this binary reads.
func checkFormat(tx *bolt.Tx) (string, error) {
	meta := tx.Bucket(bucketMeta)
	if meta == nil {
		empty := true
		tx.ForEach(func([]byte, *bolt.Bucket) error { empty = false; return nil })
		if empty {
			return "", fmt.Errorf("an empty bbolt database, not a visitors store; %s", foreignHint)
		}
		return "", fmt.Errorf("a bbolt database, but not a visitors store (no meta bucket); %s", foreignHint)
	}
	format := string(meta.Get(keyFormat))
	if format != formatValue && format != formatValueV2 && format != formatValueV1 {
		return "", fmt.Errorf("format %q, want %q: not a data file this version of visitors can read; %s", format, formatValue, foreignHint)
	}
	return format, nil
}

// boltOpen is bolt.Open with messages that name the file and say what to
// do, and with the panics bbolt raises on some damaged pages turned into
// errors.
func boltOpen(path string, o *bolt.Options) (db *bolt.DB, err error) {
	defer func() {
		if r := recover(); r != nil {
			db, err = nil, fmt.Errorf("open %s: the file is corrupted (%v); %s", path, r, restoreHint)
		}
	}()
	db, err = bolt.Open(path, FileMode, o)
	switch {
	case err == nil:
		return db, nil
	case errors.Is(err, berrors.ErrTimeout):
		return nil, fmt.Errorf("open %s: another process has it open (the file is locked); run one visitors per data directory, and stop it before export, import or check", path)
	case errors.Is(err, berrors.ErrInvalid), errors.Is(err, berrors.ErrVersionMismatch):
		return nil, fmt.Errorf("open %s: not a visitors data file (%v); %s", path, err, foreignHint)
	case errors.Is(err, berrors.ErrChecksum):
		return nil, fmt.Errorf("open %s: the file is corrupted (%v); %s", path, err, restoreHint)
	}
	return nil, fmt.Errorf("open %s: %w", path, err)
}

// laterBuckets are the buckets format 2 gained after its first release:
// a file may lack them.
var laterBuckets = [][]byte{bucketLocks, bucketTokens, bucketFloors}

// addBuckets adds to a format 2 file the later buckets it lacks, writing
// nothing if it has them all.
func addBuckets(db *bolt.DB) error {
	missing := false
	db.View(func(tx *bolt.Tx) error {
		for _, b := range laterBuckets {
			missing = missing || tx.Bucket(b) == nil
		}
		return nil
	})
	if !missing {
		return nil
	}
	return db.Update(func(tx *bolt.Tx) error {
		for _, b := range laterBuckets {
			if _, err := tx.CreateBucketIfNotExists(b); err != nil {
				return err
			}
		}
		return nil
	})
}

// createBuckets makes a new file a visitors store.
func createBuckets(tx *bolt.Tx) error {
	for _, b := range append([][]byte{bucketMeta, bucketTotals, bucketDays}, laterBuckets...) {
		if _, err := tx.CreateBucket(b); err != nil {
			return err
		}
	}
	meta := tx.Bucket(bucketMeta)
	if err := meta.Put(keyFormat, []byte(formatValue)); err != nil {
		return err
	}
	return meta.Put(keyHits, record(tagMeta, keyHits, 0))
}

// migrateV1 rewrites a format 1 store (raw keys, bare values: the empty
// key could not be stored) in format 2, in one transaction.
func migrateV1(tx *bolt.Tx) error {
	type kv struct{ k, v []byte }
	var totals, days []kv
	for _, b := range []struct {
		name []byte
		into *[]kv
	}{{bucketTotals, &totals}, {bucketDays, &days}} {
		err := tx.Bucket(b.name).ForEach(func(k, v []byte) error {
			*b.into = append(*b.into, kv{append([]byte(nil), k...), append([]byte(nil), v...)})
			return nil
		})
		if err != nil {
			return err
		}
	}
	hits := binary.BigEndian.Uint64(tx.Bucket(bucketMeta).Get(keyHits))
	for _, b := range [][]byte{bucketMeta, bucketTotals, bucketDays} {
		if err := tx.DeleteBucket(b); err != nil {
			return err
		}
	}
	if err := createBuckets(tx); err != nil {
		return err
	}
	if err := tx.Bucket(bucketMeta).Put(keyHits, record(tagMeta, keyHits, hits)); err != nil {
		return err
	}
	tb, db := tx.Bucket(bucketTotals), tx.Bucket(bucketDays)
	for _, r := range totals {
		k := keyPrefix(r.k)
		if err := tb.Put(k, record(tagTotals, k, binary.BigEndian.Uint64(r.v))); err != nil {
			return err
		}
	}
	for _, r := range days { // format 1 already prefixed day keys
		if err := db.Put(r.k, record(tagDays, r.k, binary.BigEndian.Uint64(r.v))); err != nil {
			return err
		}
	}
	return nil
}

// Problems a scan finds are reported to a func of this type; it returns
// false to stop the scan.
type reportFunc func(problem string) bool

// verifyFile checks the file at path without writing to it, and returns
// its format. It reads bbolt's meta pages itself first, so that a
// truncated file is refused before it is mapped into memory (touching a
// mapped page past the end of the file is a SIGBUS, not an error), then
// opens it read-only and checks every page with bbolt's own check and
// every record's checksum, stopping at the first problem, which the error
// names.
func verifyFile(path string) (format string, err error) {
	if err := checkMetaPages(path); err != nil {
		return "", err
	}
	db, err := boltOpen(path, &bolt.Options{Timeout: 200 * time.Millisecond, ReadOnly: true})
	if err != nil {
		return "", err
	}
	defer db.Close()
	if err := checkDB(db, path); err != nil {
		return "", err
	}
	format, _, err = fileFormat(db)
	return format, err
}

// checkDB checks the store in db, the file at path, without writing to
// it: bbolt's check of every page, the format, and every record's
// checksum, stopping at the first problem, which the error names.
func checkDB(db *bolt.DB, path string) error {
	var first string
	_, err := scan(db, func(p string) bool {
		if first == "" {
			first = p
		}
		return false
	}, nil)
	if err != nil {
		return fmt.Errorf("read %s: %w", path, err)
	}
	if first != "" {
		return fmt.Errorf("read %s: the file is damaged: %s; %s", path, first, restoreHint)
	}
	return nil
}

// Scan totals of a sound store, for visitors check.
type scanTotals struct {
	hits                  uint64
	keys, days            int
	locks, tokens, floors int
	routeKeys             []string // keys store.KeyIsRoute refuses, made before it did
}

// scan walks a store: bbolt's page check, the format, and every record.
// It reports each problem to report, and returns the format found. An
// error is a file that is no visitors store at all.
func scan(db *bolt.DB, report reportFunc, st *scanTotals) (format string, err error) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		// bbolt panics on some corruptions deep in a page: report them
		// as what they are rather than crash without a word.
		if r := recover(); r != nil {
			report(fmt.Sprintf("a damaged page (%v)", r))
		}
	}()
	if st == nil {
		st = new(scanTotals)
	}
	err = db.View(func(tx *bolt.Tx) error {
		more := true
		for err := range tx.Check() { // drain: Check's goroutine sends them all
			if more {
				// bbolt reports an assertion it recovered as "panic: …".
				more = report("a damaged page: " + strings.TrimPrefix(err.Error(), "panic: "))
			}
		}
		if !more {
			return nil
		}
		var err error
		if format, err = checkFormat(tx); err != nil {
			return err
		}
		meta := tx.Bucket(bucketMeta)
		totals, days := tx.Bucket(bucketTotals), tx.Bucket(bucketDays)
		if totals == nil || days == nil {
			report("a bucket is missing")
			return nil
		}
		if format == formatValueV1 {
			scanV1(meta, totals, days, report, st)
			return nil
		}
		hits, err := readRecord(tagMeta, keyHits, meta.Get(keyHits))
		if err != nil && !report(fmt.Sprintf("the /hi counter: %v", err)) {
			return nil
		}
		st.hits = hits
		if meta.Get(keyHits) == nil && !report("the /hi counter is missing") {
			return nil
		}
		err = totals.ForEach(func(k, v []byte) error {
			key, err := splitTotalKey(k)
			if err == nil {
				_, err = parseTotal(k, v)
			}
			if err != nil {
				if !report(fmt.Sprintf("the total of key %q: %v", shown(k, key), err)) {
					return errStop
				}
				return nil
			}
			st.keys++
			if store.KeyIsRoute(key) {
				st.routeKeys = append(st.routeKeys, string(key))
			}
			return nil
		})
		if err != nil {
			return nil
		}
		err = days.ForEach(func(k, v []byte) error {
			key, d, err := splitDayKey(k)
			if err == nil {
				_, err = readRecord(tagDays, k, v)
			}
			if err != nil {
				if !report(fmt.Sprintf("the count of key %q on %s: %v", shown(k, key), d.Time().Format(time.DateOnly), err)) {
					return errStop
				}
				return nil
			}
			st.days++
			return nil
		})
		if err != nil {
			return nil
		}
		scanOwned(tx, report, st)
		return nil
	})
	return format, err
}

// scanOwned checks the buckets of owner records, where a file has them:
// locks and floors are records, tokens checksummed records of their own.
func scanOwned(tx *bolt.Tx, report reportFunc, st *scanTotals) {
	walk := func(name []byte, what string, n *int, check func(k, v []byte) error) bool {
		b := tx.Bucket(name)
		if b == nil {
			return true
		}
		err := b.ForEach(func(k, v []byte) error {
			key, err := splitTotalKey(k)
			if err == nil {
				err = check(k, v)
			}
			if err != nil {
				if !report(fmt.Sprintf("the %s %q: %v", what, shown(k, key), err)) {
					return errStop
				}
				return nil
			}
			*n++
			return nil
		})
		return err == nil
	}
	lock := checkLock
	floor := func(k, v []byte) error { _, err := readRecord(tagFloors, k, v); return err }
	token := func(k, v []byte) error { _, err := decodeToken(k, v); return err }
	_ = walk(bucketLocks, "lock of key", &st.locks, lock) &&
		walk(bucketTokens, "token", &st.tokens, token) &&
		walk(bucketFloors, "log floor of key", &st.floors, floor)
}

// checkLock checks the lock record v under k: a record of 1.
func checkLock(k, v []byte) error {
	n, err := readRecord(tagLocks, k, v)
	if err == nil && n != 1 {
		err = fmt.Errorf("value %d, want 1", n)
	}
	return err
}

// errStop ends a walk early.
var errStop = errors.New("stop")

// shown is the key to name in a message: the decoded key if it could be
// decoded, else the raw bbolt key.
func shown(raw, key []byte) string {
	if key != nil {
		return string(key)
	}
	return string(raw)
}

// scanV1 checks a format 1 store's structure: it has no checksums.
func scanV1(meta, totals, days *bolt.Bucket, report reportFunc, st *scanTotals) {
	if v := meta.Get(keyHits); len(v) != 8 {
		report("the /hi counter is malformed")
	} else {
		st.hits = binary.BigEndian.Uint64(v)
	}
	totals.ForEach(func(k, v []byte) error {
		if len(v) != 8 {
			report(fmt.Sprintf("the total of key %q is malformed", k))
		}
		st.keys++
		return nil
	})
	days.ForEach(func(k, v []byte) error {
		if _, _, err := splitDayKey(k); err != nil || len(v) != 8 {
			report(fmt.Sprintf("a day record %q is malformed", k))
		}
		st.days++
		return nil
	})
}

// bbolt's file layout, as far as checkMetaPages reads it: each of the
// first two pages holds a page header of 16 bytes and then the meta.
const (
	boltMagic       = 0xED0CDAED
	boltVersion     = 2
	pageHeaderSize  = 16
	metaChecksumOff = 56 // the checksum covers the meta's first 56 bytes
)

// boltMeta is the part of bbolt's meta page checkMetaPages needs.
type boltMeta struct {
	pageSize uint32
	freelist uint64 // the freelist's page, or noFreelist
	pgid     uint64 // the high-water mark: pages the file must hold
	txid     uint64
}

// noFreelist is the freelist page of a file written without one.
const noFreelist = ^uint64(0)

// checkMetaPages reads bbolt's two meta pages of the file at path, as
// bbolt does, and refuses an empty file, a file no meta page of which is
// valid, and a file shorter than the pages its meta page says it holds.
func checkMetaPages(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("%w; check the file's owner and mode, and -data", err)
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return fmt.Errorf("open %s: %w", path, err)
	}
	if !info.Mode().IsRegular() {
		return fmt.Errorf("open %s: not a regular file (%v); %s", path, info.Mode().Type(), foreignHint)
	}
	size := info.Size()
	if size == 0 {
		return fmt.Errorf("open %s: the file is empty, not a visitors store (a truncation, or a crash while it was created); %s", path, restoreHint)
	}
	m0, err0 := readMeta(f, 0)
	off := int64(os.Getpagesize())
	if err0 == nil {
		off = int64(m0.pageSize)
	}
	m1, err1 := readMeta(f, off)
	var m boltMeta
	switch {
	case err0 == nil && err1 == nil:
		m = m0
		if m1.txid > m0.txid {
			m = m1
		}
	case err0 == nil:
		m = m0
	case err1 == nil:
		m = m1
	case errors.Is(err0, errNotBolt) && errors.Is(err1, errNotBolt):
		return fmt.Errorf("open %s: not a visitors data file (not a bbolt database); %s", path, foreignHint)
	default:
		return fmt.Errorf("open %s: the file is corrupted (both meta pages: %v; %v); %s", path, err0, err1, restoreHint)
	}
	if m.freelist == noFreelist {
		// visitors always writes the freelist; without it bbolt rebuilds
		// it at open in a goroutine that cannot recover from a damaged
		// page.
		return fmt.Errorf("open %s: a bbolt database visitors did not write (no freelist); %s", path, foreignHint)
	}
	if need := int64(m.pgid) * int64(m.pageSize); size < need {
		return fmt.Errorf("open %s: the file is truncated (%d bytes, its pages need %d); %s", path, size, need, restoreHint)
	}
	return nil
}

var errNotBolt = errors.New("no bbolt magic")

// readMeta reads and validates the meta page at off.
func readMeta(r io.ReaderAt, off int64) (boltMeta, error) {
	var b [pageHeaderSize + metaChecksumOff + 8]byte
	if _, err := r.ReadAt(b[:], off); err != nil {
		return boltMeta{}, fmt.Errorf("meta page at %d: %w", off, err)
	}
	m := b[pageHeaderSize:]
	le := binary.LittleEndian // bbolt writes its structs in the machine's order
	if le.Uint32(m[0:]) != boltMagic {
		return boltMeta{}, errNotBolt
	}
	if v := le.Uint32(m[4:]); v != boltVersion {
		return boltMeta{}, fmt.Errorf("meta page at %d: version %d", off, v)
	}
	h := fnv.New64a()
	h.Write(m[:metaChecksumOff])
	if h.Sum64() != le.Uint64(m[metaChecksumOff:]) {
		return boltMeta{}, fmt.Errorf("meta page at %d: checksum mismatch", off)
	}
	ps := le.Uint32(m[8:])
	if ps < 512 || ps > 1<<16 || ps&(ps-1) != 0 {
		return boltMeta{}, fmt.Errorf("meta page at %d: page size %d", off, ps)
	}
	return boltMeta{pageSize: ps, freelist: le.Uint64(m[32:]), pgid: le.Uint64(m[40:]), txid: le.Uint64(m[48:])}, nil
}

// Check verifies the store in dir without changing it: bbolt's page
// check, the format, and every record's checksum. It writes what it found
// to w, one line per problem (at most max; <= 0: all) and a summary, and
// returns an error if the store is damaged, missing, or in use.
func Check(dir string, w io.Writer, max int) error {
	path := filepath.Join(dir, FileName)
	for _, l := range LooseModes(dir) {
		fmt.Fprintf(w, "warning: %s\n", l)
	}
	if _, err := os.Stat(path); err != nil {
		return fmt.Errorf("check %s: %w", path, err)
	}
	if fi, err := os.Stat(path + ".import"); err == nil {
		fmt.Fprintf(w, "warning: %s.import (%d bytes) is what an offline import left when it was stopped: the store is as it was before that import; remove the file, and run the import again\n", path, fi.Size())
	}
	if err := checkMetaPages(path); err != nil {
		return err
	}
	db, err := boltOpen(path, &bolt.Options{Timeout: 200 * time.Millisecond, ReadOnly: true})
	if err != nil {
		return err
	}
	defer db.Close()
	n := 0
	first := ""
	var st scanTotals
	format, err := scan(db, func(p string) bool {
		n++
		if first == "" {
			first = p
		}
		fmt.Fprintf(w, "damaged: %s\n", p)
		return max <= 0 || n < max
	}, &st)
	if err != nil {
		return fmt.Errorf("check %s: %w", path, err)
	}
	if n > 0 {
		places := "one place"
		switch {
		case max > 0 && n >= max:
			places = fmt.Sprintf("%d or more places, the first", n)
		case n > 1:
			places = fmt.Sprintf("%d places, the first", n)
		}
		return fmt.Errorf("check %s: the file is damaged in %s: %s; %s", path, places, first, restoreHint)
	}
	note := ""
	if format == formatValueV1 {
		note = " (format 1: no checksums; the service migrates it at start)"
	}
	switch pending, err := logPending(db, dir); {
	case err != nil:
		return fmt.Errorf("check %s: %w", path, err)
	case pending > 0:
		note += fmt.Sprintf("; %s holds %d records of visits not yet in the file (the service stopped without closing; its next start applies them)", LogName, pending)
	}
	owned := ""
	if st.locks > 0 || st.tokens > 0 {
		owned = fmt.Sprintf(", %d locked keys, %d tokens", st.locks, st.tokens)
	}
	// Keys made before the route names were refused (issue 23): an
	// export writes them and an import refuses them, naming the line.
	for i, k := range st.routeKeys {
		if max > 0 && i >= max {
			fmt.Fprintf(w, "warning: %d more keys end in a route name\n", len(st.routeKeys)-i)
			break
		}
		fmt.Fprintf(w, "warning: key %q ends in a route name (%s): an import refuses it; delete it with the owner API (DELETE /api/v1/counters/{key}, the key's slashes as %%2F) before a backup, or drop its line from the dump\n", k, store.MsgRoute)
	}
	fmt.Fprintf(w, "ok: %s: %d keys, %d day records, /hi at %d%s%s\n", path, st.keys, st.days, st.hits, owned, note)
	return nil
}
