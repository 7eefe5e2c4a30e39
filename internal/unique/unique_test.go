package unique

import (
	"bytes"
	"errors"
	"math"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/axiomhq/hyperloglog"
	"github.com/rs/zerolog"

	"visitors/internal/store"
	"visitors/internal/store/storetest"
)

var day0 = storetest.At(2, "09:00")

func mustCounter(tb testing.TB, o Options) *Counter {
	tb.Helper()
	c, err := New(o)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { c.Close() })
	return c
}

// addr returns the i-th distinct identity.
func addr(i int) netip.Addr {
	return netip.AddrFrom4([4]byte{10, byte(i >> 16), byte(i >> 8), byte(i)})
}

func visit(c *Counter, key string, i int, ua string, now time.Time) {
	v := c.Hash(addr(i), ua, now)
	c.Add([]byte(key), v, now)
}

// TestAccuracy: 10,000 distinct visitors, each seen 4 times, are
// estimated within 2% (precision 14: 0.8% standard error).
func TestAccuracy(t *testing.T) {
	clock := storetest.NewClock(day0)
	c := mustCounter(t, Options{Now: clock.Now})
	for _, n := range []int{1, 10, 100, 1000, 10_000} {
		key := "k" + strconv.Itoa(n)
		for round := range 4 {
			for i := range n {
				visit(c, key, i, "ua", day0)
				_ = round
			}
		}
		got := c.Today([]byte(key), day0)
		if e := math.Abs(float64(got)-float64(n)) / float64(n); e > 0.02 {
			t.Errorf("%d visitors estimated %d: error %.2f%%, want under 2%%", n, got, 100*e)
		} else {
			t.Logf("%d visitors estimated %d (error %.2f%%)", n, got, 100*e)
		}
	}
}

// TestVisitorIsIdentityAndUserAgent: two User-Agents behind one address
// are two visitors; one visitor on two keys counts on each.
func TestVisitorIsIdentityAndUserAgent(t *testing.T) {
	c := mustCounter(t, Options{Now: func() time.Time { return day0 }})
	visit(c, "a", 1, "firefox", day0)
	visit(c, "a", 1, "chrome", day0)
	visit(c, "a", 1, "firefox", day0)
	visit(c, "b", 1, "firefox", day0)
	if got := c.Today([]byte("a"), day0); got != 2 {
		t.Errorf("key a: %d unique, want 2", got)
	}
	if got := c.Today([]byte("b"), day0); got != 1 {
		t.Errorf("key b: %d unique, want 1", got)
	}
}

// TestRestartMidDay: the sketches and the day's seed survive a restart
// on the same day, so the same visitors are not counted again; the seed
// file never holds the key, and the next day gets a new one.
func TestRestartMidDay(t *testing.T) {
	dir := t.TempDir()
	disk := NewMemory() // stands for a store that keeps sketches
	now := day0
	c, err := New(Options{Dir: dir, Store: disk, Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 500 {
		visit(c, "k", i, "ua", now)
	}
	before := c.Today([]byte("k"), now)
	v1 := c.Hash(addr(1), "ua", now)
	k0, k1 := c.key.Load().k0, c.key.Load().k1
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	seed, err := os.ReadFile(filepath.Join(dir, SeedFile))
	if err != nil {
		t.Fatal(err)
	}
	var key [16]byte
	for i := range 8 {
		key[i], key[8+i] = byte(k0>>(8*i)), byte(k1>>(8*i))
	}
	if bytes.Contains(seed, key[:8]) || bytes.Contains(seed, key[8:]) {
		t.Error("the seed file holds the day's key in clear")
	}
	if fi, _ := os.Stat(filepath.Join(dir, SeedFile)); fi.Mode().Perm() != 0o600 {
		t.Errorf("seed file mode %v, want 0600", fi.Mode().Perm())
	}

	now = day0.Add(3 * time.Hour) // the same day
	c = mustCounter(t, Options{Dir: dir, Store: disk, Now: func() time.Time { return now }})
	if v := c.Hash(addr(1), "ua", now); v != v1 {
		t.Error("the day's key changed across a restart")
	}
	for i := range 500 { // the same visitors again
		visit(c, "k", i, "ua", now)
	}
	if got := c.Today([]byte("k"), now); got != before {
		t.Errorf("after a restart the same 500 visitors count %d, want %d as before", got, before)
	}

	now = day0.Add(24 * time.Hour) // the next day: a new key, a new count
	if v := c.Hash(addr(1), "ua", now); v == v1 {
		t.Error("the next day kept the key")
	}
	visit(c, "k", 1, "ua", now)
	if got := c.Today([]byte("k"), now); got != 1 {
		t.Errorf("next day: %d unique, want 1", got)
	}
	days, err := c.Days([]byte("k"), now, 3)
	if err != nil {
		t.Fatal(err)
	}
	if days[0] != 0 || days[1] != before || days[2] != 1 {
		t.Errorf("Days = %v, want [0 %d 1]", days, before)
	}
	c.Close()
	b, _ := os.ReadFile(filepath.Join(dir, SeedFile))
	if bytes.Equal(b, seed) {
		t.Error("the seed file still holds the previous day's seed")
	}
}

// TestRestartAfterMidnight: a seed file of an earlier day is replaced,
// not reused.
func TestRestartAfterMidnight(t *testing.T) {
	dir := t.TempDir()
	c := mustCounter(t, Options{Dir: dir, Now: func() time.Time { return day0 }})
	v1 := c.Hash(addr(1), "ua", day0)
	c.Close()
	next := day0.Add(24 * time.Hour)
	c = mustCounter(t, Options{Dir: dir, Now: func() time.Time { return next }})
	if v := c.Hash(addr(1), "ua", next); v == v1 {
		t.Error("yesterday's seed was reused")
	}
}

func TestBadSeedFile(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, SeedFile), []byte("not a seed"), 0o600)
	if _, err := New(Options{Dir: dir}); err == nil {
		t.Error("New with a foreign seed file succeeded")
	}
}

