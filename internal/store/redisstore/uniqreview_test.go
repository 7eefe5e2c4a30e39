package redisstore

import (
	"testing"
	"time"

	"visitors/internal/store"
	"visitors/internal/store/redisstore/redistest"
)

// TestUniquesInFlightVisitorIsNotAddedAgain: a visitor whose round is
// unanswered (Redis went away between the round's take and its send) and
// who comes back meanwhile is one visitor, not two, and stays one however
// many rounds fail: the instance showed the count plus every view of the
// outage, and kept (and resent) a copy of the hash per view.
func TestUniquesInFlightVisitorIsNotAddedAgain(t *testing.T) {
	rs, err := redistest.Start(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer rs.Close()
	st, err := Open(Options{URL: rs.URL(), FlushInterval: time.Hour, Timeout: 200 * time.Millisecond, CloseTimeout: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	k, d := []byte("k"), store.DayOf(time.Now())
	if _, err := st.Incr(t.Context(), k); err != nil {
		t.Fatal(err)
	}
	st.AddUnique(k, d, 1)
	if err := st.Flush(); err != nil {
		t.Fatal(err)
	}
	if n, err := st.UniqueToday(t.Context(), k, d); err != nil || n != 1 {
		t.Fatalf("one visitor sent: %d, %v", n, err)
	}
	st.AddUnique(k, d, 2)
	rs.Kill()
	for i := range 5 { // rounds whose send fails; visitor 2 comes back after each
		if err := st.sendUniques(st.takeUniques()); err == nil {
			t.Fatal("a round of unique visitors with Redis down did not fail")
		}
		st.AddUnique(k, d, 2)
		if n, err := st.UniqueToday(t.Context(), k, d); err != nil || n != 2 {
			t.Fatalf("after %d failed rounds, 2 visitors (one of them in flight and back) show %d, %v; want 2", i+1, n, err)
		}
		if p := st.Report().PendingUniques; p != 1 {
			t.Fatalf("after %d failed rounds, %d unique visitors pending, want 1", i+1, p)
		}
	}
}
