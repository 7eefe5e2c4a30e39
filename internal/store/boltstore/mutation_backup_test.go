package boltstore

import (
	"crypto/sha256"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"visitors/internal/store"
	"visitors/internal/store/dump"
	"visitors/internal/store/storetest"
)

// The tests of this file were written for the mutants of backup.go
// that survived issue 16's fourth round: each states the promise the
// mutant broke.

// TestOfflineReplaceKeepsEveryToken: a replacing offline import keeps
// every one of the owner's tokens, field for field, not only the first.
func TestOfflineReplaceKeepsEveryToken(t *testing.T) {
	dir := t.TempDir()
	created := storetest.At(0, "12:00")
	s := mustOpen(t, Options{Dir: dir})
	var want []store.Token
	for i, id := range []string{"t1", "t2", "t3"} {
		tk := store.Token{ID: id, Name: "owner " + id, Prefix: "p" + id, Exact: i == 1, Hash: sha256.Sum256([]byte(id)), Created: created.Add(time.Duration(i) * time.Second)}
		if err := s.PutToken(ctx, tk); err != nil {
			t.Fatal(err)
		}
		want = append(want, tk)
	}
	mustIncrN(t, s, "old", 1)
	mustClose(t, s)

	if err := Import(dir, strings.NewReader(`{"format":"visitors-export-1","hits":0,"keys":[{"key":"new","total":2}]}`), true); err != nil {
		t.Fatal(err)
	}
	s = mustOpen(t, Options{Dir: dir})
	defer mustClose(t, s)
	got, err := s.Tokens(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("after a replacing import, tokens\n%+v\nwant\n%+v", got, want)
	}
	if c := mustGet(t, s, []byte("new")); c.Total != 2 || s.Keys() != 1 {
		t.Errorf("new = %+v with %d keys, want total 2 and the one key of the dump", c, s.Keys())
	}
}

// openIn returns the files and directories at or under dir that the
// process holds open, from /proc/self/fd.
func openIn(t *testing.T, dir string) []string {
	t.Helper()
	fds, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skipf("no /proc/self/fd: %v", err)
	}
	var open []string
	for _, fd := range fds {
		target, err := os.Readlink(filepath.Join("/proc/self/fd", fd.Name()))
		if err == nil && (target == dir || strings.HasPrefix(target, dir+string(filepath.Separator))) {
			open = append(open, target)
		}
	}
	return open
}

// TestBackupClosesWhatItOpens: an offline import, into a new directory
// or onto a store, and an export leave nothing of the data directory
// open, the directory itself included (it is opened to make the rename
// durable).
func TestBackupClosesWhatItOpens(t *testing.T) {
	dir := t.TempDir()
	dump := `{"format":"visitors-export-1","hits":1,"keys":[{"key":"a","total":1}]}`
	for _, step := range []struct {
		name string
		run  func() error
	}{
		{"an import into a new directory", func() error { return Import(dir, strings.NewReader(dump), false) }},
		{"an import onto the store", func() error { return Import(dir, strings.NewReader(dump), false) }},
		{"a replacing import", func() error { return Import(dir, strings.NewReader(dump), true) }},
		{"an export", func() error { return Export(dir, io.Discard) }},
	} {
		if err := step.run(); err != nil {
			t.Fatalf("%s: %v", step.name, err)
		}
		if open := openIn(t, dir); len(open) != 0 {
			t.Errorf("after %s, the process holds open %v", step.name, open)
		}
	}
}