// TestSketchesAreBounded: a key's sketch never grows past its dense
// size, whatever the number of visitors.
func TestSketchesAreBounded(t *testing.T) {
	disk := NewMemory()
	c := mustCounter(t, Options{Store: disk, Now: func() time.Time { return day0 }})
	for i := range 200_000 {
		visit(c, "k", i, "", day0)
	}
	if err := c.Flush(); err != nil {
		t.Fatal(err)
	}
	var size int
	disk.LoadSketches(store.DayOf(day0), func(_, data []byte) error { size = len(data); return nil })
	if size == 0 || size > 16<<10+64 {
		t.Errorf("sketch of 200,000 visitors is %d bytes, want at most 16 KB", size)
	}
	t.Logf("sketch of 200,000 visitors: %d bytes", size)
}

func TestRepeats(t *testing.T) {
	r := NewRepeats(time.Minute, 0)
	if r.Seen(1, day0) {
		t.Error("first view seen")
	}
	if !r.Seen(1, day0.Add(59*time.Second)) {
		t.Error("view within the window not seen")
	}
	if r.Seen(2, day0) {
		t.Error("another pair seen")
	}
	if r.Seen(1, day0.Add(time.Minute)) {
		t.Error("view after the window seen")
	}
}

func TestRepeatsAreBounded(t *testing.T) {
	r := NewRepeats(time.Hour, 1024)
	for i := range 100_000 {
		r.Seen(uint64(i)*0x9e3779b97f4a7c15, day0)
		if r.Len() > 1024 {
			t.Fatalf("after %d pairs Len() = %d, cap 1024", i+1, r.Len())
		}
	}
}

// TestAddAllocatesNothing: counting a known key's visitor allocates
// nothing.
func TestAddAllocatesNothing(t *testing.T) {
	c := mustCounter(t, Options{Now: func() time.Time { return day0 }})
	key := []byte("k")
	visit(c, "k", 1, "Mozilla/5.0 (X11; Linux x86_64; rv:133.0) Gecko/20100101 Firefox/133.0", day0)
	if got := testing.AllocsPerRun(100, func() {
		v := c.Hash(addr(1), "Mozilla/5.0 (X11; Linux x86_64; rv:133.0) Gecko/20100101 Firefox/133.0", day0)
		c.Pair(v, key, day0)
		c.Add(key, v, day0)
		c.Today(key, day0)
	}); got != 0 {
		t.Errorf("allocs = %v, want 0", got)
	}
}

func BenchmarkAdd(b *testing.B) {
	c := mustCounter(b, Options{Now: func() time.Time { return day0 }})
	key := []byte("k")
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		v := c.Hash(addr(i), "Mozilla/5.0", day0)
		c.Add(key, v, day0)
		i++
	}
}

