package unique

import (
	"bytes"
	"math"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"visitors/internal/store"
	"visitors/internal/store/storetest"
)

var day0 = time.Date(2026, 11, 22, 9, 0, 0, 0, time.UTC)

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
