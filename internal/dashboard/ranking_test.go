package dashboard_test

import (
	"cmp"
	"fmt"
	"math/rand/v2"
	"regexp"
	"slices"
	"strings"
	"testing"

	"visitors/internal/dashboard"
	"visitors/internal/store"
)

// TestRankKeepsTheLargest: a Ranking of n keeps the n entries a full
// sort puts first, largest count first, ties in key order.
func TestRankKeepsTheLargest(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, by := range []dashboard.Sort{dashboard.ByTotal, dashboard.ByToday} {
		for _, n := range []int{1, 7, 50, 500} {
			var all []store.Entry
			top := dashboard.Rank(by, n)
			for range 1000 {
				e := store.Entry{Key: fmt.Appendf(nil, "k%04d", r.IntN(5000)), Counts: store.Counts{Total: r.Uint64N(20), Today: r.Uint64N(20)}}
				if slices.ContainsFunc(all, func(o store.Entry) bool { return string(o.Key) == string(e.Key) }) {
					continue
				}
				all = append(all, e)
				top.Offer(&e)
			}
			count := func(e store.Entry) uint64 {
				if by == dashboard.ByToday {
					return e.Today
				}
				return e.Total
			}
			slices.SortFunc(all, func(a, b store.Entry) int {
				if c := cmp.Compare(count(b), count(a)); c != 0 {
					return c
				}
				return strings.Compare(string(a.Key), string(b.Key))
			})
			got := top.Sorted()
			if len(got) != min(n, len(all)) {
				t.Fatalf("%s n=%d: kept %d", by, n, len(got))
			}
			for i := range got {
				if string(got[i].Key) != string(all[i].Key) {
					t.Fatalf("%s n=%d: [%d] = %s, want %s", by, n, i, got[i].Key, all[i].Key)
				}
			}
		}
	}
}

var rowKeyRE = regexp.MustCompile(`<td class="key"><a href="[^"]*">([^<]*)</a>`)

// TestRankedOverview: sorted by total, the overview pages through the
// counters largest first; a ranking is reused for its time, with the
// counts read again, and made anew after it.
func TestRankedOverview(t *testing.T) {
	e := newEnv(t, memory(t))
	ctx := t.Context()
	for i := range 120 {
		if _, err := e.st.Set(ctx, fmt.Appendf(nil, "k%03d", i), uint64(i%60)); err != nil {
			t.Fatal(err)
		}
	}
	b := e.browser(t)
	b.signIn(root)
	keys := func(path string) []string {
		t.Helper()
		a := b.get(path)
		if a.code != 200 {
			t.Fatalf("GET %s = %d", path, a.code)
		}
		var ks []string
		for _, m := range rowKeyRE.FindAllStringSubmatch(a.body, -1) {
			ks = append(ks, m[1])
		}
		return ks
	}
	p0 := keys("/dashboard?sort=total")
	p1 := keys("/dashboard?sort=total&page=1")
	p2 := keys("/dashboard?sort=total&page=2")
	if len(p0) != 50 || len(p1) != 50 || len(p2) != 20 {
		t.Fatalf("pages of %d, %d, %d", len(p0), len(p1), len(p2))
	}
	if p0[0] != "k059" || p0[1] != "k119" || p0[2] != "k058" || p2[19] != "k060" {
		t.Errorf("order: %v ... %v", p0[:3], p2[17:])
	}
	// Within the ranking's time a new leader is not ranked yet, but the
	// counts shown are current.
	if _, err := e.st.Set(ctx, []byte("k000"), 1000); err != nil {
		t.Fatal(err)
	}
	if _, err := e.st.Set(ctx, []byte("k059"), 999); err != nil {
		t.Fatal(err)
	}
	a := b.get("/dashboard?sort=total")
	if ks := keys("/dashboard?sort=total"); ks[0] != "k059" || !strings.Contains(a.body, `<td class="num total">999</td>`) {
		t.Errorf("within the ranking's time: first %s", ks[0])
	}
	e.clock.Add(dashboard.DefaultRankTTL)
	if ks := keys("/dashboard?sort=total"); ks[0] != "k000" || ks[1] != "k059" {
		t.Errorf("after the ranking's time: %v", ks[:2])
	}
	if a := b.get("/dashboard?sort=total&page=200"); a.code != 400 {
		t.Errorf("page 200 = %d, want 400", a.code)
	}
	if a := b.get("/dashboard?sort=size"); a.code != 400 {
		t.Errorf("sort=size = %d, want 400", a.code)
	}
}