// importTxns imports a dump of n keys into a new directory with
// importBatch set to batch, and returns the id of the last transaction
// of the file it made: how many transactions the import wrote.
func importTxns(t *testing.T, n, batch int) uint64 {
	t.Helper()
	defer func(b int) { importBatch = b }(importBatch)
	importBatch = batch
	var dump strings.Builder
	dump.WriteString(`{"format":"visitors-export-1","hits":1,"keys":[`)
	for i := range n {
		if i > 0 {
			dump.WriteString(",")
		}
		fmt.Fprintf(&dump, "\n{\"key\":\"k%d\",\"total\":1}", i)
	}
	dump.WriteString("\n]}\n")
	dir := t.TempDir()
	if err := Import(dir, strings.NewReader(dump.String()), false); err != nil {
		t.Fatal(err)
	}
	db, err := bolt.Open(filepath.Join(dir, FileName), 0o644, &bolt.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var id uint64
	if err := db.View(func(tx *bolt.Tx) error {
		id = uint64(tx.ID())
		if k := tx.Bucket(bucketTotals).Stats().KeyN; k != n {
			return fmt.Errorf("%d keys in the file, want %d", k, n)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return id
}

// TestImportWritesABatchPerTransaction: an import writes importBatch
// keys per transaction, neither one transaction per key nor all keys in
// one: 7 keys in batches of 3 take two transactions more than in one
// batch (3 + 3 + 1 against 7).
func TestImportWritesABatchPerTransaction(t *testing.T) {
	whole, batched := importTxns(t, 7, 100), importTxns(t, 7, 3)
	if batched-whole != 2 {
		t.Errorf("7 keys: transaction ids %d in batches of 3, %d in one batch; want 2 more transactions for batches of 3", batched, whole)
	}
}

// TestImportTakesAValueOfTheBound: the bound on one JSON value of a dump
// takes a value of exactly dump.MaxValueBytes (4 MiB): here a key's object
// padded with white space inside it, which counts. (One far over it is
// refused: TestImportIsStrict.)
func TestImportTakesAValueOfTheBound(t *testing.T) {
	const plain = `{"key":"a","total":1}`
	obj := `{"key":"a",` + strings.Repeat(" ", dump.MaxValueBytes-len(plain)) + `"total":1}`
	if len(obj) != dump.MaxValueBytes {
		t.Fatalf("the object is %d bytes, want %d", len(obj), dump.MaxValueBytes)
	}
	dir := t.TempDir()
	dump := `{"format":"visitors-export-1","hits":1,"keys":[` + "\n" + obj + "\n]}\n"
	if err := Import(dir, strings.NewReader(dump), false); err != nil {
		t.Fatalf("Import of a key's object of %d bytes: %v", len(obj), err)
	}
	s := mustOpen(t, Options{Dir: dir})
	defer mustClose(t, s)
	if c := mustGet(t, s, []byte("a")); c.Total != 1 {
		t.Errorf("a = %+v, want total 1", c)
	}
}

// TestImportNamesTheLineOfAKeyItCannotAdd: a key whose counts, added to
// the store's, would pass the most a counter or a day holds is refused
// with its own line, wherever it falls in a batch of keys, and not the
// line the import had read to when it wrote the batch.
func TestImportNamesTheLineOfAKeyItCannotAdd(t *testing.T) {
	day := time.Now().UTC().Format(time.DateOnly)
	fullTotal := fmt.Sprintf(`{"key":"full","total":%d}`, uint64(store.MaxTotal))
	fullDay := fmt.Sprintf(`{"key":"full","total":%d,"days":{%q:%d}}`, uint64(store.MaxDay), day, uint64(store.MaxDay))
	tests := []struct {
		name  string
		batch int
		keys  []string // one a line, from line 2
		line  int
		want  string
	}{
		{"a total, in the last batch", 100, []string{`{"key":"a","total":1}`, fullTotal, `{"key":"b","total":1}`}, 3, `key "full": total:`},
		{"a day, in the last batch", 100, []string{`{"key":"a","total":1}`, fullDay, `{"key":"b","total":1}`}, 3, `key "full": day ` + day},
		{"a total, last of a full batch", 2, []string{`{"key":"a","total":1}`, fullTotal, `{"key":"b","total":1}`}, 3, `key "full": total:`},
		{"a total, the last key, a newline after it", 100, []string{`{"key":"a","total":1}`, fullTotal}, 3, `key "full": total:`},
		{"a total, first of a full batch", 2, []string{`{"key":"a","total":1}`, `{"key":"b","total":1}`, fullTotal, `{"key":"c","total":1}`, `{"key":"d","total":1}`}, 4, `key "full": total:`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			defer func(b int) { importBatch = b }(importBatch)
			importBatch = tt.batch
			dir := t.TempDir()
			s := mustOpen(t, Options{Dir: dir})
			mustIncrN(t, s, "full", 1)
			mustClose(t, s)
			dump := `{"format":"visitors-export-1","hits":1,"keys":[` + "\n" + strings.Join(tt.keys, ",\n") + "\n]}\n"
			err := Import(dir, strings.NewReader(dump), false)
			if want := fmt.Sprintf("line %d: %s", tt.line, tt.want); err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "above the most it may hold") {
				t.Errorf("Import = %v, want an error containing %q and saying the count is above the most it may hold", err, want)
			}
		})
	}
}
