package storetest

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"fmt"
	"maps"
	"math"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"visitors/internal/store"
)

// runOwner runs the part of the suite that proves what owners do to
// their counters: Set, Lock, Delete, List and the token records.
func (s suite) runOwner(t *testing.T) {
	t.Run("SetStartsOver", s.setStartsOver)
	t.Run("SetHostileKeys", s.setHostileKeys)
	t.Run("SetLimits", s.setLimits)
	t.Run("LargeTotalsExact", s.largeTotalsExact)
	t.Run("LockFreezes", s.lockFreezes)
	t.Run("DeleteRemoves", s.deleteRemoves)
	t.Run("DeleteFreesSlot", s.deleteFreesSlot)
	t.Run("DeleteRacesVisits", s.deleteRacesVisits)
	t.Run("SetRacesFlush", s.setRacesFlush)
	t.Run("SetRacesVisits", s.setRacesVisits)
	t.Run("AddToZeroRacesVisits", s.addToZeroRacesVisits)
	t.Run("SetRacesLock", s.setRacesLock)
	t.Run("ListPages", s.listPages)
	t.Run("Tokens", s.tokens)
	t.Run("AddCounts", s.addCounts)
	t.Run("AddHostileKeys", s.addHostileKeys)
	t.Run("AddLimits", s.addLimits)
	t.Run("AddRacesVisits", s.addRacesVisits)
	t.Run("AddRacesFlush", s.addRacesFlush)
	t.Run("ExactTokens", s.exactTokens)
	t.Run("CreateIfAbsent", s.createIfAbsent)
	t.Run("CreateRacesFirstVisit", s.createRacesFirstVisit)
}

func mustAdd(t *testing.T, st store.Store, key []byte, n int64) store.Counts {
	t.Helper()
	c, err := st.Add(ctx, key, n)
	if err != nil {
		t.Fatalf("Add(%q, %d): %v", key, n, err)
	}
	return c
}

// addCounts adds and takes back on one key across days, a lock and
// reopens: the total and today move by n, clamped at 0, a positive n
// keeps the earlier days and a negative one clears them.
func (s suite) addCounts(t *testing.T) {
	clock := NewClock(At(0, "12:00"))
	c := Config{Dir: t.TempDir(), Now: clock.Now}
	st := s.open(t, c)
	key := []byte("abacus/update")
	if got := mustAdd(t, st, key, 0); got != (store.Counts{}) {
		t.Errorf("Add(new key, 0) = %+v, want zero", got)
	}
	if st.Keys() != 1 {
		t.Errorf("Keys() = %d after Add(new key, 0), want 1: Add makes the key", st.Keys())
	}
	zero := []byte("made-at-zero") // and nothing else: it is there after a reopen
	mustAdd(t, st, zero, 0)
	for range 3 {
		mustIncr(t, st, key)
	}
	clock.Add(24 * time.Hour)
	roll(st)
	mustIncr(t, st, key)
	flush(t, st)
	days := func(when string, want ...uint64) {
		t.Helper()
		if d := mustDays(t, st, key, 3); !slices.Equal(d.Counts, want) {
			t.Errorf("%s: Days(3) = %v, want %v", when, d.Counts, want)
		}
	}
	if got := mustAdd(t, st, key, 10); got != (store.Counts{Total: 14, Today: 11}) {
		t.Errorf("Add(10) = %+v, want total 14, today 11", got)
	}
	days("after Add(10)", 0, 3, 11)
	if got := mustIncr(t, st, key); got != (store.Counts{Total: 15, Today: 12}) {
		t.Errorf("Incr after Add(10) = %+v, want total 15, today 12", got)
	}
	st = s.reopen(t, st, c)
	if got := mustGet(t, st, key); got != (store.Counts{Total: 15, Today: 12}) {
		t.Errorf("after reopening, Get = %+v, want total 15, today 12", got)
	}
	days("after Add(10) and reopening", 0, 3, 12)
	// A negative n takes from the total and today, and clears the days
	// before today: they could add up to more than the total.
	if got := mustAdd(t, st, key, -5); got != (store.Counts{Total: 10, Today: 7}) {
		t.Errorf("Add(-5) = %+v, want total 10, today 7", got)
	}
	days("after Add(-5)", 0, 0, 7)
	st = s.reopen(t, st, c)
	days("after Add(-5) and reopening", 0, 0, 7)
	if got := mustGet(t, st, key); got != (store.Counts{Total: 10, Today: 7}) {
		t.Errorf("after Add(-5) and reopening, Get = %+v, want total 10, today 7", got)
	}
	// Locked: an owner's Add still works, and keeps the lock.
	mustLock(t, st, key, true)
	if got := mustAdd(t, st, key, 2); got != (store.Counts{Total: 12, Today: 9, Locked: true}) {
		t.Errorf("Add(2) on a locked key = %+v, want total 12, today 9, locked", got)
	}
	// Never below 0, whatever n.
	if got := mustAdd(t, st, key, -8); got != (store.Counts{Total: 4, Today: 1, Locked: true}) {
		t.Errorf("Add(-8) = %+v, want total 4, today 1, locked", got)
	}
	if got := mustAdd(t, st, key, -1000); got != (store.Counts{Locked: true}) {
		t.Errorf("Add(-1000) on total 4 = %+v, want zero, locked", got)
	}
	if got := mustAdd(t, st, key, math.MinInt64); got != (store.Counts{Locked: true}) {
		t.Errorf("Add(MinInt64) = %+v, want zero, locked", got)
	}
	st = s.reopen(t, st, c)
	if got := mustGet(t, st, key); got != (store.Counts{Locked: true}) {
		t.Errorf("after reopening, Get = %+v, want zero, locked", got)
	}
	days("at 0 after reopening", 0, 0, 0)
	mustLock(t, st, key, false)
	// A new day: a positive n counts on it.
	clock.Add(24 * time.Hour)
	roll(st)
	if got := mustAdd(t, st, key, 3); got != (store.Counts{Total: 3, Today: 3}) {
		t.Errorf("Add(3) on a new day = %+v, want total 3, today 3", got)
	}
	st = s.reopen(t, st, c)
	defer mustClose(t, st)
	days("a new day after reopening", 0, 0, 3)
	if st.Keys() != 2 {
		t.Errorf("Keys() = %d, want 2", st.Keys())
	}
	if es := mustList(t, st, zero, nil, 1); len(es) != 1 || !bytes.Equal(es[0].Key, zero) || es[0].Counts != (store.Counts{}) {
		t.Errorf("List(%q) = %+v, want the key Add(0) made, at 0", zero, es)
	}
}