// TestMemoryKeepsMaxDays: Memory holds the sketches of store.MaxDays
// days, the newest day's included: a day falls out when a day MaxDays
// later is written.
func TestMemoryKeepsMaxDays(t *testing.T) {
	m := NewMemory()
	d0 := store.DayOf(day0)
	key := []byte("k")
	put := func(d store.Day, data string) {
		if err := m.PutSketches(d, []store.Sketch{{Key: key, Data: []byte(data)}}); err != nil {
			t.Fatal(err)
		}
	}
	put(d0, "first")
	put(d0+1, "second")
	put(d0+store.MaxDays-1, "last kept")
	got, err := m.SketchDays(key, d0+1, 2)
	if err != nil || string(got[0]) != "first" || string(got[1]) != "second" {
		t.Fatalf("SketchDays(d0+1, 2) = %q, %v; want first, second", got, err)
	}
	put(d0+store.MaxDays, "new")
	got, _ = m.SketchDays(key, d0+1, 2)
	if got[0] != nil || string(got[1]) != "second" {
		t.Errorf("after day d0+MaxDays: SketchDays(d0+1, 2) = %q, want nil, second", got)
	}
	got, _ = m.SketchDays(key, d0+store.MaxDays, store.MaxDays)
	if string(got[0]) != "second" || string(got[store.MaxDays-2]) != "last kept" || string(got[store.MaxDays-1]) != "new" {
		t.Errorf("SketchDays(d0+MaxDays, MaxDays) = %q", got)
	}
	if got, _ := m.SketchDays([]byte("other"), d0+1, 2); got[0] != nil || got[1] != nil {
		t.Errorf("another key's days = %q, want none", got)
	}
}

// TestMemoryLoadSketches: LoadSketches hands over every sketch of the
// day and stops at the first error fn returns, returning it.
func TestMemoryLoadSketches(t *testing.T) {
	m := NewMemory()
	d := store.DayOf(day0)
	m.PutSketches(d, []store.Sketch{{Key: []byte("a"), Data: []byte("1")}, {Key: []byte("b"), Data: []byte("2")}, {Key: []byte("c"), Data: []byte("3")}})
	m.PutSketches(d+1, []store.Sketch{{Key: []byte("x"), Data: []byte("9")}})
	got := map[string]string{}
	if err := m.LoadSketches(d, func(k, v []byte) error { got[string(k)] = string(v); return nil }); err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 || got["a"] != "1" || got["b"] != "2" || got["c"] != "3" {
		t.Errorf("LoadSketches = %v, want a:1 b:2 c:3", got)
	}
	stop := errors.New("stop")
	calls := 0
	if err := m.LoadSketches(d, func(k, v []byte) error { calls++; return stop }); err != stop || calls != 1 {
		t.Errorf("LoadSketches with a failing fn = %v after %d calls, want stop after 1", err, calls)
	}
}

// failing is a Memory whose writes fail while fail is set, counting
// the sketches it was given to write.
type failing struct {
	*Memory
	fail    atomic.Bool
	written atomic.Int64
}

func (f *failing) PutSketches(d store.Day, s []store.Sketch) error {
	if f.fail.Load() {
		return errors.New("disk on fire")
	}
	f.written.Add(int64(len(s)))
	return f.Memory.PutSketches(d, s)
}

// TestFlushWritesChangesOnce: a flush writes each sketch changed since
// the last one, once; a failed flush returns the error and leaves its
// sketches to the next.
func TestFlushWritesChangesOnce(t *testing.T) {
	disk := &failing{Memory: NewMemory()}
	c := mustCounter(t, Options{Store: disk, Now: func() time.Time { return day0 }})
	visit(c, "a", 1, "ua", day0)
	visit(c, "b", 1, "ua", day0)
	if err := c.Flush(); err != nil || disk.written.Load() != 2 {
		t.Fatalf("first flush: %v, %d sketches written, want 2", err, disk.written.Load())
	}
	if err := c.Flush(); err != nil || disk.written.Load() != 2 {
		t.Errorf("a flush without changes: %v, wrote %d more", err, disk.written.Load()-2)
	}
	visit(c, "a", 2, "ua", day0)
	disk.fail.Store(true)
	if err := c.Flush(); err == nil {
		t.Error("a failed flush returned no error")
	}
	disk.fail.Store(false)
	if err := c.Flush(); err != nil || disk.written.Load() != 3 {
		t.Errorf("the flush after a failed one: %v, %d written in all, want 3", err, disk.written.Load())
	}
	var n int
	disk.LoadSketches(store.DayOf(day0), func(k, data []byte) error {
		h := hyperloglog.New14()
		if err := h.UnmarshalBinary(data); err != nil {
			t.Fatal(err)
		}
		if want := map[string]uint64{"a": 2, "b": 1}[string(k)]; h.Estimate() != want {
			t.Errorf("the written sketch of %s estimates %d, want %d", k, h.Estimate(), want)
		}
		n++
		return nil
	})
	if n != 2 {
		t.Errorf("%d sketches on disk, want 2", n)
	}
}

