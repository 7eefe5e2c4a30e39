package coarse

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestClockAdvances checks the clock's two promises without betting on
// the scheduler: a reading is never ahead of real time, and the clock does
// move. (An earlier version bounded the advance over a 50ms sleep from
// both sides; a busy CI machine woke the sleeper 1ms late and failed it.)
func TestClockAdvances(t *testing.T) {
	c := start(t, time.Millisecond)
	start := c.Now()
	deadline := time.Now().Add(10 * time.Second)
	moves := 0
	for last := start; moves < 20; {
		now := c.Now()
		if real := int64(time.Since(c.epoch)); now > real {
			t.Fatalf("Now = %d ns, ahead of real time %d ns since the clock started", now, real)
		}
		if now < last {
			t.Fatalf("Now went back from %d to %d", last, now)
		}
		if now > last {
			moves++
			last = now
		}
		if time.Now().After(deadline) {
			t.Fatalf("Now moved %d times in 10s, want 20 moves of a 1ms clock", moves)
		}
		time.Sleep(100 * time.Microsecond)
	}
}

// TestStopFreezes: Stop returns (within 10s: a Stop that never ends the
// goroutine fails here with a message, not at go test's timeout), and the
// clock stands still after it.
func TestStopFreezes(t *testing.T) {
	c := Start(time.Millisecond)
	time.Sleep(5 * time.Millisecond)
	stopFrozen(t, c, "")
}

// start starts a clock of tick d that is stopped when tb ends, within
// 10s (stopWithin): a Stop that hangs fails that test with a message,
// instead of hanging every test after it until go test's timeout (a
// deferred Stop did, under the mutant that never closes the clock's
// stop channel).
func start(tb testing.TB, d time.Duration) *Clock {
	tb.Helper()
	c := Start(d)
	tb.Cleanup(func() { stopWithin(tb, c, "") })
	return c
}

// stopWithin stops c, failing tb if Stop does not return within 10s (of
// a clock in the state named by what). A Stop that hangs is left
// running; the test goes on.
func stopWithin(tb testing.TB, c *Clock, what string) bool {
	tb.Helper()
	stopped := make(chan struct{})
	go func() { c.Stop(); close(stopped) }()
	select {
	case <-stopped:
		return true
	case <-time.After(10 * time.Second):
		tb.Errorf("Stop did not return within 10s%s", what)
		return false
	}
}

// stopFrozen stops c (stopWithin), and checks that Now stands still
// after it.
func stopFrozen(t *testing.T, c *Clock, what string) {
	t.Helper()
	if !stopWithin(t, c, what) {
		t.FailNow()
	}
	a := c.Now()
	time.Sleep(5 * time.Millisecond)
	if b := c.Now(); a != b {
		t.Errorf("Now after Stop moved from %d to %d", a, b)
	}
}

// TestSleepsUnreadAndWakes: a clock nobody reads puts its goroutine to
// sleep; the next reading is the precise time, not the reading of the
// last tick, and the clock ticks again after it.
func TestSleepsUnreadAndWakes(t *testing.T) {
	c := start(t, time.Millisecond)
	for deadline := time.Now().Add(10 * time.Second); c.state.Load() != asleep; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the clock, never read, is still awake after 10s (state %d, %d naps)", c.state.Load(), c.Naps())
		}
	}
	if c.Naps() == 0 {
		t.Errorf("the clock is asleep and Naps = 0")
	}
	time.Sleep(20 * time.Millisecond) // twenty ticks it sleeps through
	before := int64(time.Since(c.epoch))
	got := c.Now()
	if got < before {
		t.Fatalf("Now = %d ns after sleeping, want at least %d: the time when it was read, not of its last tick", got, before)
	}
	if after := int64(time.Since(c.epoch)); got > after {
		t.Fatalf("Now = %d ns, ahead of real time %d", got, after)
	}
	moves := 0
	deadline := time.Now().Add(10 * time.Second)
	for last := got; moves < 5; time.Sleep(100 * time.Microsecond) {
		if now := c.Now(); now > last {
			moves++
			last = now
		}
		if time.Now().After(deadline) {
			t.Fatalf("after waking, Now moved %d times in 10s, want 5 ticks", moves)
		}
	}
}