// addHostileKeys adds to every hostile key, and each comes back as it
// was left after a reopen.
func (s suite) addHostileKeys(t *testing.T) {
	c := Config{Dir: t.TempDir()}
	st := s.open(t, c)
	keys := HostileKeys()
	for i, k := range keys {
		mustIncr(t, st, k)
		mustAdd(t, st, k, int64(100+i))
		if i%2 == 1 {
			mustAdd(t, st, k, -50)
		}
	}
	check := func(when string) {
		t.Helper()
		for i, k := range keys {
			want := store.Counts{Total: uint64(101 + i), Today: uint64(101 + i)}
			if i%2 == 1 {
				want = store.Counts{Total: uint64(51 + i), Today: uint64(51 + i)}
			}
			if got := mustGet(t, st, k); got != want {
				t.Errorf("%s: Get(%q) = %+v, want %+v", when, k, got, want)
			}
		}
	}
	defer func() { mustClose(t, st) }()
	s.reopenAndCheck(t, &st, c, "before reopening", check)
}

func (s suite) addLimits(t *testing.T) {
	st := s.open(t, Config{MaxKeys: 2})
	defer mustClose(t, st)
	long := []byte(strings.Repeat("k", store.MaxKeyBytes+1))
	if _, err := st.Add(ctx, long, 1); !errors.Is(err, store.ErrKeyTooLong) {
		t.Errorf("Add(%d bytes) = %v, want ErrKeyTooLong", len(long), err)
	}
	if _, err := st.Add(ctx, []byte("a"), store.MaxDay+1); !errors.Is(err, store.ErrRange) {
		t.Errorf("Add(new key, MaxDay+1) = %v, want ErrRange", err)
	}
	if st.Keys() != 0 {
		t.Errorf("Keys() = %d after a refused Add, want 0: it changes nothing", st.Keys())
	}
	if got := mustAdd(t, st, []byte("a"), store.MaxDay); got != (store.Counts{Total: store.MaxDay, Today: store.MaxDay}) {
		t.Errorf("Add(new key, MaxDay) = %+v, want MaxDay, MaxDay", got)
	}
	if _, err := st.Add(ctx, []byte("a"), 1); !errors.Is(err, store.ErrRange) {
		t.Errorf("Add(1) with today at MaxDay = %v, want ErrRange", err)
	}
	mustSet(t, st, []byte("b"), store.MaxTotal-5)
	if _, err := st.Add(ctx, []byte("b"), 6); !errors.Is(err, store.ErrRange) {
		t.Errorf("Add(6) at MaxTotal-5 = %v, want ErrRange", err)
	}
	if got := mustGet(t, st, []byte("b")); got != (store.Counts{Total: store.MaxTotal - 5}) {
		t.Errorf("after a refused Add, Get = %+v, want total MaxTotal-5 unchanged", got)
	}
	if got := mustAdd(t, st, []byte("b"), 5); got != (store.Counts{Total: store.MaxTotal, Today: 5}) {
		t.Errorf("Add(5) at MaxTotal-5 = %+v, want MaxTotal, today 5", got)
	}
	if _, err := st.Add(ctx, []byte("c"), 1); !errors.Is(err, store.ErrTooManyKeys) {
		t.Errorf("Add(new key) on a full store = %v, want ErrTooManyKeys", err)
	}
	if got := mustAdd(t, st, []byte("a"), -store.MaxDay); got != (store.Counts{}) {
		t.Errorf("Add(-MaxDay) on a full store's key = %+v, want zero", got)
	}
	if st.Keys() != 2 {
		t.Errorf("Keys() = %d, want 2", st.Keys())
	}
}

// addRacesVisits adds and takes back while visits to the key run and
// passes flush: no visit and no n is lost, whatever the order.
func (s suite) addRacesVisits(t *testing.T) {
	NoDate(t)
	c := Config{Dir: t.TempDir()}
	st := s.open(t, c)
	key := []byte("raced-add")
	mustSet(t, st, key, 1_000_000) // far from 0: no clamp
	stop := make(chan struct{})
	var wg sync.WaitGroup
	visits := visitAndFlush(t, st, key, stop, &wg)
	var sum int64
	for i := range 40 {
		n := int64(i%5*7) - 10
		mustAdd(t, st, key, n)
		sum += n
		time.Sleep(time.Millisecond)
	}
	close(stop)
	wg.Wait()
	flush(t, st)
	want := uint64(1_000_000+sum) + uint64(visits.Load())
	if got := mustGet(t, st, key); got.Total != want {
		t.Errorf("Get = %+v, want total %d (%d visits, adds of %d)", got, want, visits.Load(), sum)
	}
	st = s.reopen(t, st, c)
	defer mustClose(t, st)
	if got := mustGet(t, st, key); got.Total != want {
		t.Errorf("after reopening, Get = %+v, want total %d", got, want)
	}
}

// setRacesVisits sets the key's total to 0 while visits to it run. A
// visit counts before a Set (and is overwritten) or after it, on the day
// and the total both. Reset in place, the in-memory store let a visit
// between its two writes leave the day one above the total for good.
func (s suite) setRacesVisits(t *testing.T) {
	s.zeroRacesVisits(t, "Sets", func(st store.Store, key []byte) { mustSet(t, st, key, 0) })
}

