package boltstore

import (
	"bytes"
	"errors"
	"fmt"
	"testing"

	bolt "go.etcd.io/bbolt"

	"visitors/internal/store"
	"visitors/internal/store/storetest"
)

// TestSketchesSurviveReopen: every hostile key's sketches come back
// after a restart, by day and by key, and a file without sketches reads
// as none.
func TestSketchesSurviveReopen(t *testing.T) {
	dir := t.TempDir()
	s := mustOpen(t, Options{Dir: dir})
	d := store.DayOf(storetest.Anchor())
	if got, err := s.SketchDays([]byte("k"), d, 3); err != nil || len(got) != 3 || got[0] != nil {
		t.Fatalf("SketchDays on a new file = %v, %v", got, err)
	}
	var put []store.Sketch
	for i, k := range storetest.HostileKeys() {
		put = append(put, store.Sketch{Key: k, Data: []byte(fmt.Sprintf("sketch %d", i))})
	}
	if err := s.PutSketches(d, put); err != nil {
		t.Fatal(err)
	}
	if err := s.PutSketches(d-1, []store.Sketch{{Key: put[0].Key, Data: []byte("yesterday")}}); err != nil {
		t.Fatal(err)
	}
	mustClose(t, s)

	s = mustOpen(t, Options{Dir: dir})
	defer mustClose(t, s)
	got := map[string]string{}
	if err := s.LoadSketches(d, func(k, data []byte) error { got[string(k)] = string(data); return nil }); err != nil {
		t.Fatal(err)
	}
	if len(got) != len(put) {
		t.Errorf("LoadSketches gave %d sketches, want %d", len(got), len(put))
	}
	for _, p := range put {
		if got[string(p.Key)] != string(p.Data) {
			t.Errorf("key %q: sketch %q, want %q", p.Key, got[string(p.Key)], p.Data)
		}
	}
	days, err := s.SketchDays(put[0].Key, d, 3)
	if err != nil || days[0] != nil || string(days[1]) != "yesterday" || string(days[2]) != "sketch 0" {
		t.Errorf("SketchDays = %q, %v", days, err)
	}
	if err := s.PutSketches(d, []store.Sketch{{Key: bytes.Repeat([]byte("k"), store.MaxKeyBytes+1)}}); !errors.Is(err, store.ErrKeyTooLong) {
		t.Errorf("PutSketches of a long key = %v, want ErrKeyTooLong", err)
	}
}

// TestSketchChecksum: a flipped byte in a stored sketch is an error, not
// a wrong count.
func TestSketchChecksum(t *testing.T) {
	s := mustOpen(t, Options{Dir: t.TempDir()})
	defer mustClose(t, s)
	d := store.DayOf(storetest.Anchor())
	if err := s.PutSketches(d, []store.Sketch{{Key: []byte("k"), Data: []byte("data")}}); err != nil {
		t.Fatal(err)
	}
	err := s.db.Update(func(tx *bolt.Tx) error {
		k := sketchKey(d, []byte("k"))
		v := append([]byte(nil), tx.Bucket(bucketUniques).Get(k)...)
		v[0] ^= 1
		return tx.Bucket(bucketUniques).Put(k, v)
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.SketchDays([]byte("k"), d, 1); !errors.Is(err, errChecksum) {
		t.Errorf("SketchDays of a flipped sketch = %v, want a checksum error", err)
	}
	if err := s.LoadSketches(d, func(_, _ []byte) error { return nil }); !errors.Is(err, errChecksum) {
		t.Errorf("LoadSketches of a flipped sketch = %v, want a checksum error", err)
	}
}
