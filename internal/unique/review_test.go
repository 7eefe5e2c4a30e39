package unique

import (
	"testing"
	"time"

	"github.com/axiomhq/hyperloglog"
)

// TestReviewTodayCacheIsTheDays: the estimate Today keeps is its day's
// and its key's: a busy key's cached estimate is not served the next
// day, nor after Forget, nor for another key of the same shard, and a
// sketch loaded at a restart is estimated at its first read; past the
// rollover, the day before reads its own sketch's estimate (Days).
func TestReviewTodayCacheIsTheDays(t *testing.T) {
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
