package boltstore

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

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
	s = reopen(t, s, Options{Dir: dir})
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

// TestEmptySketch: a sketch's data is opaque bytes, the empty included:
// stored, it reads back as itself (four bytes on disk: its checksum
// alone), never as damage; a stored value shorter than a checksum is
// damage, refused.
func TestEmptySketch(t *testing.T) {
	dir := t.TempDir()
	s := mustOpen(t, Options{Dir: dir})
	d := store.DayOf(storetest.Anchor())
	if err := s.PutSketches(d, []store.Sketch{{Key: []byte("a"), Data: []byte{}}, {Key: []byte("b"), Data: []byte("x")}}); err != nil {
		t.Fatal(err)
	}
	s = reopen(t, s, Options{Dir: dir})
	waitChecked(t, s) // the writes below bypass the store, which holds its own until then
	got := map[string]string{}
	if err := s.LoadSketches(d, func(k, data []byte) error { got[string(k)] = string(data); return nil }); err != nil {
		t.Fatalf("LoadSketches with an empty sketch: %v", err)
	}
	if a, ok := got["a"]; !ok || a != "" || got["b"] != "x" || len(got) != 2 {
		t.Errorf("LoadSketches = %q, want a empty and b \"x\"", got)
	}
	if _, err := s.SketchDays([]byte("a"), d, 2); err != nil {
		t.Errorf("SketchDays of a key with an empty sketch: %v", err)
	}
	// Three bytes: not even a checksum.
	err := s.db.Update(func(tx *bolt.Tx) error {
		return tx.Bucket(bucketUniques).Put(sketchKey(d, []byte("a")), []byte{1, 2, 3})
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.LoadSketches(d, func(k, data []byte) error { return nil }); err == nil || !strings.Contains(err.Error(), "sketch of 3 bytes") {
		t.Errorf("LoadSketches with a 3-byte value = %v, want it refused", err)
	}
	if _, err := s.SketchDays([]byte("a"), d, 1); err == nil {
		t.Errorf("SketchDays of a 3-byte value succeeded, want it refused")
	}
	mustClose(t, s)
}

// TestSketchDaysNamesTheDamagedDay: a damaged sketch among a key's days
// fails SketchDays with an error that names the key and the day of the
// damaged one, so that the operator knows which record to look at.
func TestSketchDaysNamesTheDamagedDay(t *testing.T) {
	s := mustOpen(t, Options{Dir: t.TempDir()})
	defer mustClose(t, s)
	last := store.DayOf(storetest.Anchor())
	for d := last - 2; d <= last; d++ {
		if err := s.PutSketches(d, []store.Sketch{{Key: []byte("a"), Data: []byte("sketch")}}); err != nil {
			t.Fatal(err)
		}
	}
	flip := func(d store.Day) { // the checksum no longer matches, or again
		t.Helper()
		err := s.db.Update(func(tx *bolt.Tx) error {
			k := sketchKey(d, []byte("a"))
			v := bytes.Clone(tx.Bucket(bucketUniques).Get(k))
			v[0] ^= 1
			return tx.Bucket(bucketUniques).Put(k, v)
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	for _, bad := range []store.Day{last - 1, last} {
		flip(bad)
		want := fmt.Sprintf(`the sketch of key "a" on %s`, bad.Time().Format(time.DateOnly))
		if _, err := s.SketchDays([]byte("a"), last, 3); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("SketchDays with the sketch of %s damaged = %v, want it named: %s", bad.Time().Format(time.DateOnly), err, want)
		}
		if _, err := s.SketchDays([]byte("a"), bad-1, 1); err != nil {
			t.Errorf("SketchDays of the day before the damaged one: %v", err)
		}
		flip(bad)
	}
}