// addToZeroRacesVisits takes the key's counts to 0 with an Add of
// -MaxTotal while visits to it run: as with a Set, a visit counts before
// the Add (and is taken away) or after it, on both. A negative Add that
// lowers the day and then the total, each clamped at 0, wiped from the
// total the visits that had raised it but not yet the day: the day
// stayed above the total for good (Get showed it at the total, Days
// above).
func (s suite) addToZeroRacesVisits(t *testing.T) {
	s.zeroRacesVisits(t, "Adds to 0", func(st store.Store, key []byte) { mustAdd(t, st, key, -store.MaxTotal) })
}

// zeroRacesVisits takes the key's counts to 0 with zero, over and over,
// while visits to it run and passes flush them. Once they stop, the
// day's count is the total (every visit is today's), in Get and in
// Days, and again after reopening.
func (s suite) zeroRacesVisits(t *testing.T, what string, zero func(store.Store, []byte)) {
	NoDate(t)
	c := Config{Dir: t.TempDir()}
	st := s.open(t, c)
	key := []byte("raced-to-zero")
	stop := make(chan struct{})
	var wg sync.WaitGroup
	visits := visitAndFlush(t, st, key, stop, &wg) // passes race the owner's operations too
	// At least 20, and on until 10,000 visits: the in-memory store's take
	// nanoseconds (thousands of them), the others' a write.
	for i := 0; i < 20 || visits.Load() < 10_000; i++ {
		zero(st, key)
	}
	close(stop)
	wg.Wait()
	flush(t, st)
	check := func(when string) {
		// Days too: Get shows the day at most at the total.
		got, day := mustGet(t, st, key), mustDays(t, st, key, 1).Counts[0]
		if got.Today != got.Total || day != got.Total {
			t.Errorf("%s: Get = %+v and Days %d, want the day's count at the total", when, got, day)
		}
	}
	check("after " + what + " racing visits")
	st = s.reopen(t, st, c)
	defer mustClose(t, st)
	check("after reopening")
}

// setRacesLock locks and thaws the key while Sets to it run one after
// another: a Set keeps the lock, so once a Set that began after the Lock
// has answered, the key is as the Lock left it. A Set that read the lock
// and then put a new entry in the key's place, with the owner's
// operations not one at a time, put the lock back as it was before a
// Lock between the two.
func (s suite) setRacesLock(t *testing.T) {
	st := s.open(t, Config{Dir: t.TempDir()})
	defer mustClose(t, st)
	key := []byte("raced-lock")
	rounds := 1000
	if s.b.Durable {
		rounds = 200 // a write each
	}
	var (
		sets atomic.Int64
		stop atomic.Bool
		wg   sync.WaitGroup
	)
	wg.Go(func() {
		for !stop.Load() {
			if _, err := st.Set(ctx, key, 7); err != nil {
				t.Errorf("Set(%q, 7): %v", key, err)
				return
			}
			sets.Add(1)
		}
	})
	defer func() { stop.Store(true); wg.Wait() }()
	for i := range rounds {
		locked := i%2 == 0
		mustLock(t, st, key, locked)
		// Sets run one at a time: the second to answer from here began
		// after the Lock answered.
		for n := sets.Load() + 2; sets.Load() < n && !t.Failed(); {
			runtime.Gosched()
		}
		if got := mustGet(t, st, key); got.Locked != locked {
			t.Fatalf("round %d: after Lock(%v) and Sets racing it, Get = %+v", i, locked, got)
		}
	}
}

// addRacesFlush takes back below what passes already wrote, while they
// run: no pass brings the old total back.
func (s suite) addRacesFlush(t *testing.T) {
	c := Config{Dir: t.TempDir()}
	st := s.open(t, c)
	key := []byte("take-back")
	var want uint64
	for round := range 10 {
		for range 50 {
			mustIncr(t, st, key)
		}
		want += 50
		var wg sync.WaitGroup
		wg.Go(func() { flush(t, st) })
		mustAdd(t, st, key, -int64(40+round))
		want -= uint64(40 + round)
		wg.Wait()
		flush(t, st)
		if got := mustGet(t, st, key); got.Total != want || got.Today != want {
			t.Fatalf("round %d: Get after Add and two flushes = %+v, want total and today %d", round, got, want)
		}
	}
	st = s.reopen(t, st, c)
	defer mustClose(t, st)
	if got := mustGet(t, st, key); got.Total != want || got.Today != want {
		t.Errorf("after reopening Get = %+v, want total and today %d", got, want)
	}
}

