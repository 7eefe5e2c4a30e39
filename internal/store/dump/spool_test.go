package dump

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"visitors/internal/store"
)

// bigDump is a dump of n keys, k0000 up, key i with total i.
func bigDump(n int) string {
	var b strings.Builder
	b.WriteString(head)
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, "\n{\"key\":\"k%04d\",\"total\":%d}", i, i)
	}
	b.WriteString("\n]}\n")
	return b.String()
}

// TestSpoolKeepsTheDumpAndReadsItBack: Spool writes the dump, whole and
// rewound, to a file of dir, hands keys each key and its span, and
// returns the hits; ReadSpooled reads the keys back from their spans in
// any order asked, 1024 a batch.
func TestSpoolKeepsTheDumpAndReadsItBack(t *testing.T) {
	const n = 1030
	in := bigDump(n)
	dir := t.TempDir()
	var order []Spooled
	f, hits, err := Spool(context.Background(), strings.NewReader(in), dir, "spool-*", func(keys []Key, spans []Span) error {
		for i := range keys {
			order = append(order, Spooled{Key: keys[i].Key, At: spans[i]})
		}
		return nil
	})
	if err != nil || hits != 7 || len(order) != n {
		t.Fatalf("Spool: hits %d, %d keys, %v; want 7, %d", hits, len(order), err, n)
	}
	defer os.Remove(f.Name())
	defer f.Close()
	if filepath.Dir(f.Name()) != dir || !strings.HasPrefix(filepath.Base(f.Name()), "spool-") {
		t.Errorf("spooled to %s, want a spool-* file of %s", f.Name(), dir)
	}
	if b, err := io.ReadAll(f); err != nil || string(b) != in {
		t.Fatalf("the spool holds %d bytes (%v), want the dump's %d from its start", len(b), err, len(in))
	}
	// Backwards, then check each key's total and the batches.
	for i, j := 0, len(order)-1; i < j; i, j = i+1, j-1 {
		order[i], order[j] = order[j], order[i]
	}
	var sizes []int
	var got []string
	err = ReadSpooled(f, order, func(batch []Key) error {
		sizes = append(sizes, len(batch))
		for _, k := range batch {
			got = append(got, fmt.Sprintf("%s=%d", k.Key, k.Total))
		}
		return nil
	})
	if err != nil || !reflect.DeepEqual(sizes, []int{1024, 6}) || len(got) != n || got[0] != "k1029=1029" || got[n-1] != "k0000=0" {
		t.Fatalf("ReadSpooled: batches %v, %d keys (%.2q … %.2q), %v; want [1024 6], k1029=1029 first, k0000=0 last", sizes, len(got), got[:min(2, len(got))], got[max(0, len(got)-2):], err)
	}
	for i, g := range got {
		if want := fmt.Sprintf("k%04d=%d", n-1-i, n-1-i); g != want {
			t.Fatalf("key %d read back as %s, want %s", i, g, want)
		}
	}

	// A write's error is ReadSpooled's; a key whose span holds another
	// key, or lies past the end, is an error of the spool.
	boom := errors.New("boom")
	if err := ReadSpooled(f, order[:3], func([]Key) error { return boom }); err != boom {
		t.Errorf("ReadSpooled with a failing write: %v, want it", err)
	}
	swapped := []Spooled{{Key: "k0001", At: order[n-1].At}}
	if err := ReadSpooled(f, swapped, func([]Key) error { return nil }); err == nil || err.Error() != `spool: key "k0001" read back as "k0000"` {
		t.Errorf("ReadSpooled of a span holding another key: %v", err)
	}
	past := []Spooled{{Key: "k0000", At: Span{int64(len(in)), int64(len(in)) + 10}}}
	if err := ReadSpooled(f, past, func([]Key) error { return nil }); err == nil || !strings.HasPrefix(err.Error(), "spool: ") {
		t.Errorf("ReadSpooled of a span past the end: %v, want an error of the spool", err)
	}
	half := []Spooled{{Key: "k0000", At: Span{order[n-1].At.Start, order[n-1].At.End - 1}}}
	if err := ReadSpooled(f, half, func([]Key) error { return nil }); err == nil || !strings.HasPrefix(err.Error(), `spool: key "k0000": `) {
		t.Errorf("ReadSpooled of a span cut short: %v, want an error of the spool naming the key", err)
	}
}

// TestSpoolRefusesLeavingNothing: a refused dump is an invalid dump, a
// canceled import is its context's error and a spool that cannot be
// made is neither; each leaves no file behind, and none calls keys
// after the dump is refused.
func TestSpoolRefusesLeavingNothing(t *testing.T) {
	canceled, cancel := context.WithCancel(context.Background())
	cancel()
	for _, tt := range []struct {
		name    string
		ctx     context.Context
		in      string
		dir     string
		invalid bool
		want    error
	}{
		{"a dump refused", context.Background(), head + "\n{\"key\":1}\n]}", "", true, nil},
		{"an import canceled", canceled, bigDump(3), "", false, context.Canceled},
		{"no folder for the spool", context.Background(), bigDump(3), "missing", false, os.ErrNotExist},
	} {
		dir := t.TempDir()
		f, hits, err := Spool(tt.ctx, strings.NewReader(tt.in), filepath.Join(dir, tt.dir), "spool-*", nil)
		if f != nil || hits != 0 || err == nil || errors.Is(err, store.ErrInvalidDump) != tt.invalid || (tt.want != nil && !errors.Is(err, tt.want)) {
			t.Errorf("%s: %v, %d, %v; want no file and an error (invalid dump: %v, %v)", tt.name, f, hits, err, tt.invalid, tt.want)
		}
		if left, _ := os.ReadDir(dir); len(left) != 0 {
			t.Errorf("%s: left %v behind", tt.name, left)
		}
	}
	// Without a keys function, a good dump spools.
	f, hits, err := Spool(context.Background(), strings.NewReader(bigDump(3)), t.TempDir(), "spool-*", nil)
	if err != nil || hits != 7 {
		t.Fatalf("Spool without keys: %d, %v", hits, err)
	}
	f.Close()
}

// TestContextReaderStops: a context reader reads until its context is
// done, then answers the context's error.
func TestContextReaderStops(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	r := ContextReader(ctx, strings.NewReader("abcdef"))
	buf := make([]byte, 3)
	if n, err := r.Read(buf); n != 3 || err != nil || string(buf) != "abc" {
		t.Fatalf("Read = %d %q, %v", n, buf[:n], err)
	}
	cancel()
	if n, err := r.Read(buf); n != 0 || err != context.Canceled {
		t.Errorf("Read after cancel = %d, %v; want 0, context.Canceled", n, err)
	}
}