// TestLoadAtStart: New loads today's sketches, so a restart counts on
// from them before any visit, and logs nothing; a damaged sketch is
// logged, costs its key today's count, and the counter starts.
func TestLoadAtStart(t *testing.T) {
	disk := NewMemory()
	c := mustCounter(t, Options{Store: disk, Now: func() time.Time { return day0 }})
	for i := range 50 {
		visit(c, "good", i, "ua", day0)
	}
	want := c.Today([]byte("good"), day0)
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	var log bytes.Buffer
	c = mustCounter(t, Options{Store: disk, Now: func() time.Time { return day0 }, Log: zerolog.New(&log)})
	if got := c.Today([]byte("good"), day0); got != want {
		t.Errorf("after a restart: %d unique, want %d", got, want)
	}
	if log.Len() != 0 {
		t.Errorf("a clean start logged %s", log.String())
	}
	c.Close()

	// The load stops at a damaged sketch: "good" may come before it or
	// not, so it is left out here.
	disk = NewMemory()
	disk.PutSketches(store.DayOf(day0), []store.Sketch{{Key: []byte("bad"), Data: []byte("not a sketch")}})
	c = mustCounter(t, Options{Store: disk, Now: func() time.Time { return day0 }, Log: zerolog.New(&log)})
	if got := c.Today([]byte("bad"), day0); got != 0 {
		t.Errorf("the damaged sketch's key: %d unique, want 0", got)
	}
	if !strings.Contains(log.String(), `"level":"error"`) || !strings.Contains(log.String(), `key \"bad\"`) {
		t.Errorf("a damaged sketch logged %q, want an error naming its key", log.String())
	}
}

// TestDaysDamagedSketch: a damaged sketch of an earlier day is an error
// that names the key and the day.
func TestDaysDamagedSketch(t *testing.T) {
	disk := NewMemory()
	c := mustCounter(t, Options{Store: disk, Now: func() time.Time { return day0 }})
	disk.PutSketches(store.DayOf(day0)-2, []store.Sketch{{Key: []byte("k"), Data: []byte("not a sketch")}})
	_, err := c.Days([]byte("k"), day0, 5)
	if err == nil || !strings.Contains(err.Error(), `"k"`) || !strings.Contains(err.Error(), storetest.Date(0)) {
		t.Errorf("Days over a damaged sketch = %v, want an error naming k and %s", err, storetest.Date(0))
	}
}

// capped is a log that keeps its first 64 KiB: a test that logs in a
// loop by mistake hangs until its timeout rather than fill the memory.
type capped struct{ bytes.Buffer }

func (c *capped) Write(p []byte) (int, error) {
	if c.Len() < 64<<10 {
		c.Buffer.Write(p)
	}
	return len(p), nil
}

// TestRolloverLogs: the move to a new day writes the old day's
// sketches, logging nothing when that and the new seed succeed, and an
// error for each that fails (a full disk): the new day then counts with
// a key kept in memory. (It once looped for ever there: a seed that
// could not be written left the counter on the old day, so each visit
// moved it again.)
func TestRolloverLogs(t *testing.T) {
	dir := t.TempDir()
	disk := &failing{Memory: NewMemory()}
	var log capped
	c := mustCounter(t, Options{Dir: dir, Store: disk, Now: func() time.Time { return day0 }, Log: zerolog.New(&log)})
	visit(c, "k", 1, "ua", day0)
	day1 := day0.Add(24 * time.Hour)
	visit(c, "k", 1, "ua", day1)
	if log.Len() != 0 {
		t.Errorf("a clean rollover logged %s", log.String())
	}
	if disk.written.Load() != 1 {
		t.Errorf("the rollover wrote %d sketches, want the old day's 1", disk.written.Load())
	}

	disk.fail.Store(true)
	seed := filepath.Join(dir, SeedFile)
	if err := os.Remove(seed); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/dev/full", seed); err != nil {
		t.Fatal(err)
	}
	day2 := day1.Add(24 * time.Hour)
	visit(c, "k", 1, "ua", day2)
	for _, want := range []string{"the last sketches of the day were not written", "the day's seed is in memory only"} {
		if !strings.Contains(log.String(), want) {
			t.Errorf("log %q lacks %q", log.String(), want)
		}
	}
	if got := c.Today([]byte("k"), day2); got != 1 {
		t.Errorf("the day after failed writes counts %d, want 1", got)
	}
	disk.fail.Store(false)
}

// TestSeedFileOverwritten: the day's seed replaces whatever the file
// held, a longer file included, and a restart that day reads it back.
func TestSeedFileOverwritten(t *testing.T) {
	dir := t.TempDir()
	c := mustCounter(t, Options{Dir: dir, Now: func() time.Time { return day0 }})
	seed := filepath.Join(dir, SeedFile)
	if err := os.WriteFile(seed, bytes.Repeat([]byte("x"), 500), 0o600); err != nil {
		t.Fatal(err)
	}
	day1 := day0.Add(24 * time.Hour)
	v := c.Hash(addr(1), "ua", day1) // moves to day1: writes its seed
	c.Close()
	c = mustCounter(t, Options{Dir: dir, Now: func() time.Time { return day1 }})
	if got := c.Hash(addr(1), "ua", day1); got != v {
		t.Error("a restart did not read back the day's seed written over a longer file")
	}
}