// TestNowNeverGoesBack: readers that read now and then, so that the
// clock sleeps and is woken again and again, never see it go back: not
// in their own readings, and not against a reading another reader took
// before.
func TestNowNeverGoesBack(t *testing.T) {
	c := start(t, time.Millisecond)
	var latest atomic.Int64 // the latest reading any reader published
	var wg sync.WaitGroup
	stop := time.Now().Add(300 * time.Millisecond)
	for i := range 4 {
		wg.Go(func() {
			var last int64
			for n := 0; time.Now().Before(stop); n++ {
				seen := latest.Load()
				now := c.Now()
				if now < last || now < seen {
					t.Errorf("reader %d: Now = %d after its own %d and another's %d", i, now, last, seen)
					return
				}
				if real := int64(time.Since(c.epoch)); now > real {
					t.Errorf("reader %d: Now = %d, ahead of real time %d", i, now, real)
					return
				}
				last = now
				for {
					old := latest.Load()
					if now <= old || latest.CompareAndSwap(old, now) {
						break
					}
				}
				if n%(i+2) == 0 {
					time.Sleep(time.Duration(i+1) * 2 * time.Millisecond) // long enough to put it to sleep
				}
			}
		})
	}
	wg.Wait()
	if c.Naps() == 0 {
		t.Errorf("the clock never slept: the test did not test waking it")
	}
}

// BenchmarkNow is what timing a request costs: two readings.
func BenchmarkNow(b *testing.B) {
	b.Run("clock=coarse", func(b *testing.B) {
		c := start(b, time.Millisecond)
		var d int64
		for b.Loop() {
			s := c.Now()
			d += c.Now() - s
		}
		_ = d
	})
	b.Run("clock=time.Now", func(b *testing.B) {
		var d time.Duration
		for b.Loop() {
			s := time.Now()
			d += time.Since(s)
		}
		_ = d
	})
}

func BenchmarkNowParallel(b *testing.B) {
	c := start(b, time.Millisecond)
	b.RunParallel(func(pb *testing.PB) {
		var d int64
		for pb.Next() {
			s := c.Now()
			d += c.Now() - s
		}
		_ = d
	})
}

// mustSleep waits until c's goroutine is asleep.
func mustSleep(t *testing.T, c *Clock) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); c.state.Load() != asleep; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the clock, never read, is still awake after 10s (state %d)", c.state.Load())
		}
	}
}

// TestStopWhileAsleep: Stop returns while the clock sleeps, and the
// clock is frozen after it: a reading neither moves nor wakes anything.
func TestStopWhileAsleep(t *testing.T) {
	c := Start(time.Millisecond)
	mustSleep(t, c)
	stopFrozen(t, c, " of a clock asleep")
}

// TestAdvanceNeverLowers: a tick or a waking reader that read the time
// before another stored a later reading does not store its own over it.
func TestAdvanceNeverLowers(t *testing.T) {
	c := start(t, time.Millisecond)
	ahead := int64(time.Hour) // a reading from later than any time.Since(epoch) now
	c.now.Store(ahead)
	if got := c.advance(); got != ahead {
		t.Errorf("advance() = %d, want the later reading %d", got, ahead)
	}
	time.Sleep(5 * time.Millisecond) // ticks, a sleep, a wake below
	if got := c.Now(); got < ahead {
		t.Errorf("Now() = %d after the clock ticked, below the reading %d it had", got, ahead)
	}
}

// TestNowNeverBlocks: a reader that finds the clock asleep does not
// wait for its goroutine, even if the wake it sends cannot be taken.
func TestNowNeverBlocks(t *testing.T) {
	c := Start(time.Millisecond)
	if !stopWithin(t, c, "") {
		t.FailNow()
	}
	c.state.Store(asleep)    // as a reader racing Stop could find it
	c.wake <- struct{}{}     // a wake nobody took
	done := make(chan int64) // Now's reading
	go func() { done <- c.Now() }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Now blocked for 10s on a clock whose goroutine was gone")
	}
}

// TestManualStandsStill: a Manual clock moves only by Advance, exactly,
// and reading it wakes nothing.
func TestManualStandsStill(t *testing.T) {
	c := Manual()
	a := c.Now()
	time.Sleep(5 * time.Millisecond)
	if b := c.Now(); b != a {
		t.Fatalf("a Manual clock moved from %d to %d by itself", a, b)
	}
	c.Advance(3 * time.Millisecond)
	if got, want := c.Now(), a+int64(3*time.Millisecond); got != want {
		t.Errorf("Now() after Advance(3ms) = %d, want %d", got, want)
	}
	if got := c.Last(); got != c.Now() {
		t.Errorf("Last() = %d, want Now()'s %d", got, c.Now())
	}
	if c.state.Load() != read || c.Naps() != 0 {
		t.Errorf("a Manual clock's state %d, naps %d: want read for good, no naps", c.state.Load(), c.Naps())
	}
	c.Stop() // a no-op
}
