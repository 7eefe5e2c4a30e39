package redisstore

import (
	"math/rand/v2"
	"testing"
	"time"
)

// TestHiCloseAfterALaterBlockGivesNothingBack: an instance that closes
// after another reserved a block of /hi numbers beyond its own gives
// nothing back, so no number is handed out twice: the /hi counter stays
// at the other's block, and a new instance starts after it. Both when
// the closing instance holds one block (b reserved the next) and when it
// also holds a block ahead (b reserved the one after that).
func TestHiCloseAfterALaterBlockGivesNothingBack(t *testing.T) {
	const block = 10
	tests := []struct {
		name    string
		aHits   int    // a's hits before b's first: 5 or more reserve a's block ahead
		aAhead  string // the /hi counter once a's block ahead is reserved ("": none)
		bFirst  uint64 // b's first number
		hiAfter string // the /hi counter after a's Close: b's block's end
		cFirst  uint64 // a new instance's first number
	}{
		{"one block", 4, "", 11, "20", 21},
		{"a block ahead", 5, "20", 21, "30", 31},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			prefix := prefixOf(t.TempDir())
			hi := newNames(prefix).hi
			open := func() *Store {
				t.Helper()
				st, err := Open(Options{URL: standalone.URL(), Prefix: prefix, FlushInterval: time.Hour, HiBlock: block})
				if err != nil {
					t.Fatal(err)
				}
				return st
			}
			m := musts{t}
			seen := map[uint64]string{}
			hit := func(st *Store, who string) uint64 {
				t.Helper()
				n := m.n(st.Hit(t.Context()))
				if by, ok := seen[n]; ok {
					t.Errorf("/hi number %d handed out twice: to %s, then to %s", n, by, who)
				}
				seen[n] = who
				return n
			}
			a := open()
			for range tt.aHits {
				hit(a, "a")
			}
			if tt.aAhead != "" {
				waitRedisValue(t, hi, tt.aAhead)
			}
			b := open()
			defer b.Close()
			if got := hit(b, "b"); got != tt.bFirst {
				t.Fatalf("b's first Hit = %d, want %d (the block after a's)", got, tt.bFirst)
			}
			if err := a.Close(); err != nil {
				t.Fatal(err)
			}
			if got := redisGet(t, hi); got != tt.hiAfter {
				t.Errorf("/hi counter after a's Close = %s, want %s: b reserved after a's blocks, nothing may go back", got, tt.hiAfter)
			}
			c := open()
			defer c.Close()
			if got := hit(c, "c"); got != tt.cFirst {
				t.Errorf("a new instance's first Hit = %d, want %d", got, tt.cFirst)
			}
			for range block - 1 { // b's whole block, c's and past
				hit(b, "b")
				hit(c, "c")
			}
		})
	}
}

// TestHiNumbersUniqueAcrossClosesAndOpens: instances on one /hi counter
// hit, close and open in a random order (fixed seeds, so a failure
// replays), with blocks of 4 numbers: no number is handed out twice,
// standalone and on a cluster.
func TestHiNumbersUniqueAcrossClosesAndOpens(t *testing.T) {
	for _, where := range []string{"standalone", "cluster"} {
		t.Run(where, func(t *testing.T) {
			for seed := range uint64(8) {
				rng := rand.New(rand.NewPCG(seed, 39))
				prefix := prefixOf(t.TempDir())
				open := func() *Store {
					t.Helper()
					st, err := Open(at(where, Options{Prefix: prefix, FlushInterval: time.Hour, HiBlock: 4}))
					if err != nil {
						t.Fatal(err)
					}
					return st
				}
				sts := []*Store{open(), open(), open()}
				seen := map[uint64]int{}
				for step := range 200 {
					i := rng.IntN(len(sts))
					if rng.IntN(8) == 0 {
						if err := sts[i].Close(); err != nil {
							t.Fatal(err)
						}
						sts[i] = open()
						continue
					}
					n, err := sts[i].Hit(t.Context())
					if err != nil {
						t.Fatal(err)
					}
					if prev, ok := seen[n]; ok {
						t.Fatalf("seed %d, step %d: /hi number %d handed out twice (first at step %d)", seed, step, n, prev)
					}
					seen[n] = step
				}
				for _, st := range sts {
					if err := st.Close(); err != nil {
						t.Fatal(err)
					}
				}
			}
		})
	}
}