// TestRolloverToTheSameDay: of two visits that both saw midnight pass,
// the second to move the counter finds it moved and changes nothing
// (the race is played in order here).
func TestRolloverToTheSameDay(t *testing.T) {
	c := mustCounter(t, Options{Now: func() time.Time { return day0 }})
	day1 := day0.Add(24 * time.Hour)
	visit(c, "k", 1, "ua", day1)
	visit(c, "k", 2, "ua", day1)
	v := c.Hash(addr(1), "ua", day1)
	c.rollover(store.DayOf(day1))
	if got := c.Today([]byte("k"), day1); got != 2 {
		t.Errorf("after a second rollover to the same day: %d unique, want 2", got)
	}
	if c.Hash(addr(1), "ua", day1) != v {
		t.Error("a second rollover to the same day changed the day's key")
	}
}

// TestPair: a pair's hash depends on the whole key, the visitor and
// the day.
func TestPair(t *testing.T) {
	c := mustCounter(t, Options{Now: func() time.Time { return day0 }})
	long := bytes.Repeat([]byte("x"), store.MaxKeyBytes)
	long2 := bytes.Clone(long)
	long2[len(long2)-1] = 'y'
	v := c.Hash(addr(1), "ua", day0)
	seen := map[uint64]string{}
	for _, tt := range []struct {
		name string
		v    uint64
		key  []byte
		now  time.Time
	}{
		{"a", v, []byte("a"), day0},
		{"b", v, []byte("b"), day0},
		{"ab", v, []byte("ab"), day0},
		{"long", v, long, day0},
		{"long, last byte changed", v, long2, day0},
		{"another visitor", v + 1, []byte("a"), day0},
		{"the next day", v, []byte("a"), day0.Add(24 * time.Hour)},
	} {
		h := c.Pair(tt.v, tt.key, tt.now)
		if other, ok := seen[h]; ok {
			t.Errorf("%s hashes as %s", tt.name, other)
		}
		seen[h] = tt.name
	}
	if h := c.Pair(v, []byte("a"), day0.Add(24*time.Hour)); seen[h] != "the next day" {
		t.Error("the same pair hashes differently")
	}
}

// TestRepeatsSameInstant: a second view at the very instant of the
// first is a repeat.
func TestRepeatsSameInstant(t *testing.T) {
	r := NewRepeats(time.Minute, 0)
	r.Seen(1, day0)
	if !r.Seen(1, day0) {
		t.Error("a view at the instant of the first is not a repeat")
	}
}

// TestRepeatsHoldMax: a Repeats holds max pairs (max <= 0: the default)
// when they spread evenly; past that, a full part of the table forgets
// the pairs older than the window first, and only those, or else an
// eighth of its pairs.
func TestRepeatsHoldMax(t *testing.T) {
	r := NewRepeats(time.Hour, 0)
	if got := r.perShard * numShards; got != DefaultMaxRepeats {
		t.Errorf("max 0 holds %d pairs, want %d", got, DefaultMaxRepeats)
	}
	const max = 16 * numShards
	r = NewRepeats(time.Hour, max)
	for h := range uint64(max) { // h % numShards: each part gets 16
		if r.Seen(h, day0) {
			t.Fatalf("pair %d seen before", h)
		}
	}
	if r.Len() != max {
		t.Fatalf("Len() = %d, want %d", r.Len(), max)
	}
	for h := range uint64(max) {
		if !r.Seen(h, day0.Add(time.Minute)) {
			t.Fatalf("pair %d of %d forgotten", h, max)
		}
	}
	r.Seen(max, day0) // part 0 is full, every pair recent: an eighth goes
	if got := r.Len(); got != max-2+1 {
		t.Errorf("after one more pair Len() = %d, want %d", got, max-2+1)
	}

	r = NewRepeats(time.Hour, max)
	for i := range uint64(16) { // part 0: 6 pairs a window old or more, 10 recent
		at := day0.Add(-time.Hour + time.Nanosecond)
		switch {
		case i < 5:
			at = day0.Add(-2 * time.Hour)
		case i == 5:
			at = day0.Add(-time.Hour)
		}
		r.Seen(i*numShards, at)
	}
	r.Seen(16*numShards, day0)
	if got := r.Len(); got != 11 {
		t.Errorf("Len() = %d, want 11: the 6 old pairs forgotten", got)
	}
	for i := uint64(6); i <= 16; i++ {
		if !r.Seen(i*numShards, day0) {
			t.Errorf("recent pair %d forgotten", i*numShards)
		}
	}
}

