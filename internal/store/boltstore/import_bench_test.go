package boltstore

import (
	"bytes"
	"strconv"
	"testing"
	"time"

	"visitors/internal/store"
	"visitors/internal/store/storetest"
)

// BenchmarkImport: an online import of 100,000 keys without later
// dates, merged into a store that holds them all (each key's entry is
// looked up) or into an empty one. With -short (./scripts/test.sh's
// pass that runs every benchmark once, to see that it works) it imports
// 1,000: the 100,000 took 34 s of that pass on a busy machine.
func BenchmarkImport(b *testing.B) {
	keys := 100_000
	if testing.Short() {
		keys = 1_000
	}
	now := storetest.At(0, "12:00")
	date := store.DayOf(now).Time().Format(time.DateOnly)
	var buf bytes.Buffer
	buf.WriteString(`{"format":"visitors-export-1","hits":0,"keys":[`)
	for i := range keys {
		if i > 0 {
			buf.WriteByte(',')
		}
		buf.WriteString(`{"key":"key-` + strconv.Itoa(i) + `","total":3,"days":{"` + date + `":3}}`)
	}
	buf.WriteString(`]}`)
	dump := buf.Bytes()
	for _, held := range []bool{false, true} {
		b.Run("keys="+strconv.Itoa(keys)+"/held="+strconv.FormatBool(held), func(b *testing.B) {
			for b.Loop() {
				b.StopTimer()
				s, err := Open(Options{Dir: b.TempDir(), Now: func() time.Time { return now }})
				if err != nil {
					b.Fatal(err)
				}
				<-s.checked
				if held {
					if err := s.Import(ctx, bytes.NewReader(dump), false); err != nil {
						b.Fatal(err)
					}
				}
				b.StartTimer()
				if err := s.Import(ctx, bytes.NewReader(dump), false); err != nil {
					b.Fatal(err)
				}
				b.StopTimer()
				s.Close()
				b.StartTimer()
			}
		})
	}
}