// exactTokens stores exact tokens beside prefix ones: the flag survives
// a reopen, AddToken adds an id once, and Token finds one by id.
func (s suite) exactTokens(t *testing.T) {
	c := Config{Dir: t.TempDir()}
	st := s.open(t, c)
	created := At(0, "12:00")
	exact := store.Token{ID: "k1", Name: "open-create", Prefix: "a/b", Exact: true, Hash: sha256.Sum256([]byte("one")), Created: created}
	prefix := store.Token{ID: "p1", Name: "ci", Prefix: "a/b", Hash: sha256.Sum256([]byte("two")), Created: created}
	if err := st.PutToken(ctx, prefix); err != nil {
		t.Fatal(err)
	}
	if ok, err := st.AddToken(ctx, exact); err != nil || !ok {
		t.Fatalf("AddToken(new id) = %v, %v; want true", ok, err)
	}
	other := exact
	other.Hash = sha256.Sum256([]byte("thief"))
	if ok, err := st.AddToken(ctx, other); err != nil || ok {
		t.Fatalf("AddToken(an id there) = %v, %v; want false", ok, err)
	}
	if ok, err := st.AddToken(ctx, store.Token{ID: "p1", Name: "x", Prefix: "", Hash: other.Hash, Created: created}); err != nil || ok {
		t.Fatalf("AddToken(a prefix token's id) = %v, %v; want false", ok, err)
	}
	check := func(when string) {
		t.Helper()
		for _, want := range []store.Token{exact, prefix} {
			got, ok, err := st.Token(ctx, want.ID)
			if err != nil || !ok || got.ID != want.ID || got.Name != want.Name || got.Prefix != want.Prefix ||
				got.Exact != want.Exact || got.Hash != want.Hash || !got.Created.Equal(want.Created) {
				t.Errorf("%s: Token(%s) = %+v, %v, %v; want %+v", when, want.ID, got, ok, err, want)
			}
		}
		if _, ok, err := st.Token(ctx, "absent"); err != nil || ok {
			t.Errorf("%s: Token(absent) = %v, %v; want false", when, ok, err)
		}
		ts, err := st.Tokens(ctx)
		if err != nil || len(ts) != 2 || !ts[0].Exact || ts[1].Exact {
			t.Errorf("%s: Tokens() = %+v, %v; want k1 exact, p1 not", when, ts, err)
		}
	}
	s.reopenAndCheck(t, &st, c, "after AddToken", check)
	if ok, err := st.DeleteToken(ctx, "k1"); err != nil || !ok {
		t.Fatalf("DeleteToken(k1) = %v, %v", ok, err)
	}
	if ok, err := st.AddToken(ctx, other); err != nil || !ok {
		t.Fatalf("AddToken(k1) after its delete = %v, %v; want true", ok, err)
	}
	st = s.reopen(t, st, c)
	if got, ok, _ := st.Token(ctx, "k1"); !ok || got.Hash != other.Hash {
		t.Errorf("after reopening, Token(k1) = %+v, %v; want the one added after the delete", got, ok)
	}
	// DeleteTokenIf removes the token it names by its hash, and no token
	// that replaced it under its id; of racing callers one removes it.
	if ok, err := st.DeleteTokenIf(ctx, "k1", exact.Hash); err != nil || ok {
		t.Errorf("DeleteTokenIf(k1, the hash it held before) = %v, %v; want false", ok, err)
	}
	if ok, err := st.DeleteTokenIf(ctx, "absent", other.Hash); err != nil || ok {
		t.Errorf("DeleteTokenIf(absent) = %v, %v; want false", ok, err)
	}
	var removed atomic.Int32
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			ok, err := st.DeleteTokenIf(ctx, "k1", other.Hash)
			if err != nil {
				t.Errorf("DeleteTokenIf(k1): %v", err)
			}
			if ok {
				removed.Add(1)
			}
		})
	}
	wg.Wait()
	if n := removed.Load(); n != 1 {
		t.Errorf("8 racing DeleteTokenIf(k1, its hash) removed it %d times, want 1", n)
	}
	if _, ok, _ := st.Token(ctx, "k1"); ok {
		t.Error("Token(k1) after DeleteTokenIf with its hash: still there")
	}
	if _, ok, _ := st.Token(ctx, "p1"); !ok {
		t.Error("Token(p1) after DeleteTokenIf of k1: gone")
	}
	st = s.reopen(t, st, c)
	defer mustClose(t, st)
	if _, ok, _ := st.Token(ctx, "k1"); ok {
		t.Error("after reopening, Token(k1) removed by DeleteTokenIf: there")
	}
	// The scope itself.
	for _, tt := range []struct {
		tok  store.Token
		key  string
		want bool
	}{
		{exact, "a/b", true}, {exact, "a/bc", false}, {exact, "a/b/c", false}, {exact, "a/", false}, {exact, "", false},
		{prefix, "a/b", true}, {prefix, "a/bc", true}, {prefix, "a/", false},
		{store.Token{Prefix: "", Exact: true}, "", true}, {store.Token{Prefix: "", Exact: true}, "a", false},
	} {
		if got := tt.tok.Covers(tt.key); got != tt.want {
			t.Errorf("Token{Prefix: %q, Exact: %v}.Covers(%q) = %v, want %v", tt.tok.Prefix, tt.tok.Exact, tt.key, got, tt.want)
		}
	}
}

func mustSet(t *testing.T, st store.Store, key []byte, total uint64) store.Counts {
	t.Helper()
	c, err := st.Set(ctx, key, total)
	if err != nil {
		t.Fatalf("Set(%q, %d): %v", key, total, err)
	}
	return c
}

func mustLock(t *testing.T, st store.Store, key []byte, locked bool) store.Counts {
	t.Helper()
	c, err := st.Lock(ctx, key, locked)
	if err != nil {
		t.Fatalf("Lock(%q, %v): %v", key, locked, err)
	}
	return c
}

func mustDelete(t *testing.T, st store.Store, key []byte) bool {
	t.Helper()
	ok, err := st.Delete(ctx, key)
	if err != nil {
		t.Fatalf("Delete(%q): %v", key, err)
	}
	return ok
}

func mustList(t *testing.T, st store.Store, prefix, after []byte, limit int) []store.Entry {
	t.Helper()
	es, err := st.List(ctx, prefix, after, limit)
	if err != nil {
		t.Fatalf("List(%q, %q, %d): %v", prefix, after, limit, err)
	}
	return es
}

// flush makes a store that writes in passes write what it holds.
func flush(t *testing.T, st store.Store) {
	t.Helper()
	if f, ok := st.(Flusher); ok {
		if err := f.Flush(); err != nil {
			t.Fatalf("Flush: %v", err)
		}
	}
}

