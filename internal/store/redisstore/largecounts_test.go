package redisstore

import (
	"bytes"
	"errors"
	"fmt"
	"testing"

	"visitors/internal/store"
	"visitors/internal/store/storetest"
)

// TestScriptRepliesKeepLargeCountsExact: Redis's Lua numbers are
// doubles, exact only to 2^53, and the owner API sets totals up to 2^62,
// so the scripts never answer a count as a Lua number (lua/owner.lua,
// lua/apply.lua). Once they read and returned counts with tonumber:
// Set(k, 2^53+1) stored 2^53+1 but answered 2^53, and the visits after
// it, and a batch instance, showed rounded totals (issue 16's third
// round; the test was TestKnownBugScriptRepliesRoundLargeCounts). In
// every mode, standalone and cluster: Set's answer, the visits after it
// (through the instance that set it and through a second one, each
// answered from a round's reply), Get, List, Days and Export give the
// exact totals, and Add reaches MaxTotal exactly.
func TestScriptRepliesKeepLargeCountsExact(t *testing.T) {
	for _, where := range []string{"standalone", "cluster"} {
		for _, d := range []store.Durability{store.Batch, store.Sync} {
			t.Run(where+"/"+d.String(), func(t *testing.T) {
				prefix := prefixOf(t.TempDir())
				a, b := instance(t, where, prefix, d), instance(t, where, prefix, d)
				m := musts{t}
				ctx := t.Context()
				for _, want := range []uint64{1<<53 + 1, store.MaxTotal - 4, 1<<53 + 3} { // four visits each: MaxTotal-4 reaches MaxTotal
					k := []byte(fmt.Sprintf("k%d", want))
					if got := m.c(a.Set(ctx, k, want)); got != (store.Counts{Total: want}) {
						t.Errorf("Set(%d) = %+v, want total %d", want, got, want)
					}
					if got := m.c(storetest.Incr(ctx, a, k)); got != (store.Counts{Total: want + 1, Today: 1}) {
						t.Errorf("Incr after Set(%d) = %+v, want total %d, today 1", want, got, want+1)
					}
					flushed(t, a)
					// A batch instance now shows the total its round read back.
					if got := m.c(storetest.Incr(ctx, a, k)); got != (store.Counts{Total: want + 2, Today: 2}) {
						t.Errorf("second Incr after Set(%d), past a round = %+v, want total %d, today 2", want, got, want+2)
					}
					// A batch instance reads what Redis holds: not a's
					// second visit, which a has not sent.
					seen := uint64(3)
					if d == store.Batch {
						seen = 2
					}
					if got := m.c(storetest.Incr(ctx, b, k)); got != (store.Counts{Total: want + seen, Today: seen}) {
						t.Errorf("Incr through another instance after Set(%d) and two visits = %+v, want total %d, today %d", want, got, want+seen, seen)
					}
					flushed(t, a, b)
					if got := m.c(storetest.Incr(ctx, b, k)); got != (store.Counts{Total: want + 4, Today: 4}) {
						t.Errorf("second Incr through another instance, past a round of each = %+v, want total %d, today 4", got, want+4)
					}
					flushed(t, b)
					c := store.Counts{Total: want + 4, Today: 4}
					if got := m.c(b.Get(ctx, k)); got != c {
						t.Errorf("Get after Set(%d) and four visits = %+v, want %+v", want, got, c)
					}
					if es := m.l(b.List(ctx, k, nil, 1)); len(es) != 1 || !bytes.Equal(es[0].Key, k) || es[0].Counts != c {
						t.Errorf("List after Set(%d) and four visits = %+v, want %s with %+v", want, es, k, c)
					}
					if days, err := b.Days(ctx, k, 2); err != nil || days.Counts[0] != 0 || days.Counts[1] != 4 {
						t.Errorf("Days(2) after Set(%d) and four visits = %v, %v; want [0 4]", want, days.Counts, err)
					}
					var out bytes.Buffer
					if err := b.Export(ctx, &out); err != nil {
						t.Fatal(err)
					}
					found := false
					for _, kd := range mustParseDump(t, out.Bytes()).Keys {
						if kd.Key == string(k) {
							found = true
							if kd.Total != want+4 {
								t.Errorf("Export after Set(%d) and four visits: total %d, want %d", want, kd.Total, want+4)
							}
						}
					}
					if !found {
						t.Errorf("Export after Set(%d) has no key %s", want, k)
					}
				}

				// Add near the limit: 2^62-5 + 3 + 2 is MaxTotal, and
				// nothing more.
				k := []byte("add")
				if got := m.c(a.Set(ctx, k, store.MaxTotal-5)); got != (store.Counts{Total: store.MaxTotal - 5}) {
					t.Errorf("Set(MaxTotal-5) = %+v, want total MaxTotal-5", got)
				}
				if got := m.c(a.Add(ctx, k, 3)); got != (store.Counts{Total: store.MaxTotal - 2, Today: 3}) {
					t.Errorf("Add(3) at MaxTotal-5 = %+v, want total MaxTotal-2, today 3", got)
				}
				if _, err := a.Add(ctx, k, 3); !errors.Is(err, store.ErrRange) {
					t.Errorf("Add(3) at MaxTotal-2 = %v, want ErrRange", err)
				}
				if got := m.c(a.Add(ctx, k, 2)); got != (store.Counts{Total: store.MaxTotal, Today: 5}) {
					t.Errorf("Add(2) at MaxTotal-2 = %+v, want total MaxTotal, today 5", got)
				}
				if got := m.c(a.Add(ctx, k, -3)); got != (store.Counts{Total: store.MaxTotal - 3, Today: 2}) {
					t.Errorf("Add(-3) at MaxTotal = %+v, want total MaxTotal-3, today 2", got)
				}
				if got := m.c(a.Lock(ctx, k, false)); got != (store.Counts{Total: store.MaxTotal - 3, Today: 2}) {
					t.Errorf("Lock(false) at MaxTotal-3 = %+v, want total MaxTotal-3, today 2", got)
				}
				m.c(storetest.Incr(ctx, a, k))
				flushed(t, a)
				if got := m.c(storetest.Incr(ctx, a, k)); got != (store.Counts{Total: store.MaxTotal - 1, Today: 4}) {
					t.Errorf("second visit after Add(-3) at MaxTotal = %+v, want total MaxTotal-1, today 4", got)
				}
				flushed(t, a)
				if got := m.c(b.Get(ctx, k)); got != (store.Counts{Total: store.MaxTotal - 1, Today: 4}) {
					t.Errorf("Get through another instance = %+v, want total MaxTotal-1, today 4", got)
				}

				// A round that adds nothing still answers the counts it
				// read: to a counter Set through another instance after
				// the visit was counted (batch: the round's generation is
				// stale), and to a locked one.
				k = []byte("stale")
				m.c(storetest.Incr(ctx, b, k))
				if got := m.c(a.Set(ctx, k, 1<<53+1)); got != (store.Counts{Total: 1<<53 + 1}) {
					t.Errorf("Set(2^53+1) = %+v, want total 2^53+1", got)
				}
				flushed(t, b)
				if got := m.c(b.Get(ctx, k)); got != (store.Counts{Total: 1<<53 + 1}) {
					t.Errorf("Get through an instance whose visit a Set(2^53+1) elsewhere overrode = %+v, want total 2^53+1", got)
				}
				k = []byte("locked")
				m.c(a.Set(ctx, k, store.MaxTotal-1))
				m.c(a.Lock(ctx, k, true))
				if got := m.c(storetest.Incr(ctx, b, k)); got != (store.Counts{Total: store.MaxTotal - 1, Locked: true}) {
					t.Errorf("Incr of a locked counter at MaxTotal-1 = %+v, want total MaxTotal-1, locked", got)
				}
				flushed(t, b)
				if got := m.c(storetest.Incr(ctx, b, k)); got != (store.Counts{Total: store.MaxTotal - 1, Locked: true}) {
					t.Errorf("Incr of a locked counter at MaxTotal-1, past a round = %+v, want total MaxTotal-1, locked", got)
				}
			})
		}
	}
}

// TestImportRaisesHiPastTwoTo53: lua/atleast.lua raises the /hi counter
// to an imported dump's, comparing decimals: as doubles 2^53+3 and 2^53+4
// are equal, and the counter stayed at 2^53+3, so a number repeated.
func TestImportRaisesHiPastTwoTo53(t *testing.T) {
	prefix := prefixOf(t.TempDir())
	dump := func(hits uint64) string {
		return fmt.Sprintf(`{"format":"visitors-export-1","hits":%d,"keys":[]}`, hits)
	}
	mustImport(t, prefix, dump(1<<53+3), false)
	mustImport(t, prefix, dump(1<<53+4), false)
	mustImport(t, prefix, dump(1<<53+2), false) // lower: changes nothing
	st := instance(t, "standalone", prefix, store.Sync)
	if n := (musts{t}).n(st.Hit(t.Context())); n != 1<<53+5 {
		t.Errorf("Hit after importing hits 2^53+3, 2^53+4 and 2^53+2 = %d, want 2^53+5 = %d", n, uint64(1<<53+5))
	}
}