// TestForget: a forgotten key shows no visitors, its sketch in the
// store is written over with an empty one (a flush that wrote it after
// the store's delete brings nothing back at a restart), other keys keep
// theirs, and visitors after it count anew.
func TestForget(t *testing.T) {
	disk := NewMemory()
	now := day0
	opts := Options{Dir: t.TempDir(), Store: disk, Now: func() time.Time { return now }, FlushInterval: time.Hour}
	c := mustCounter(t, opts)
	for i := range 50 {
		visit(c, "gone", i, "ua", now)
		visit(c, "kept", i, "ua", now)
	}
	if err := c.Flush(); err != nil { // the store holds both sketches
		t.Fatal(err)
	}
	if err := c.Forget([][]byte{[]byte("gone")}); err != nil {
		t.Fatal(err)
	}
	if got := c.Today([]byte("gone"), now); got != 0 {
		t.Errorf("a forgotten key shows %d visitors, want 0", got)
	}
	if held := c.Held(); len(held) != 1 || string(held[0]) != "kept" {
		t.Errorf("Held = %q, want only kept", held)
	}
	visit(c, "gone", 1000, "ua", now)
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	c = mustCounter(t, opts)
	if got := c.Today([]byte("gone"), now); got != 1 {
		t.Errorf("after a restart, the forgotten key shows %d visitors, want the 1 since", got)
	}
	if got := c.Today([]byte("kept"), now); got < 49 || got > 51 {
		t.Errorf("after a restart, another key shows %d visitors, want about 50", got)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}

	// Without the visit after it, the forgotten key's sketch in the store
	// is the empty one, not the one flushed before.
	c = mustCounter(t, opts)
	for i := range 50 {
		visit(c, "again", i, "ua", now)
	}
	if err := c.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := c.Forget([][]byte{[]byte("again")}); err != nil {
		t.Fatal(err)
	}
	days, err := disk.SketchDays([]byte("again"), store.DayOf(now), 1)
	if err != nil {
		t.Fatal(err)
	}
	h := hyperloglog.New14()
	if len(days) != 1 || days[0] == nil || h.UnmarshalBinary(days[0]) != nil || h.Estimate() != 0 {
		t.Errorf("the store's sketch of a forgotten key = %d bytes, want an empty sketch", len(days[0]))
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestTodayLagsAtMostAShare: Today reads every change of a key with
// fewer than staleShare visitors at once, and beyond that serves its last
// estimate until more than 1/staleShare of it has been added: it never
// lags the sketch by more, and computes the estimate again past it.
func TestTodayLagsAtMostAShare(t *testing.T) {
	c := mustCounter(t, Options{Now: func() time.Time { return day0 }})
	key := []byte("k")
	ref := hyperloglog.New14() // the same visitors, estimated every time
	add := func(i int) {
		v := c.Hash(addr(i), "ua", day0)
		c.Add(key, v, day0)
		ref.InsertHash(v)
	}
	i := 0
	for ; i < staleShare; i++ {
		add(i)
		if got, want := c.Today(key, day0), ref.Estimate(); got != want {
			t.Fatalf("after %d visitors Today = %d, want the sketch's %d at once", i+1, got, want)
		}
	}
	for ; i < 20_000; i++ {
		add(i)
	}
	est := c.Today(key, day0)
	if want := ref.Estimate(); est != want {
		t.Fatalf("Today = %d, want %d", est, want)
	}
	share := int(est / staleShare)
	for range share {
		add(i)
		i++
	}
	if got := c.Today(key, day0); got != est {
		t.Errorf("after %d more visitors (1/%d of %d) Today = %d, want the last estimate %d", share, staleShare, est, got, est)
	}
	if ref.Estimate() == est {
		t.Log("the sketch's estimate did not move: the lag is not shown")
	}
	add(i)
	if got, want := c.Today(key, day0), ref.Estimate(); got != want {
		t.Errorf("after %d more visitors Today = %d, want the sketch's %d", share+1, got, want)
	}
}

// BenchmarkTodayWhileCounting: a JSON read of a counter with 20,000
// unique visitors today, each read after a new visitor.
func BenchmarkTodayWhileCounting(b *testing.B) {
	c := mustCounter(b, Options{Now: func() time.Time { return day0 }})
	key := []byte("k")
	for i := range 20_000 {
		visit(c, "k", i, "ua", day0)
	}
	b.ReportAllocs()
	i := 20_000
	for b.Loop() {
		visit(c, "k", i, "ua", day0)
		c.Today(key, day0)
		i++
	}
}

func BenchmarkTodayWhileCountingParallel(b *testing.B) {
	c := mustCounter(b, Options{Now: func() time.Time { return day0 }})
	key := []byte("k")
	for i := range 20_000 {
		visit(c, "k", i, "ua", day0)
	}
	var next atomic.Int64
	next.Store(20_000)
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			visit(c, "k", int(next.Add(1)), "ua", day0)
			c.Today(key, day0)
		}
	})
}

