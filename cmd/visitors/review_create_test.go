package main

import (
	"testing"

	"visitors/internal/servertest"
)

// TestReviewAddSurvivesSIGKILL: an add is an owner operation, written
// and synced before it answers in both modes: SIGKILL right after the
// answers, without waiting for a flush, loses none of them, and the
// batch visits counted before an add are written with it; a negative
// add is not undone by the records of the visits before it.
func TestReviewAddSurvivesSIGKILL(t *testing.T) {
	for _, durability := range []string{"sync", "batch"} {
		t.Run(durability, func(t *testing.T) {
			args := []string{"-data", t.TempDir(), "-durability", durability, "-flush-interval", "1h"}
			p := servertest.Start(t, bin, openEnv, args...)
			up, down := mustCreate(t, p, "up"), mustCreate(t, p, "down")
			for range 3 {
				mustGet(t, p.URL("/counter/up.svg"))
				mustGet(t, p.URL("/counter/down.svg"))
			}
			if c := mustAdd(t, p, up.Token.Token, "up", 1<<39-3); c.Total != 1<<39 || c.Today != 1<<39 {
				t.Fatalf("add 2^39-3 after 3 visits = %+v", c)
			}
			if c := mustAdd(t, p, down.Token.Token, "down", -2); c.Total != 1 || c.Today != 1 {
				t.Fatalf("add -2 after 3 visits = %+v", c)
			}
			if err := p.Kill(); err != nil {
				t.Fatal(err)
			}
			p = servertest.Start(t, bin, openEnv, args...)
			for k, tok := range map[string]string{"up": up.Token.Token, "down": down.Token.Token} {
				want := map[string]uint64{"up": 1 << 39, "down": 1}[k]
				if c := mustCounter(t, p, tok, k); c.Total != want || c.Today != want {
					t.Errorf("after SIGKILL, %s = %+v, want total and today %d", k, c, want)
				}
			}
		})
	}
}
