package redisstore

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"visitors/internal/store"
	"visitors/internal/store/storetest"
)

// instance opens one more instance on prefix, standalone or on the
// cluster, that flushes only when told (Flush, Lock, Export).
func instance(t *testing.T, where, prefix string, d store.Durability) *Store {
	t.Helper()
	o := Options{Prefix: prefix, Durability: d, FlushInterval: time.Hour}
	o = at(where, o)
	st, err := Open(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// pair returns two instances of one new store on where: a counts in
// batch, b in sync.
func pair(t *testing.T, where string) (a, b *Store) {
	t.Helper()
	prefix := prefixOf(t.TempDir())
	return instance(t, where, prefix, store.Batch), instance(t, where, prefix, store.Sync)
}

// musts fails its test on an error, and returns the value beside it.
type musts struct{ t *testing.T }

func (m musts) fail(err error) {
	m.t.Helper()
	if err != nil {
		m.t.Fatal(err)
	}
}

func (m musts) c(v store.Counts, err error) store.Counts { m.t.Helper(); m.fail(err); return v }
func (m musts) b(v bool, err error) bool                 { m.t.Helper(); m.fail(err); return v }
func (m musts) n(v uint64, err error) uint64             { m.t.Helper(); m.fail(err); return v }
func (m musts) l(v []store.Entry, err error) []store.Entry {
	m.t.Helper()
	m.fail(err)
	return v
}
func (m musts) tk(v []store.Token, err error) []store.Token {
	m.t.Helper()
	m.fail(err)
	return v
}

func flushed(t *testing.T, sts ...*Store) {
	t.Helper()
	for _, st := range sts {
		if err := st.Flush(); err != nil {
			t.Fatal(err)
		}
	}
}

// TestLockAcrossInstances: a lock set through one instance is honoured by
// the others: a batch instance's visits that reach Redis after it do not
// count (those it sent before do), the batch instance answers locked from
// its next round on, a sync instance at once; and an unlock reaches them
// the same way.
func TestLockAcrossInstances(t *testing.T) {
	for _, where := range []string{"standalone", "cluster"} {
		t.Run(where, func(t *testing.T) {
			m := musts{t}
			prefix := prefixOf(t.TempDir())
			a := instance(t, where, prefix, store.Batch)
			b := instance(t, where, prefix, store.Batch)
			c := instance(t, where, prefix, store.Sync)
			ctx := t.Context()
			key := []byte("frozen/日本")
			for range 3 {
				m.c(storetest.Incr(ctx, a, key))
			}
			flushed(t, a) // sent before the lock: they count
			m.c(storetest.Incr(ctx, a, key))
			m.c(storetest.Incr(ctx, a, key)) // counted by a, not yet sent
			if got := m.c(b.Lock(ctx, key, true)); got != (store.Counts{Total: 3, Today: 3, Locked: true}) {
				t.Fatalf("Lock through b = %+v, want total 3, locked", got)
			}
			if got := m.c(storetest.Incr(ctx, c, key)); got != (store.Counts{Total: 3, Today: 3, Locked: true}) {
				t.Errorf("sync Incr on a key locked elsewhere = %+v, want total 3, locked", got)
			}
			flushed(t, a) // reaches Redis after the lock: dropped
			if got := m.c(storetest.Incr(ctx, a, key)); got != (store.Counts{Total: 3, Today: 3, Locked: true}) {
				t.Errorf("batch Incr after its round saw the lock = %+v, want total 3, locked", got)
			}
			flushed(t, a, b)
			for name, st := range map[string]*Store{"a": a, "b": b, "c": c} {
				if got := m.c(st.Get(ctx, key)); got != (store.Counts{Total: 3, Today: 3, Locked: true}) {
					t.Errorf("%s: Get = %+v, want total 3, today 3, locked", name, got)
				}
			}
			if got := redisTotal(t, a, string(key)); got != 3 {
				t.Errorf("Redis holds total %d, want 3: a visit that reached Redis after the lock counted", got)
			}

			m.c(c.Lock(ctx, key, false))
			if got := m.c(storetest.Incr(ctx, c, key)); got != (store.Counts{Total: 4, Today: 4}) {
				t.Errorf("sync Incr after the unlock = %+v, want total 4", got)
			}
			flushed(t, a) // a asked with its locked visit: it reads the unlock
			if got := m.c(storetest.Incr(ctx, a, key)); got != (store.Counts{Total: 5, Today: 5}) {
				t.Errorf("batch Incr after its round saw the unlock = %+v, want total 5", got)
			}
			flushed(t, a)
			if got := redisTotal(t, a, string(key)); got != 5 {
				t.Errorf("Redis holds total %d after the unlock, want 5", got)
			}
		})
	}
}

// TestDeleteNotUndoneByOtherInstances: visits another instance counted
// before a Delete or a Set — pending in memory, or in a round Redis has
// not answered — never bring the old counts back, and the key is out of
// Keys and List; a visit after makes the key anew everywhere.
func TestDeleteNotUndoneByOtherInstances(t *testing.T) {
	for _, where := range []string{"standalone", "cluster"} {
		t.Run(where, func(t *testing.T) {
			m := musts{t}
			a, b := pair(t, where)
			ctx := t.Context()
			key, other := []byte("gone"), []byte("stays")
			for range 5 {
				m.c(storetest.Incr(ctx, a, key))
			}
			m.c(storetest.Incr(ctx, a, other))
			flushed(t, a)
			for range 3 {
				m.c(storetest.Incr(ctx, a, key)) // pending in a
			}
			if !m.b(b.Delete(ctx, key)) {
				t.Fatal("Delete through b = false, want true")
			}
			flushed(t, a)
			r := instance(t, where, a.o.Prefix, store.Sync)
			for name, st := range map[string]*Store{"a": a, "b": b, "a fresh instance": r} {
				if got := m.c(st.Get(ctx, key)); got != (store.Counts{}) {
					t.Errorf("%s: Get after the Delete and a's round = %+v, want zero: a's pending visits brought it back", name, got)
				}
				if es := m.l(st.List(ctx, nil, nil, 10)); len(es) != 1 || !bytes.Equal(es[0].Key, other) {
					t.Errorf("%s: List = %v, want only %q", name, es, other)
				}
			}
			if r.Keys() != 1 {
				t.Errorf("Keys() = %d, want 1", r.Keys())
			}
			// A visit after the Delete makes the key anew, on a as on b.
			if got := m.c(storetest.Incr(ctx, a, key)); got != (store.Counts{Total: 1, Today: 1}) {
				t.Errorf("a: Incr after the Delete = %+v, want total 1", got)
			}
			flushed(t, a)
			if got := m.c(storetest.Incr(ctx, b, key)); got != (store.Counts{Total: 2, Today: 2}) {
				t.Errorf("b: Incr after the Delete = %+v, want total 2", got)
			}
			if es := m.l(r.List(ctx, nil, nil, 10)); len(es) != 2 || es[0].Total != 2 {
				t.Errorf("List after the key was made anew = %v, want it back with total 2", es)
			}

			// Set to a lower total: a's pending visits do not raise it.
			for range 4 {
				m.c(storetest.Incr(ctx, a, key))
			}
			if got := m.c(b.Set(ctx, key, 1)); got != (store.Counts{Total: 1}) {
				t.Errorf("Set(1) = %+v, want total 1", got)
			}
			flushed(t, a)
			if got := m.c(r.Get(ctx, key)); got != (store.Counts{Total: 1}) {
				t.Errorf("Get after Set(1) and a's round = %+v, want total 1", got)
			}
			if got := m.c(storetest.Incr(ctx, a, key)); got.Total != 2 {
				t.Errorf("a: Incr after the Set = %+v, want total 2", got)
			}
		})
	}
}

// TestDeleteDropsARoundInFlight: a batch round that Redis has not
// answered when another instance deletes the key is sent again after the
// Delete, and Redis drops it.
func TestDeleteDropsARoundInFlight(t *testing.T) {
	prefix := prefixOf(t.TempDir())
	p := startLossyProxy(t, standalone.Addr)
	a, err := Open(Options{URL: p.url(), Prefix: prefix, FlushInterval: time.Hour, Timeout: 500 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b := instance(t, "standalone", prefix, store.Sync)
	ctx := t.Context()
	m := musts{t}
	key := []byte("in-flight")
	for range 4 {
		m.c(storetest.Incr(ctx, a, key)) // admitted through the proxy
	}
	p.blocking.Store(true) // every script is cut: the round is retried
	done := make(chan error, 1)
	go func() { done <- a.Flush() }()
	waitRoundRefused(t, a, 10*time.Second)
	if !m.b(b.Delete(ctx, key)) {
		t.Error("Delete = false for a key admitted by a, want true")
	}
	p.blocking.Store(false)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if got := m.c(b.Get(ctx, key)); got != (store.Counts{}) {
		t.Errorf("Get after the resent round = %+v, want zero: a round from before the Delete landed", got)
	}
	if got := m.c(a.Get(ctx, key)); got != (store.Counts{}) {
		t.Errorf("a: Get after its round learned of the Delete = %+v, want zero", got)
	}
}

// TestTokenRevokeSeenAtOnce: a token made through one instance is seen by
// another at once, and a revoke through the other is seen by the first at
// once: no instance caches tokens.
func TestTokenRevokeSeenAtOnce(t *testing.T) {
	for _, where := range []string{"standalone", "cluster"} {
		t.Run(where, func(t *testing.T) {
			m := musts{t}
			a, b := pair(t, where)
			ctx := t.Context()
			tk := store.Token{ID: "t1", Name: "ci", Prefix: "octocat/", Hash: sha256.Sum256([]byte("s")), Created: storetest.At(2, "01:02:03.000000004")}
			if err := a.PutToken(ctx, tk); err != nil {
				t.Fatal(err)
			}
			if ts := m.tk(b.Tokens(ctx)); len(ts) != 1 || ts[0].ID != "t1" || ts[0].Hash != tk.Hash || !ts[0].Created.Equal(tk.Created) {
				t.Fatalf("b: Tokens = %+v, want a's token", ts)
			}
			m.tk(a.Tokens(ctx)) // a has read them too
			if !m.b(b.DeleteToken(ctx, "t1")) {
				t.Fatal("DeleteToken through b = false")
			}
			if ts := m.tk(a.Tokens(ctx)); len(ts) != 0 {
				t.Errorf("a: Tokens right after b revoked = %+v, want none", ts)
			}
		})
	}
}

// TestOpenMigratesTheSetOfKeys: a store written before List kept its
// keys in a set; opening it moves them into the sorted set, so List gives
// them in byte order, and Keys and the limit count them.
func TestOpenMigratesTheSetOfKeys(t *testing.T) {
	for _, where := range []string{"standalone", "cluster"} {
		t.Run(where, func(t *testing.T) {
			m := musts{t}
			prefix := prefixOf(t.TempDir())
			w := instance(t, where, prefix, store.Sync)
			ctx := t.Context()
			keys := []string{"b", "", "a/日本", "a", "\x00"}
			for _, k := range keys {
				m.c(storetest.Incr(ctx, w, []byte(k)))
			}
			// Make it look like an older store: the keys in a set.
			if err := w.c.Do(ctx, w.c.B().Rename().Key(w.n.index).Newkey(w.n.index+"x").Build()).Error(); err != nil {
				t.Fatal(err)
			}
			if err := w.c.Do(ctx, w.c.B().Del().Key(w.n.index+"x").Build()).Error(); err != nil {
				t.Fatal(err)
			}
			if err := w.c.Do(ctx, w.c.B().Sadd().Key(w.n.oldSet).Member(keys...).Build()).Error(); err != nil {
				t.Fatal(err)
			}
			o := Options{Prefix: prefix, MaxKeys: 5, Durability: store.Batch}
			o = at(where, o)
			st, err := Open(o)
			if err != nil {
				t.Fatal(err)
			}
			defer st.Close()
			if st.Keys() != len(keys) {
				t.Errorf("Keys() = %d after migrating, want %d", st.Keys(), len(keys))
			}
			var got []string
			for _, e := range m.l(st.List(ctx, nil, nil, 10)) {
				got = append(got, string(e.Key))
				if e.Total != 1 {
					t.Errorf("List: %q has total %d, want 1", e.Key, e.Total)
				}
			}
			want := slices.Sorted(slices.Values(keys))
			if !slices.Equal(got, want) {
				t.Errorf("List after migrating = %q, want %q", got, want)
			}
			if _, err := storetest.Incr(ctx, st, []byte("new")); !errors.Is(err, store.ErrTooManyKeys) {
				t.Errorf("Incr(new key) with 5 migrated keys and -max-keys 5 = %v, want ErrTooManyKeys", err)
			}
			if n, err := st.c.Do(ctx, st.c.B().Exists().Key(st.n.oldSet).Build()).AsInt64(); err != nil || n != 0 {
				t.Errorf("the old set still exists (%d, %v)", n, err)
			}
		})
	}
}

// TestOnlineBackup: Export carries totals, days and locks; Import into
// another store gives the same dump back; a refused dump says
// ErrInvalidDump and changes nothing; a replace is not undone by another
// instance's pending visits.
func TestOnlineBackup(t *testing.T) {
	for _, where := range []string{"standalone", "cluster"} {
		t.Run(where, func(t *testing.T) {
			m := musts{t}
			ctx := t.Context()
			src := instance(t, where, prefixOf(t.TempDir()), store.Batch)
			for i, k := range [][]byte{[]byte("a"), {}, []byte("日本"), []byte(strings.Repeat("x", store.MaxKeyBytes))} {
				for range i + 1 {
					m.c(storetest.Incr(ctx, src, k))
				}
			}
			m.c(src.Lock(ctx, []byte("a"), true))
			m.n(src.Hit(ctx))
			var dump bytes.Buffer
			if err := src.Export(ctx, &dump); err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(dump.String(), `"locked":true`) {
				t.Errorf("the dump has no lock:\n%s", dump.String())
			}
			prefix := prefixOf(t.TempDir())
			dst := instance(t, where, prefix, store.Batch)
			other := instance(t, where, prefix, store.Batch)
			m.c(storetest.Incr(ctx, other, []byte("old")))
			flushed(t, other)
			m.c(storetest.Incr(ctx, other, []byte("old"))) // pending in other
			exportOf := func(st *Store) string {
				t.Helper()
				var b bytes.Buffer
				if err := st.Export(ctx, &b); err != nil {
					t.Fatal(err)
				}
				return b.String()
			}
			before := exportOf(dst)
			for _, bad := range []string{
				`{"format":"visitors-export-1","hits":1,"keys":[{"key":"a","total":1},{"key":"` + strings.Repeat("x", store.MaxKeyBytes+1) + `","total":1}]}`,
				`{"format":"visitors-export-1","hits":1,"keys":[{"key":"a","total":1,"days":{"2026-13-01":1}}]}`,
				`{"format":"visitors-export-1","hits":1,"keys":[{"key":"a","total":"x"}]}`,
				`not json`,
			} {
				for _, replace := range []bool{false, true} {
					if err := dst.Import(ctx, strings.NewReader(bad), replace); !errors.Is(err, store.ErrInvalidDump) {
						t.Errorf("Import(%q, replace %v) = %v, want ErrInvalidDump", bad, replace, err)
					}
				}
			}
			if after := exportOf(dst); after != before {
				t.Errorf("a refused import changed the store:\n%s\nwas\n%s", after, before)
			}
			if err := dst.Import(ctx, bytes.NewReader(dump.Bytes()), true); err != nil {
				t.Fatal(err)
			}
			flushed(t, other) // its pending visit to "old" is from before the replace
			if got := exportOf(dst); got != dump.String() {
				t.Errorf("export after import -replace =\n%s\nwant\n%s", got, dump.String())
			}
			if got := m.c(storetest.Incr(ctx, other, []byte("a"))); got.Total != 1 || !got.Locked {
				t.Errorf("other instance: Incr of an imported locked key = %+v, want total 1, locked", got)
			}
			// Adding doubles every count; the lock stays.
			if err := dst.Import(ctx, bytes.NewReader(dump.Bytes()), false); err != nil {
				t.Fatal(err)
			}
			if got := m.c(dst.Get(ctx, []byte("日本"))); got.Total != 6 {
				t.Errorf("Get after adding the dump again = %+v, want total 6", got)
			}
			if n := m.n(dst.Hit(ctx)); n <= 1 {
				t.Errorf("Hit after importing hits 1 = %d, want more", n)
			}
		})
	}
}

// TestOnlineImportReplaceDeletesEveryPage: a replace deletes every key,
// however many pages of the sorted set they fill.
func TestOnlineImportReplaceDeletesEveryPage(t *testing.T) {
	st := instance(t, "standalone", prefixOf(t.TempDir()), store.Sync)
	m := musts{t}
	for i := range 450 {
		m.c(storetest.Incr(t.Context(), st, []byte(strconv.Itoa(i))))
	}
	dump := `{"format":"visitors-export-1","hits":0,"keys":[{"key":"only","total":7}]}`
	if err := st.Import(t.Context(), strings.NewReader(dump), true); err != nil {
		t.Fatal(err)
	}
	if es := m.l(st.List(t.Context(), nil, nil, store.MaxList)); len(es) != 1 || string(es[0].Key) != "only" || es[0].Total != 7 {
		t.Errorf("List after replacing 450 keys with one = %d entries (%v...), want only \"only\", total 7", len(es), es[:min(3, len(es))])
	}
	if st.Keys() != 1 {
		t.Errorf("Keys() = %d, want 1", st.Keys())
	}
}

// BenchmarkList is one page of 100 keys, with their counts, from a store
// of 1,000 keys (standalone, sync: the counts are read from Redis).
func BenchmarkList(b *testing.B) {
	o := Options{URL: standalone.URL(), Prefix: prefixOf(b.TempDir()), Durability: store.Sync}
	st, err := Open(o)
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	for i := range 1000 {
		if _, err := storetest.Incr(b.Context(), st, fmt.Appendf(nil, "k/%04d", i)); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportAllocs()
	for b.Loop() {
		if es, err := st.List(b.Context(), []byte("k/"), []byte("k/0450"), 100); err != nil || len(es) != 100 {
			b.Fatal(len(es), err)
		}
	}
}

// TestTokenRecordsFromBefore: a token record written before exact
// tokens (no "exact" field) reads back as a prefix token, by Token and
// Tokens alike, and an exact one keeps its flag.
func TestTokenRecordsFromBefore(t *testing.T) {
	st := openStandalone(t, Options{Durability: store.Sync})
	old := `{"name":"ci","prefix":"octocat/","sha256":"` + strings.Repeat("ab", 32) + `","created":"` + storetest.Date(0) + `T12:00:00Z"}`
	if err := st.c.Do(t.Context(), st.c.B().Hset().Key(st.n.tokens).FieldValue().FieldValue("0cd87274d67084ca", old).Build()).Error(); err != nil {
		t.Fatal(err)
	}
	exact := store.Token{ID: "key-1", Name: "open-create", Prefix: "octocat", Exact: true, Created: storetest.At(0, "12:00")}
	if err := st.PutToken(t.Context(), exact); err != nil {
		t.Fatal(err)
	}
	got, ok, err := st.Token(t.Context(), "0cd87274d67084ca")
	if err != nil || !ok || got.Prefix != "octocat/" || got.Exact || got.Hash[0] != 0xab || got.Name != "ci" {
		t.Errorf("Token(a record from before) = %+v, %v, %v; want the prefix token", got, ok, err)
	}
	ts, err := st.Tokens(t.Context())
	if err != nil || len(ts) != 2 || ts[0].Exact || !ts[1].Exact || ts[1].Prefix != "octocat" {
		t.Errorf("Tokens() = %+v, %v; want the old prefix token and the exact one", ts, err)
	}
}

// BenchmarkTokenLookup is the owner API's authentication with many
// tokens stored, as open creation makes them: Token, one HGET by the id
// a secret names, against Tokens, the HGETALL that every call made
// before tokens named their id.
func BenchmarkTokenLookup(b *testing.B) {
	for _, n := range []int{1000, 100_000} {
		st, err := Open(Options{URL: standalone.URL(), Prefix: prefixOf(b.TempDir()), Durability: store.Sync})
		if err != nil {
			b.Fatal(err)
		}
		var cmds rueidis.Commands
		for i := range n {
			v, _ := encodeToken(store.Token{ID: fmt.Sprintf("key-%032x", i), Name: "open-create", Prefix: fmt.Sprintf("k/%d", i), Exact: true})
			cmds = append(cmds, st.c.B().Hset().Key(st.n.tokens).FieldValue().FieldValue(fmt.Sprintf("key-%032x", i), v).Build())
		}
		for _, r := range st.c.DoMulti(b.Context(), cmds...) {
			if err := r.Error(); err != nil {
				b.Fatal(err)
			}
		}
		b.Run(fmt.Sprintf("tokens=%d/by=id", n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, ok, err := st.Token(b.Context(), fmt.Sprintf("key-%032x", n/2)); err != nil || !ok {
					b.Fatal(ok, err)
				}
			}
		})
		b.Run(fmt.Sprintf("tokens=%d/by=all", n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if ts, err := st.Tokens(b.Context()); err != nil || len(ts) != n {
					b.Fatal(len(ts), err)
				}
			}
		})
		st.Close()
	}
}

// TestAddAcrossInstances: one instance adds and takes back while
// another, in batch mode, counts visits it sends a flush interval later:
// no visit and no n is lost, whichever reaches Redis first.
//
// a shows Redis's counts as of the last round that read its key, and a
// round reads only the keys counted or asked for (Get) since the one
// before: a round with nothing of the key's does not read it back. So
// the check asks with a Get, then flushes: the round reads what b sent.
// The test once flushed and read, which failed when a's last visit went
// out in a round that landed before b's last adds (a's goroutine off the
// CPU meanwhile): about once in 40 to 80 runs, a total short by those
// adds. The Add after a's last round makes that every run.
func TestAddAcrossInstances(t *testing.T) {
	for _, where := range []string{"standalone", "cluster"} {
		t.Run(where, func(t *testing.T) {
			c := storetest.Config{Dir: t.TempDir()}
			a := backend(where, store.Batch).Open(t, c).(*Store)
			defer a.Close()
			b := backend(where, store.Batch).Open(t, c).(*Store)
			defer b.Close()
			key := []byte("shared")
			if _, err := b.Set(t.Context(), key, 1_000_000); err != nil { // far from 0: no clamp
				t.Fatal(err)
			}
			stop := make(chan struct{})
			done := make(chan int)
			go func() {
				n := 0
				for {
					select {
					case <-stop:
						done <- n
						return
					default:
					}
					if _, err := storetest.Incr(t.Context(), a, key); err != nil {
						t.Errorf("Incr: %v", err)
					}
					n++
				}
			}()
			var sum int64
			for i := range 60 {
				n := int64(i%7*5) - 12
				if _, err := b.Add(t.Context(), key, n); err != nil {
					t.Fatalf("Add(%d): %v", n, err)
				}
				sum += n
				time.Sleep(time.Millisecond)
			}
			close(stop)
			visits := <-done
			for _, st := range []*Store{a, b} {
				if err := st.Flush(); err != nil {
					t.Fatal(err)
				}
			}
			// a's last round has landed; b adds after it.
			if _, err := b.Add(t.Context(), key, 7); err != nil {
				t.Fatalf("Add(7): %v", err)
			}
			sum += 7
			want := uint64(1_000_000+sum) + uint64(visits)
			for name, st := range map[string]*Store{"a": a, "b": b} {
				if _, err := st.Get(t.Context(), key); err != nil { // the next round reads the key back
					t.Fatal(err)
				}
				if err := st.Flush(); err != nil { // a round that reads back what the other sent
					t.Fatal(err)
				}
				if got, err := st.Get(t.Context(), key); err != nil || got.Total != want {
					t.Errorf("%s: Get = %+v, %v; want total %d (%d visits, adds of %d)", name, got, err, want, visits, sum)
				}
			}
		})
	}
}

// TestCreateSeesUnsentVisits: a batch instance's visits not yet sent to
// Redis make their key there for Create (issue 23, item 7), on the
// instance that counted them; once sent, for every instance. Caught with
// the check of the instance's pending visits planted out: Create made a
// key that held a visit.
func TestCreateSeesUnsentVisits(t *testing.T) {
	for _, where := range []string{"standalone", "cluster"} {
		t.Run(where, func(t *testing.T) {
			prefix := "create-unsent-" + where + ":"
			a, b := instance(t, where, prefix, store.Batch), instance(t, where, prefix, store.Batch)
			m, ctx := musts{t}, t.Context()
			tok := store.Token{ID: "key-k", Name: "open-create", Prefix: "k", Exact: true, Hash: sha256.Sum256([]byte("s"))}
			m.c(storetest.Incr(ctx, a, []byte("k")))
			if m.b(a.Create(ctx, []byte("k"), tok)) {
				t.Fatal("Create on the instance holding an unsent visit = true, want false")
			}
			// A visit another instance has counted and not yet sent:
			// its first visit admitted the key, which Create claims
			// only if no one had (the race the hostile review of issue
			// 23 won 17 times in 20 through two real binaries).
			m.c(storetest.Incr(ctx, a, []byte("unsent")))
			if m.b(b.Create(ctx, []byte("unsent"), store.Token{ID: "key-unsent", Name: "open-create", Prefix: "unsent", Exact: true, Hash: sha256.Sum256([]byte("s"))})) {
				t.Fatal("Create on another instance while the first holds an unsent visit = true, want false")
			}
			flushed(t, a)
			if got := m.c(b.Get(ctx, []byte("unsent"))); got.Total != 1 {
				t.Errorf("Get(unsent) = %+v after the round, want the visit", got)
			}
			if m.b(b.Create(ctx, []byte("k"), tok)) {
				t.Fatal("Create on another instance after the visit was sent = true, want false")
			}
			if got := m.c(b.Get(ctx, []byte("k"))); got.Total != 1 {
				t.Errorf("Get = %+v, want the visit", got)
			}
		})
	}
}

// TestCreateThatFailsLeavesTheNameFree: a Create whose claim landed and
// whose creation then failed (Redis cut it: on a cluster the two are on
// different nodes, and one was paused) takes its claim back: the name
// was left taken for good, every later Create answered 409, with no
// counter and no owner (the second hostile review of issue 23).
func TestCreateThatFailsLeavesTheNameFree(t *testing.T) {
	p := startLossyProxy(t, standalone.Addr)
	st, err := Open(Options{URL: p.url(), Prefix: prefixOf(t.TempDir()), Timeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	tok := store.Token{ID: "key-free", Name: "open-create", Prefix: "free", Exact: true, Hash: sha256.Sum256([]byte("s"))}
	p.cut.Store(createSHA) // the claim passes, the creation is cut
	if made, err := st.Create(t.Context(), []byte("free"), tok); err == nil || made {
		t.Fatalf("Create with its creation cut = %v, %v; want an error", made, err)
	}
	p.cut.Store("")
	if made, err := st.Create(t.Context(), []byte("free"), tok); err != nil || !made {
		t.Errorf("Create after a failed one = %v, %v; want it made", made, err)
	}
	if n := st.Keys(); n != 1 {
		t.Errorf("Keys() = %d, want 1", n)
	}
}

// TestCreateBounds: Create takes a key of exactly store.MaxKeyBytes and
// refuses a longer one with ErrKeyTooLong. Mutation survivor
// owner.go:398:14: with `>` as `>=`, a key of the bound was refused.
func TestCreateBounds(t *testing.T) {
	st := openStandalone(t, Options{})
	tok := func(k []byte) store.Token {
		return store.Token{ID: "key-" + strconv.Itoa(len(k)), Name: "open-create", Prefix: string(k), Exact: true, Hash: sha256.Sum256([]byte("s"))}
	}
	k := []byte(strings.Repeat("k", store.MaxKeyBytes))
	if made, err := st.Create(t.Context(), k, tok(k)); err != nil || !made {
		t.Errorf("Create of a key of %d bytes = %v, %v; want it made", len(k), made, err)
	}
	k = append(k, 'k')
	if made, err := st.Create(t.Context(), k, tok(k)); !errors.Is(err, store.ErrKeyTooLong) || made {
		t.Errorf("Create of a key of %d bytes = %v, %v; want ErrKeyTooLong", len(k), made, err)
	}
}

// TestCreateOnAStandaloneRedisIsOneStep: on a standalone Redis, Create
// stores the token in its script, with the counter: no HSET of its own
// follows, which could fail after the counter was made (a counter with
// no owner). The proxy cuts any request holding "HSET". Mutation
// survivor owner.go:413:30: with the cluster test `len(Cluster) > 0` as
// `>= 0`, Create took the cluster's two steps there too.
func TestCreateOnAStandaloneRedisIsOneStep(t *testing.T) {
	p := startLossyProxy(t, standalone.Addr)
	st, err := Open(Options{URL: p.url(), Prefix: prefixOf(t.TempDir()), Timeout: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	tok := func(k string) store.Token {
		return store.Token{ID: "key-" + k, Name: "open-create", Prefix: k, Exact: true, Hash: sha256.Sum256([]byte("s"))}
	}
	m := musts{t}
	if !m.b(st.Create(t.Context(), []byte("first"), tok("first"))) { // loads the script
		t.Fatal("Create(first) = false")
	}
	p.cut.Store("HSET")
	made, err := st.Create(t.Context(), []byte("k"), tok("k"))
	p.cut.Store("")
	if err != nil || !made {
		t.Fatalf("Create with HSET cut = %v, %v; want it made in one script", made, err)
	}
	if got, ok, err := st.Token(t.Context(), "key-k"); err != nil || !ok || got.Prefix != "k" {
		t.Errorf("Token(key-k) = %+v, %v, %v; want the token Create stored", got, ok, err)
	}
}

// TestCreateSeesUnsentVisitsAfterADeleteElsewhere: a batch instance that
// holds visits to a key not yet sent does not create it, though another
// instance deleted the key meanwhile (so the claim in the set of every
// key, Create's first check, passes). Mutation survivor owner.go:484:21:
// with the check of the instance's pending visits made for Sync only,
// Create made the key.
func TestCreateSeesUnsentVisitsAfterADeleteElsewhere(t *testing.T) {
	a, b := pair(t, "standalone")
	m, ctx := musts{t}, t.Context()
	m.c(storetest.Incr(ctx, a, []byte("k")))
	flushed(t, a)
	m.c(storetest.Incr(ctx, a, []byte("k"))) // not yet sent
	if !m.b(b.Delete(ctx, []byte("k"))) {
		t.Fatal("Delete(k) = false")
	}
	tok := store.Token{ID: "key-k", Name: "open-create", Prefix: "k", Exact: true, Hash: sha256.Sum256([]byte("s"))}
	if m.b(a.Create(ctx, []byte("k"), tok)) {
		t.Error("Create on the instance holding an unsent visit, after a Delete elsewhere = true, want false")
	}
}
