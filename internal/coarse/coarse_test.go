package coarse

import (
	"testing"
	"time"
)

// TestClockAdvances checks the clock's two promises without betting on
// the scheduler: a reading is never ahead of real time, and the clock does
// move. (An earlier version bounded the advance over a 50ms sleep from
// both sides; a busy CI machine woke the sleeper 1ms late and failed it.)
func TestClockAdvances(t *testing.T) {
	c := Start(time.Millisecond)
	defer c.Stop()
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

func TestStopFreezes(t *testing.T) {
	c := Start(time.Millisecond)
	time.Sleep(5 * time.Millisecond)
	c.Stop()
	a := c.Now()
	time.Sleep(5 * time.Millisecond)
	if b := c.Now(); a != b {
		t.Errorf("Now after Stop moved from %d to %d", a, b)
	}
}

// BenchmarkNow is what timing a request costs: two readings.
func BenchmarkNow(b *testing.B) {
	b.Run("clock=coarse", func(b *testing.B) {
		c := Start(time.Millisecond)
		defer c.Stop()
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
	c := Start(time.Millisecond)
	defer c.Stop()
	b.RunParallel(func(pb *testing.PB) {
		var d int64
		for pb.Next() {
			s := c.Now()
			d += c.Now() - s
		}
		_ = d
	})
}
