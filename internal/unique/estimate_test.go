package unique

import (
	"math/rand/v2"
	"testing"

	"github.com/axiomhq/hyperloglog"
)

// TestEstimateIsTheLibrarys: estimate answers what the library's
// Estimate answers, sparse or dense, small or past the linear-counting
// range, at every checkpoint of a sketch growing to 400,000 visitors,
// and it reads the registers itself once the sketch is dense.
func TestEstimateIsTheLibrarys(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	h := hyperloglog.New14()
	dense := 0
	for n := 0; n <= 400_000; n++ {
		if n < 2000 && n%7 == 0 || n%997 == 0 {
			got := estimate(h)
			if want := h.Estimate(); got != want {
				t.Fatalf("after %d visitors estimate = %d, the library's %d", n, got, want)
			}
			if data, _ := h.AppendBinary(nil); len(data) > 3 && data[3] == 0 {
				dense++
			}
		}
		h.InsertHash(r.Uint64())
		if n%5 == 0 {
			h.InsertHash(r.Uint64() >> (n % 40)) // many leading zeros: high registers
		}
	}
	if dense < 100 {
		t.Errorf("only %d checkpoints had a dense sketch: the registers were not read", dense)
	}
}

// BenchmarkEstimate prices an estimate of a dense sketch of 200,000
// visitors: the library's, and estimate's.
func BenchmarkEstimate(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 2))
	h := hyperloglog.New14()
	for range 200_000 {
		h.InsertHash(r.Uint64())
	}
	b.Run("library", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			h.Estimate()
		}
	})
	b.Run("registers", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			estimate(h)
		}
	})
}
