package redisstore

import (
	"bytes"
	"sync"
	"testing"
	"time"

	"visitors/internal/store"
	"visitors/internal/store/storetest"
)

// TestReviewRedisImportReplaceSparesLongerPrefix: -redis-prefix exists
// "so several services can share one Redis", but `import -replace`
// deletes every name matching prefix+"*", so replacing the store under
// "P" also wipes a service running under "Pstaging:" (its counts, its
// set of keys, its flush sequence keys). Only the /hi counter of P is
// spared; the other service's {hi} goes too, so its /hi numbers restart
// at 1 and repeat.
// Suggested fix: the names of one store are exactly prefix+"{"...; scan
// with MATCH escape(prefix)+"{*" (and escape '\\' too), and keep the
// other store's names untouched.
func TestReviewRedisImportReplaceSparesLongerPrefix(t *testing.T) {
	base := prefixOf(t.TempDir())
	other := base + "staging:"
	st, err := Open(Options{URL: standalone.URL(), Prefix: other, Durability: store.Sync})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.Incr(t.Context(), []byte("theirs")); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Hit(t.Context()); err != nil {
		t.Fatal(err)
	}
	st.Close()

	var dump bytes.Buffer
	if err := Export(Options{URL: standalone.URL(), Prefix: base}, &dump, time.Now()); err != nil {
		t.Fatal(err)
	}
	if err := Import(Options{URL: standalone.URL(), Prefix: base}, &dump, true, t.TempDir(), time.Now()); err != nil {
		t.Fatal(err)
	}

	st, err = Open(Options{URL: standalone.URL(), Prefix: other, Durability: store.Sync})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	c, err := st.Get(t.Context(), []byte("theirs"))
	if err != nil {
		t.Fatal(err)
	}
	if c.Total != 1 || st.Keys() != 1 {
		t.Errorf("after import -replace under %q, the store under %q holds total %d and %d keys, want 1 and 1: another service's counts were deleted", base, other, c.Total, st.Keys())
	}
	if n, err := st.Hit(t.Context()); err != nil || n != 2 {
		t.Errorf("its next /hi = %d, %v, want 2: its /hi counter was deleted, so numbers repeat", n, err)
	}
}

// TestReviewRedisSyncConcurrentVisitsGetDistinctTotals is coverage, not
// a bug: visits to one key that share a Sync round must each get their
// own total (1..n), as one after another would. A planted bug that gave
// every visit of a round Redis's final total survived the package's
// tests; this catches it.
func TestReviewRedisSyncConcurrentVisitsGetDistinctTotals(t *testing.T) {
	for _, where := range []string{"standalone", "cluster"} {
		t.Run(where, func(t *testing.T) {
			st := backend(where, store.Sync).Open(t, storetest.Config{Dir: t.TempDir()}).(*Store)
			defer st.Close()
			const n = 64
			var wg sync.WaitGroup
			totals := make([]uint64, n)
			for i := range n {
				wg.Go(func() {
					c, err := st.Incr(t.Context(), []byte("together"))
					if err != nil {
						t.Error(err)
					}
					totals[i] = c.Total
				})
			}
			wg.Wait()
			seen := map[uint64]bool{}
			for _, v := range totals {
				if v < 1 || v > n || seen[v] {
					t.Fatalf("totals %v: want each of 1..%d once", totals, n)
				}
				seen[v] = true
			}
			if st.Stats().Rounds >= n {
				t.Logf("every visit had its own round (%d rounds): the shared-round path was not exercised", st.Stats().Rounds)
			}
		})
	}
}