func (s suite) setStartsOver(t *testing.T) {
	clock := NewClock(At(0, "12:00"))
	c := Config{Dir: t.TempDir(), Now: clock.Now}
	st := s.open(t, c)
	key := []byte("octocat/repo")
	for range 3 {
		mustIncr(t, st, key)
	}
	clock.Add(24 * time.Hour)
	roll(st)
	mustIncr(t, st, key)
	flush(t, st)
	if got := mustSet(t, st, key, 1000); got != (store.Counts{Total: 1000}) {
		t.Errorf("Set(1000) = %+v, want total 1000, today 0", got)
	}
	check := func(when string, total, today uint64) {
		t.Helper()
		if got := mustGet(t, st, key); got.Total != total || got.Today != today {
			t.Errorf("%s: Get = %+v, want total %d, today %d", when, got, total, today)
		}
		d := mustDays(t, st, key, 3)
		if want := []uint64{0, 0, today}; !slices.Equal(d.Counts, want) {
			t.Errorf("%s: Days(3) = %v, want %v: Set clears the days it replaced", when, d.Counts, want)
		}
	}
	check("after Set", 1000, 0)
	if got := mustIncr(t, st, key); got.Total != 1001 || got.Today != 1 {
		t.Errorf("Incr after Set(1000) = %+v, want total 1001, today 1", got)
	}
	st = s.reopen(t, st, c)
	check("after reopening", 1001, 1)
	// A reset is Set(0), and it is durable too.
	if got := mustSet(t, st, key, 0); got.Total != 0 || got.Today != 0 {
		t.Errorf("Set(0) = %+v, want zero", got)
	}
	st = s.reopen(t, st, c)
	defer mustClose(t, st)
	check("after a reset and reopening", 0, 0)
	if st.Keys() != 1 {
		t.Errorf("Keys() = %d after a reset, want 1: a reset key is still there", st.Keys())
	}
}

// setHostileKeys sets, locks and deletes every hostile key, and each
// comes back as it was left after a reopen.
func (s suite) setHostileKeys(t *testing.T) {
	c := Config{Dir: t.TempDir()}
	st := s.open(t, c)
	keys := HostileKeys()
	for i, k := range keys {
		mustIncr(t, st, k)
		mustSet(t, st, k, uint64(100+i))
		if i%3 == 1 {
			mustLock(t, st, k, true)
		}
		if i%3 == 2 {
			if !mustDelete(t, st, k) {
				t.Errorf("Delete(%q) = false for a key that was there", k)
			}
		}
	}
	check := func(when string) {
		t.Helper()
		for i, k := range keys {
			got := mustGet(t, st, k)
			want := store.Counts{Total: uint64(100 + i), Locked: i%3 == 1}
			if i%3 == 2 {
				want = store.Counts{}
			}
			if got != want {
				t.Errorf("%s: Get(%q) = %+v, want %+v", when, k, got, want)
			}
		}
		if want := len(keys) - len(keys)/3; st.Keys() != want {
			t.Errorf("%s: Keys() = %d, want %d", when, st.Keys(), want)
		}
	}
	defer func() { mustClose(t, st) }()
	s.reopenAndCheck(t, &st, c, "before reopening", check)
	// Every kept key is listed, in byte order, exactly once.
	var want [][]byte
	for i, k := range keys {
		if i%3 != 2 {
			want = append(want, k)
		}
	}
	slices.SortFunc(want, bytes.Compare)
	var got [][]byte
	for _, e := range mustList(t, st, nil, nil, store.MaxList) {
		got = append(got, e.Key)
	}
	if !slices.EqualFunc(got, want, bytes.Equal) {
		t.Errorf("List = %q, want %q", got, want)
	}
}

func (s suite) setLimits(t *testing.T) {
	st := s.open(t, Config{MaxKeys: 2})
	defer mustClose(t, st)
	long := []byte(strings.Repeat("k", store.MaxKeyBytes+1))
	if _, err := st.Set(ctx, long, 1); !errors.Is(err, store.ErrKeyTooLong) {
		t.Errorf("Set(%d bytes) = %v, want ErrKeyTooLong", len(long), err)
	}
	if _, err := st.Lock(ctx, long, true); !errors.Is(err, store.ErrKeyTooLong) {
		t.Errorf("Lock(%d bytes) = %v, want ErrKeyTooLong", len(long), err)
	}
	mustSet(t, st, []byte("a"), 5)
	mustLock(t, st, []byte("b"), true)
	if _, err := st.Set(ctx, []byte("c"), 1); !errors.Is(err, store.ErrTooManyKeys) {
		t.Errorf("Set(new key) on a full store = %v, want ErrTooManyKeys", err)
	}
	if _, err := st.Lock(ctx, []byte("c"), true); !errors.Is(err, store.ErrTooManyKeys) {
		t.Errorf("Lock(new key) on a full store = %v, want ErrTooManyKeys", err)
	}
	if got := mustSet(t, st, []byte("b"), 7); got != (store.Counts{Total: 7, Locked: true}) {
		t.Errorf("Set on a full store's locked key = %+v, want total 7, still locked", got)
	}
	if st.Keys() != 2 {
		t.Errorf("Keys() = %d, want 2", st.Keys())
	}
}

