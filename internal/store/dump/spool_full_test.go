package dump_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"syscall"
	"testing"

	"visitors/internal/store"
	"visitors/internal/store/dump"
	"visitors/internal/store/storetest"
)

// TestSpoolOnAFullDiskIsNotABadDump: a spool that cannot be written (the
// disk is full) is the spool's error, EFBIG, and not a refused dump
// (store.ErrInvalidDump, which the API answers 400), and leaves no file.
func TestSpoolOnAFullDiskIsNotABadDump(t *testing.T) {
	if !storetest.OwnProcess(t) {
		return
	}
	var b strings.Builder
	b.WriteString(`{"format":"visitors-export-1","hits":1,"keys":[`)
	for i := range 5000 { // about 150 KB
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, "\n{\"key\":\"key%05d\",\"total\":%d}", i, i)
	}
	b.WriteString("\n]}\n")
	dir := t.TempDir()
	var f *os.File
	var err error
	storetest.WithFileSizeLimit(t, 64<<10, func() {
		f, _, err = dump.Spool(context.Background(), strings.NewReader(b.String()), dir, "spool-*", nil)
	})
	if f != nil || err == nil || errors.Is(err, store.ErrInvalidDump) || !errors.Is(err, syscall.EFBIG) || !strings.HasPrefix(err.Error(), "spool: ") {
		t.Errorf("Spool with a full disk = %v, %v; want no file and the spool's error (EFBIG), not ErrInvalidDump", f, err)
	}
	if left, _ := os.ReadDir(dir); len(left) != 0 {
		t.Errorf("left %v behind", left)
	}
}
