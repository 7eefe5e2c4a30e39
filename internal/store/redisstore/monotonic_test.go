package redisstore

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"visitors/internal/store"
	"visitors/internal/store/storetest"
)

// TestCountsNeverGoBackAcrossInstances: counts a reader sees do not go
// backwards (issue 23, item 11). Two batch instances share a real Redis;
// a few visitors visit one key through both, interleaved with rounds and
// with reads on both; between two reads on one instance, total, today and
// unique_today never decrease, as no owner changes the counter. Caught on
// main: an instance showed unique_today 2, then 1: Redis's count already
// held a visitor another instance sent, and this instance added it again
// while it was not yet sent.
func TestCountsNeverGoBackAcrossInstances(t *testing.T) {
	for _, where := range []string{"standalone", "cluster"} {
		t.Run(where, func(t *testing.T) {
			dir := t.TempDir()
			clock := storetest.NewClock(time.Now().UTC()) // fixed: the day does not change under the test
			nodes := []*node{mustInstance(t, where, dir, store.Batch, clock.Now), mustInstance(t, where, dir, store.Batch, clock.Now)}
			type seen struct{ total, today, unique uint64 }
			last := make([]seen, len(nodes))
			rng := rand.New(rand.NewPCG(23, 11))
			const key = "monotonic"
			read := func(step int) {
				t.Helper()
				for i, in := range nodes {
					c, err := in.st.Get(t.Context(), []byte(key))
					if err != nil {
						t.Fatal(err)
					}
					now := seen{c.Total, c.Today, in.today(key)}
					for _, f := range []struct {
						name       string
						was, shown uint64
					}{{"total", last[i].total, now.total}, {"today", last[i].today, now.today}, {"unique_today", last[i].unique, now.unique}} {
						if f.shown < f.was {
							t.Fatalf("step %d: instance %d showed %s %d, then %d", step, i, f.name, f.was, f.shown)
						}
					}
					last[i] = now
				}
			}
			for step := range 400 {
				in := nodes[rng.IntN(len(nodes))]
				in.visit(t, key, rng.IntN(4), fmt.Sprint("ua", rng.IntN(2)))
				read(step)
				if rng.IntN(3) == 0 {
					nodes[rng.IntN(len(nodes))].flush(t)
					read(step)
				}
			}
		})
	}
}