// largeTotalsExact sets totals past 2^53, where a double is no longer
// exact (Redis's Lua scripts count in doubles), up to just below
// MaxTotal, and visits them up to MaxTotal: every answer, Get, List, Days
// and a reopen give the exact totals; and Add reaches MaxTotal exactly.
func (s suite) largeTotalsExact(t *testing.T) {
	clock := NewClock(At(4, "12:00"))
	c := Config{Dir: t.TempDir(), Now: clock.Now}
	st := s.open(t, c)
	totals := map[string]uint64{"big/2^53+1": 1<<53 + 1, "big/2^62-2": store.MaxTotal - 2, "big/2^62-3": store.MaxTotal - 3}
	keys := slices.Sorted(maps.Keys(totals))
	for _, k := range keys {
		want := totals[k]
		if got := mustSet(t, st, []byte(k), want); got != (store.Counts{Total: want}) {
			t.Errorf("Set(%s, %d) = %+v, want total %d", k, want, got, want)
		}
		if got := mustIncr(t, st, []byte(k)); got != (store.Counts{Total: want + 1, Today: 1}) {
			t.Errorf("Incr(%s) after Set(%d) = %+v, want total %d, today 1", k, want, got, want+1)
		}
		flush(t, st)
		if got := mustIncr(t, st, []byte(k)); got != (store.Counts{Total: want + 2, Today: 2}) {
			t.Errorf("second Incr(%s) after Set(%d), past a flush = %+v, want total %d, today 2", k, want, got, want+2)
		}
	}
	check := func(when string) {
		t.Helper()
		for _, k := range keys {
			want := store.Counts{Total: totals[k] + 2, Today: 2}
			if got := mustGet(t, st, []byte(k)); got != want {
				t.Errorf("%s: Get(%s) = %+v, want %+v", when, k, got, want)
			}
			if d := mustDays(t, st, []byte(k), 2); d.Counts[0] != 0 || d.Counts[1] != 2 {
				t.Errorf("%s: Days(%s, 2) = %v, want [0 2]", when, k, d.Counts)
			}
		}
		es := mustList(t, st, []byte("big/"), nil, 10)
		if len(es) != len(keys) {
			t.Fatalf("%s: List(big/) = %d entries, want %d", when, len(es), len(keys))
		}
		for i, e := range es {
			if want := (store.Counts{Total: totals[keys[i]] + 2, Today: 2}); string(e.Key) != keys[i] || e.Counts != want {
				t.Errorf("%s: List(big/)[%d] = %q %+v, want %q %+v", when, i, e.Key, e.Counts, keys[i], want)
			}
		}
	}
	check("before reopening")
	flush(t, st)
	st = s.reopen(t, st, c)
	defer func() { mustClose(t, st) }()
	check("after reopening")
	// 2^62-3 and two visits is 2^62-1: Add reaches MaxTotal exactly,
	// and not past it.
	k := []byte("big/2^62-3")
	if got := mustAdd(t, st, k, 1); got != (store.Counts{Total: store.MaxTotal, Today: 3}) {
		t.Errorf("Add(%s, 1) at MaxTotal-1 = %+v, want total MaxTotal, today 3", k, got)
	}
	if _, err := st.Add(ctx, k, 1); !errors.Is(err, store.ErrRange) {
		t.Errorf("Add(%s, 1) at MaxTotal = %v, want ErrRange", k, err)
	}
	if got := mustAdd(t, st, k, -2); got != (store.Counts{Total: store.MaxTotal - 2, Today: 1}) {
		t.Errorf("Add(%s, -2) at MaxTotal = %+v, want total MaxTotal-2, today 1", k, got)
	}
	if got := mustIncr(t, st, k); got != (store.Counts{Total: store.MaxTotal - 1, Today: 2}) {
		t.Errorf("Incr(%s) after Add(-2) = %+v, want total MaxTotal-1, today 2", k, got)
	}
	flush(t, st)
	if got := mustGet(t, st, k); got != (store.Counts{Total: store.MaxTotal - 1, Today: 2}) {
		t.Errorf("Get(%s) after the Adds and a visit = %+v, want total MaxTotal-1, today 2", k, got)
	}
}

func (s suite) lockFreezes(t *testing.T) {
	c := Config{Dir: t.TempDir()}
	st := s.open(t, c)
	key := []byte("frozen")
	mustIncr(t, st, key)
	if got := mustLock(t, st, key, true); got != (store.Counts{Total: 1, Today: 1, Locked: true}) {
		t.Errorf("Lock(true) = %+v, want total 1, today 1, locked", got)
	}
	for range 3 {
		if got := mustIncr(t, st, key); got != (store.Counts{Total: 1, Today: 1, Locked: true}) {
			t.Errorf("Incr on a locked key = %+v, want the counts unchanged and Locked", got)
		}
	}
	// A key locked before its first visit exists, with nothing counted.
	fresh := []byte("locked-before-any-visit")
	if got := mustLock(t, st, fresh, true); got != (store.Counts{Locked: true}) {
		t.Errorf("Lock(new key) = %+v, want zero counts, locked", got)
	}
	mustIncr(t, st, fresh)
	st = s.reopen(t, st, c)
	if got := mustIncr(t, st, key); got != (store.Counts{Total: 1, Today: 1, Locked: true}) {
		t.Errorf("after reopening, Incr on a locked key = %+v, want it still locked and unchanged", got)
	}
	if got := mustGet(t, st, fresh); got != (store.Counts{Locked: true}) {
		t.Errorf("after reopening, Get(new locked key) = %+v, want zero, locked", got)
	}
	if st.Keys() != 2 {
		t.Errorf("Keys() = %d, want 2: a locked key takes its place", st.Keys())
	}
	mustLock(t, st, key, false)
	st = s.reopen(t, st, c)
	defer mustClose(t, st)
	if got := mustIncr(t, st, key); got != (store.Counts{Total: 2, Today: 2}) {
		t.Errorf("after thawing and reopening, Incr = %+v, want total 2, today 2, not locked", got)
	}
}