// denseSketch returns the bytes of a sketch of n distinct visitors and
// its estimate.
func denseSketch(tb testing.TB, n, from int) ([]byte, uint64) {
	tb.Helper()
	h := hyperloglog.New14()
	for i := range n {
		h.InsertHash(uint64(from+i) * 0x9E3779B97F4A7C15)
	}
	b, err := h.MarshalBinary()
	if err != nil {
		tb.Fatal(err)
	}
	return b, h.Estimate()
}

// TestDaysEstimatesByContent: Days remembers a past day's estimate by
// its sketch's bytes, so a sketch written again (an import, a delete)
// is estimated again, never answered from before; and the memory of
// estimates is bounded.
func TestDaysEstimatesByContent(t *testing.T) {
	m := NewMemory()
	c := mustCounter(t, Options{Store: m, Now: func() time.Time { return day0 }})
	key := []byte("k")
	yesterday := store.DayOf(day0) - 1
	put := func(data []byte) {
		t.Helper()
		if err := m.PutSketches(yesterday, []store.Sketch{{Key: key, Data: data}}); err != nil {
			t.Fatal(err)
		}
	}
	days := func() uint64 {
		t.Helper()
		d, err := c.Days(key, day0, 2)
		if err != nil {
			t.Fatal(err)
		}
		return d[0]
	}
	a, estA := denseSketch(t, 20_000, 0)
	b, estB := denseSketch(t, 5_000, 1_000_000)
	put(a)
	if got := days(); got != estA {
		t.Fatalf("yesterday = %d, want %d", got, estA)
	}
	if got := days(); got != estA {
		t.Fatalf("yesterday read again = %d, want %d", got, estA)
	}
	if n := len(c.past.m); n != 1 {
		t.Errorf("%d estimates remembered, want 1", n)
	}
	put(b)
	if got := days(); got != estB {
		t.Errorf("after the sketch was written again yesterday = %d, want its new estimate %d", got, estB)
	}
	put(a)
	if got := days(); got != estA {
		t.Errorf("back to the first sketch: yesterday = %d, want %d", got, estA)
	}

	for i := range maxEstimates {
		c.past.put(uint64(i)+1<<40, 1)
	}
	if n := len(c.past.m); n > maxEstimates {
		t.Errorf("%d estimates remembered, want at most %d", n, maxEstimates)
	}
	if got := days(); got != estA {
		t.Errorf("after the memory started over: yesterday = %d, want %d", got, estA)
	}
}

// yearOfSketches returns a counter whose store holds, for key, 364
// past days of 20,000 unique visitors each.
func yearOfSketches(b *testing.B) (*Counter, []byte) {
	m := NewMemory()
	key := []byte("k")
	today := store.DayOf(day0)
	for d := range store.Day(364) {
		data, _ := denseSketch(b, 20_000, int(d)*20_000)
		if err := m.PutSketches(today-1-d, []store.Sketch{{Key: key, Data: data}}); err != nil {
			b.Fatal(err)
		}
	}
	return mustCounter(b, Options{Store: m, Now: func() time.Time { return day0 }}), key
}

