package tally

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"visitors/internal/store"
)

// TestReviewSnapshotNeverReturnsTheLatestDayTwice (issue 9, claim 3).
// Snapshot reads the latest day, then takes the lock to read the earlier
// days. A midnight in between (a visit that rolls the tally to the next
// day, after more visits on the old one) makes it return day d both as
// latest, with the count it read first, and in past, with the final,
// larger count. boltstore's put writes past, then latest: day d goes to
// disk with the smaller count, and Forget then drops d from memory, so
// those visits are lost from the day for good (the total keeps them).
func TestReviewSnapshotNeverReturnsTheLatestDayTwice(t *testing.T) {
	var tl Tally
	var day atomic.Uint32
	day.Store(1000)
	var stop atomic.Bool
	var wg sync.WaitGroup
	for range 2 {
		wg.Go(func() {
			for !stop.Load() {
				tl.Add(store.Day(day.Load()))
			}
		})
	}
	wg.Go(func() {
		for !stop.Load() {
			time.Sleep(50 * time.Microsecond)
			day.Add(1)
		}
	})
	defer func() { stop.Store(true); wg.Wait() }()
	var buf []DayCount
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		_, latest, past := tl.Snapshot(buf[:0])
		for _, dc := range past {
			if dc.Day == latest.Day && dc.Count != latest.Count {
				t.Fatalf("Snapshot returned day %d as latest with %d and in past with %d: written past-then-latest, %d visits of that day are lost", dc.Day, latest.Count, dc.Count, dc.Count-latest.Count)
			}
		}
		tl.Forget(past)
		buf = past
	}
}

// TestReviewSameNewKeyRaceCountsOnce guards Map's count: of many visits
// racing to make the same new key, one makes it and Len is 1. (Passes;
// no other test fails if the loser of LoadOrStore does not give its
// place back, which would make the key limit bite early.)
func TestReviewSameNewKeyRaceCountsOnce(t *testing.T) {
	for range 200 {
		m := NewMap(10, newKeyed, keyedKey)
		var wg sync.WaitGroup
		start := make(chan struct{})
		for range 8 {
			wg.Go(func() {
				<-start
				if _, err := m.LoadOrNew([]byte("new")); err != nil {
					t.Error(err)
				}
			})
		}
		close(start)
		wg.Wait()
		if m.Len() != 1 {
			t.Fatalf("8 visits raced to make one key: Len() = %d, want 1", m.Len())
		}
	}
}