func (s suite) deleteRemoves(t *testing.T) {
	clock := NewClock(At(0, "12:00"))
	c := Config{Dir: t.TempDir(), Now: clock.Now}
	st := s.open(t, c)
	key, other := []byte("mistake"), []byte("mistake2")
	mustIncr(t, st, key)
	mustIncr(t, st, other)
	clock.Add(24 * time.Hour)
	roll(st)
	mustIncr(t, st, key)
	mustLock(t, st, key, true)
	flush(t, st)
	if mustDelete(t, st, []byte("never-seen")) {
		t.Error("Delete(absent key) = true, want false")
	}
	if !mustDelete(t, st, key) {
		t.Fatal("Delete(key) = false, want true")
	}
	if mustDelete(t, st, key) {
		t.Error("a second Delete(key) = true, want false")
	}
	check := func(when string) {
		t.Helper()
		if got := mustGet(t, st, key); got != (store.Counts{}) {
			t.Errorf("%s: Get(deleted) = %+v, want zero", when, got)
		}
		if d := mustDays(t, st, key, 3); !slices.Equal(d.Counts, []uint64{0, 0, 0}) {
			t.Errorf("%s: Days(deleted) = %v, want zeros: a delete takes the days too", when, d.Counts)
		}
		if got := mustGet(t, st, other); got.Total != 1 {
			t.Errorf("%s: Get(other key) = %+v, want total 1: the key beside it (%q is its prefix) is untouched", when, got, key)
		}
		if st.Keys() != 1 {
			t.Errorf("%s: Keys() = %d, want 1", when, st.Keys())
		}
		if es := mustList(t, st, key, nil, 10); len(es) != 1 || !bytes.Equal(es[0].Key, other) {
			t.Errorf("%s: List(prefix %q) = %v, want only %q", when, key, es, other)
		}
	}
	s.reopenAndCheck(t, &st, c, "after Delete", check)
	// A visit after the delete makes the key anew, unlocked, from 1.
	if got := mustIncr(t, st, key); got != (store.Counts{Total: 1, Today: 1}) {
		t.Errorf("Incr after Delete = %+v, want a new key: total 1, today 1, not locked", got)
	}
	st = s.reopen(t, st, c)
	defer mustClose(t, st)
	if d := mustDays(t, st, key, 3); !slices.Equal(d.Counts, []uint64{0, 0, 1}) {
		t.Errorf("Days of the key made anew = %v, want [0 0 1]: the old days stay gone", d.Counts)
	}
}

func (s suite) deleteFreesSlot(t *testing.T) {
	c := Config{Dir: t.TempDir(), MaxKeys: 2}
	st := s.open(t, c)
	mustIncr(t, st, []byte("a"))
	mustIncr(t, st, []byte("b"))
	if _, err := Incr(ctx, st, []byte("c")); !errors.Is(err, store.ErrTooManyKeys) {
		t.Fatalf("Incr(c) on a full store = %v, want ErrTooManyKeys", err)
	}
	mustDelete(t, st, []byte("a"))
	if got := mustIncr(t, st, []byte("c")); got.Total != 1 {
		t.Errorf("Incr(c) after a delete = %+v, want total 1", got)
	}
	st = s.reopen(t, st, c)
	defer mustClose(t, st)
	if st.Keys() != 2 {
		t.Errorf("after reopening Keys() = %d, want 2", st.Keys())
	}
	if _, err := Incr(ctx, st, []byte("d")); !errors.Is(err, store.ErrTooManyKeys) {
		t.Errorf("Incr(d) on the reopened full store = %v, want ErrTooManyKeys", err)
	}
	if got := mustGet(t, st, []byte("a")); got.Total != 0 {
		t.Errorf("after reopening Get(a) = %+v, want zero", got)
	}
}

// deleteRacesVisits deletes keys while visits to them run and passes
// flush: whatever order they took, after the last Delete and a reopen
// the key is gone, or holds only visits counted after it.
func (s suite) deleteRacesVisits(t *testing.T) {
	NoDate(t)
	c := Config{Dir: t.TempDir()}
	st := s.open(t, c)
	key := []byte("raced")
	stop := make(chan struct{})
	var wg sync.WaitGroup
	visitAndFlush(t, st, key, stop, &wg)
	for range 20 {
		time.Sleep(2 * time.Millisecond)
		if _, err := st.Delete(ctx, key); err != nil {
			t.Fatalf("Delete: %v", err)
		}
	}
	close(stop)
	wg.Wait()
	mustDelete(t, st, key) // the visits have stopped: this one is last
	st = s.reopen(t, st, c)
	defer mustClose(t, st)
	if got := mustGet(t, st, key); got != (store.Counts{}) {
		t.Errorf("after the last Delete and a reopen, Get = %+v, want zero: a flush in flight brought the key back", got)
	}
	if st.Keys() != 0 {
		t.Errorf("Keys() = %d, want 0", st.Keys())
	}
}

// setRacesFlush sets a total below what passes already wrote, while they
// run: no pass may bring the old total back.
func (s suite) setRacesFlush(t *testing.T) {
	c := Config{Dir: t.TempDir()}
	st := s.open(t, c)
	key := []byte("reset-me")
	for round := range 10 {
		for range 50 {
			mustIncr(t, st, key)
		}
		var wg sync.WaitGroup
		wg.Go(func() { flush(t, st) })
		mustSet(t, st, key, uint64(round))
		wg.Wait()
		flush(t, st)
		if got := mustGet(t, st, key); got.Total != uint64(round) {
			t.Fatalf("round %d: Get after Set(%d) and two flushes = %+v", round, round, got)
		}
	}
	st = s.reopen(t, st, c)
	defer mustClose(t, st)
	if got := mustGet(t, st, key); got.Total != 9 || got.Today != 0 {
		t.Errorf("after reopening Get = %+v, want total 9, today 0", got)
	}
}