// BenchmarkDays365: daily.json?days=365 of a counter with 365 past days
// of 20,000 unique visitors each.
func BenchmarkDays365(b *testing.B) {
	c, key := yearOfSketches(b)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := c.Days(key, day0, 365); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkDays365Parallel(b *testing.B) {
	c, key := yearOfSketches(b)
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := c.Days(key, day0, 365); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

// TestSmallSketchIsTheHyperLogLogOfItsVisitors: a sketch of its first
// visitors, kept as those visitors, writes the bytes a HyperLogLog of
// them writes, and estimates what it estimates; from the third visitor
// on it is that HyperLogLog, with every visitor in it. Repeats change
// nothing at any size.
func TestSmallSketchIsTheHyperLogLogOfItsVisitors(t *testing.T) {
	var s sketch
	visitors := []uint64{0x9e3779b97f4a7c15, 0xbf58476d1ce4e5b9, 0x94d049bb133111eb, 0x2545f4914f6cdd1d, 0xd6e8feb86659fd93}
	for i, v := range visitors {
		if !s.add(v) {
			t.Fatalf("visitor %d: add reported no change", i)
		}
		if s.add(v) {
			t.Errorf("visitor %d again: add reported a change", i)
		}
		ref := hyperloglog.New14() // as the counter made it before: each visitor inserted, no estimate between
		for _, w := range visitors[:i+1] {
			ref.InsertHash(w)
		}
		want, err := ref.MarshalBinary()
		if err != nil {
			t.Fatal(err)
		}
		got, err := s.marshal()
		if err != nil {
			t.Fatal(err)
		}
		if small := i < len(s.vis); small != (s.big == nil) {
			t.Errorf("%d visitors: big = %v", i+1, s.big != nil)
		} else if small && !bytes.Equal(got, want) {
			t.Errorf("%d visitors: written as %x, the HyperLogLog of them is %x", i+1, got, want)
		}
		back := hyperloglog.New14()
		if err := back.UnmarshalBinary(got); err != nil {
			t.Fatalf("%d visitors: the written sketch does not read back: %v", i+1, err)
		}
		if e, we, be := s.estimate(), ref.Estimate(), back.Estimate(); e != we || be != we || we != uint64(i+1) {
			t.Errorf("%d visitors: estimate %d, read back %d, the HyperLogLog's %d", i+1, e, be, we)
		}
	}
}

// TestTodayCacheIsTheDays: the estimate Today keeps is its day's
// and its key's: a busy key's cached estimate is not served the next
// day, nor after Forget, nor for another key of the same shard, and a
// sketch loaded at a restart is estimated at its first read; past the
// rollover, the day before reads its own sketch's estimate (Days).
// Found by review (was TestReviewTodayCacheIsTheDays).
func TestTodayCacheIsTheDays(t *testing.T) {
	disk := NewMemory()
	now := day0
	c := mustCounter(t, Options{Store: disk, Now: func() time.Time { return now }})
	a, b := []byte("a"), []byte("b")
	ref := hyperloglog.New14()
	for i := range 3000 {
		v := c.Hash(addr(i), "ua", day0)
		c.Add(a, v, day0)
		ref.InsertHash(v)
	}
	if got, want := c.Today(a, day0), ref.Estimate(); got != want {
		t.Fatalf("day 0: Today(a) = %d, want %d", got, want)
	}
	visit(c, "b", 1, "ua", day0)
	if got := c.Today(b, day0); got != 1 {
		t.Fatalf("day 0: Today(b) = %d, want 1", got)
	}
	day0Est := ref.Estimate()

	// The next day: nothing yet, then exactly its visitors.
	now = day0.Add(24 * time.Hour)
	if got := c.Today(a, now); got != 0 {
		t.Fatalf("day 1 before any visit: Today(a) = %d, want 0 (day 0's cached estimate was %d)", got, day0Est)
	}
	for i := range 3 {
		visit(c, "a", i, "ua", now)
	}
	if got := c.Today(a, now); got != 3 {
		t.Fatalf("day 1 after 3 visitors: Today(a) = %d, want 3", got)
	}
	d, err := c.Days(a, now, 2)
	if err != nil {
		t.Fatal(err)
	}
	if d[0] != day0Est || d[1] != 3 {
		t.Fatalf("Days(a, 2) = %v, want [%d 3]", d, day0Est)
	}

	// Forget: the cache goes with the sketch.
	if err := c.Forget([][]byte{a}); err != nil {
		t.Fatal(err)
	}
	if got := c.Today(a, now); got != 0 {
		t.Fatalf("after Forget: Today(a) = %d, want 0", got)
	}
	visit(c, "a", 99, "ua", now)
	if got := c.Today(a, now); got != 1 {
		t.Fatalf("after Forget and a visitor: Today(a) = %d, want 1", got)
	}

	// A restart: the loaded sketch is estimated at its first read, and
	// the lag bound holds from there.
	ref = hyperloglog.New14()
	for i := range 1000 {
		v := c.Hash(addr(10_000+i), "ua", now)
		c.Add(b, v, now)
		ref.InsertHash(v)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	c = mustCounter(t, Options{Store: disk, Now: func() time.Time { return now }})
	defer c.Close()
	est := c.Today(b, now)
	if want := ref.Estimate(); est != want {
		t.Fatalf("after a restart: Today(b) = %d, want the loaded sketch's %d", est, want)
	}
	for i := range int(est/staleShare) + 1 {
		v := c.Hash(addr(20_000+i), "ua", now)
		c.Add(b, v, now)
		ref.InsertHash(v)
	}
	if got, want := c.Today(b, now), ref.Estimate(); got != want {
		t.Fatalf("after %d more visitors than 1/%d of %d: Today(b) = %d, want %d", est/staleShare+1, staleShare, est, got, want)
	}
}