func (s suite) listPages(t *testing.T) {
	c := Config{Dir: t.TempDir()}
	st := s.open(t, c)
	var all [][]byte
	for i := range 250 {
		k := fmt.Appendf(nil, "p/%03d", 249-i) // made out of order
		all = append(all, k)
		for range i%3 + 1 {
			mustIncr(t, st, k)
		}
	}
	for _, k := range [][]byte{{}, []byte("p"), []byte("p0"), []byte("q/1"), []byte("o/9")} {
		mustIncr(t, st, k)
		all = append(all, k)
	}
	slices.SortFunc(all, bytes.Compare)
	st = s.reopen(t, st, c)
	defer mustClose(t, st)

	// Paging through everything with after gives every key once, in
	// order, the empty key first.
	var got [][]byte
	var after []byte
	for page := 0; ; page++ {
		es := mustList(t, st, nil, after, 7)
		for _, e := range es {
			got = append(got, e.Key)
		}
		if len(es) < 7 {
			break
		}
		after = es[len(es)-1].Key
		if page > 100 {
			t.Fatal("paging does not end")
		}
	}
	if !slices.EqualFunc(got, all, bytes.Equal) {
		t.Fatalf("paging through List gave %d keys %q..., want %d %q...", len(got), got[:min(5, len(got))], len(all), all[:5])
	}
	// A prefix selects; the empty after is after the empty key.
	es := mustList(t, st, []byte("p/"), []byte("p/100"), 3)
	want := []string{"p/101", "p/102", "p/103"}
	if len(es) != 3 {
		t.Fatalf("List(p/, after p/100, 3) gave %d entries, want 3", len(es))
	}
	for i, e := range es {
		if string(e.Key) != want[i] {
			t.Errorf("List(p/, after p/100, 3)[%d] = %q, want %q", i, e.Key, want[i])
		}
	}
	if n := uint64(249-101)%3 + 1; es[0].Total != n || es[0].Today != n {
		t.Errorf("List's counts of p/101 = %+v, want total and today %d", es[0].Counts, n)
	}
	if es := mustList(t, st, nil, []byte{}, 1); len(es) != 1 || string(es[0].Key) != "o/9" {
		t.Errorf("List(after the empty key) = %v, want o/9 first", es)
	}
	if es := mustList(t, st, []byte("zz"), nil, 10); len(es) != 0 {
		t.Errorf("List(prefix zz) = %v, want none", es)
	}
	if es := mustList(t, st, nil, nil, store.MaxList); len(es) != len(all) {
		t.Errorf("List(MaxList) gave %d entries, want %d", len(es), len(all))
	}
}

func (s suite) tokens(t *testing.T) {
	c := Config{Dir: t.TempDir()}
	st := s.open(t, c)
	created := At(0, "12:00")
	mk := func(id, name, prefix string) store.Token {
		return store.Token{ID: id, Name: name, Prefix: prefix, Hash: sha256.Sum256([]byte("secret-" + id)), Created: created}
	}
	if ts, err := st.Tokens(ctx); err != nil || len(ts) != 0 {
		t.Fatalf("Tokens() of a new store = %v, %v; want none", ts, err)
	}
	want := []store.Token{mk("b2", "ci", "octocat/"), mk("a1", "日本 \x00", ""), mk("c3", "", "p"), mk("d4", "nightly backup", store.BackupPrefix)}
	for _, tk := range want {
		if err := st.PutToken(ctx, tk); err != nil {
			t.Fatalf("PutToken(%s): %v", tk.ID, err)
		}
	}
	slices.SortFunc(want, func(a, b store.Token) int { return strings.Compare(a.ID, b.ID) })
	check := func(when string, want []store.Token) {
		t.Helper()
		got, err := st.Tokens(ctx)
		if err != nil {
			t.Fatalf("%s: Tokens: %v", when, err)
		}
		if len(got) != len(want) {
			t.Fatalf("%s: Tokens() = %d tokens, want %d", when, len(got), len(want))
		}
		for i := range got {
			if got[i].ID != want[i].ID || got[i].Name != want[i].Name || got[i].Prefix != want[i].Prefix ||
				got[i].Hash != want[i].Hash || !got[i].Created.Equal(want[i].Created) {
				t.Errorf("%s: token %d = %+v, want %+v", when, i, got[i], want[i])
			}
		}
	}
	check("after PutToken", want)
	st = s.reopen(t, st, c)
	check("after reopening", want)
	if ok, err := st.DeleteToken(ctx, "b2"); err != nil || !ok {
		t.Fatalf("DeleteToken(b2) = %v, %v; want true", ok, err)
	}
	if ok, err := st.DeleteToken(ctx, "b2"); err != nil || ok {
		t.Errorf("a second DeleteToken(b2) = %v, %v; want false", ok, err)
	}
	want = slices.DeleteFunc(want, func(tk store.Token) bool { return tk.ID == "b2" })
	check("after DeleteToken", want)
	st = s.reopen(t, st, c)
	defer mustClose(t, st)
	check("after DeleteToken and reopening", want)
	// Tokens are not counters: they are neither keys nor listed.
	if st.Keys() != 0 {
		t.Errorf("Keys() = %d with only tokens stored, want 0", st.Keys())
	}
	if es := mustList(t, st, nil, nil, 10); len(es) != 0 {
		t.Errorf("List = %v with only tokens stored, want none", es)
	}
}

// VisitUntil starts four goroutines that visit key in st until stop is
// closed; wg waits for them. Each visit's counts go to each, if not nil
// (from any of the goroutines). It returns the number of visits
// acknowledged, to read after wg.Wait. A visit that fails fails t.
func VisitUntil(t *testing.T, st store.Store, key []byte, stop <-chan struct{}, wg *sync.WaitGroup, each func(store.Counts)) *atomic.Int64 {
	var visits atomic.Int64
	for range 4 {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				c, err := Incr(ctx, st, key)
				if err != nil {
					t.Errorf("Incr(%q): %v", key, err)
					return
				}
				visits.Add(1)
				if each != nil {
					each(c)
				}
			}
		})
	}
	return &visits
}

// visitAndFlush starts four goroutines that visit key and one that
// flushes st every millisecond, until stop is closed; wg waits for them.
// It returns the number of visits counted, to read after wg.Wait.
func visitAndFlush(t *testing.T, st store.Store, key []byte, stop <-chan struct{}, wg *sync.WaitGroup) *atomic.Int64 {
	visits := VisitUntil(t, st, key, stop, wg, nil)
	wg.Go(func() {
		for {
			select {
			case <-stop:
				return
			default:
			}
			if f, ok := st.(Flusher); ok {
				if err := f.Flush(); err != nil {
					t.Errorf("Flush: %v", err)
					return
				}
			}
			time.Sleep(time.Millisecond)
		}
	})
	return visits
}
