package unique

import (
	"math"
	"sync"

	"github.com/axiomhq/hyperloglog"
)

// precision is the HyperLogLog precision of every sketch
// (hyperloglog.New14): 2^14 registers.
const precision = 14

// denseHeader is the header of a dense sketch's binary form
// (hyperloglog.Sketch.AppendBinary): a version, the precision, a base of
// 0, 0 for dense, and the registers' count, big-endian; the registers
// follow, a byte each.
const denseHeader = 8

// registers holds the copies of a sketch's registers that estimate reads,
// 16 KB each.
var registers = sync.Pool{New: func() any { return new([]byte) }}

// inverse[v] is 2^-v, as the library computes it (1 / math.Pow(2, v)):
// exact, a power of two.
var inverse = func() (t [256]float64) {
	for v := range t {
		t[v] = 1.0 / math.Pow(2.0, float64(v))
	}
	return t
}()

// estimate returns h.Estimate(): for a dense sketch, from a copy of its
// registers (AppendBinary), with the library's formula, its sum taken in
// the same order of the same exact terms, so the same float to the bit
// (TestEstimateIsTheLibrarys), without the library's math.Pow per
// register: 385 µs for 16,384 registers, which a JSON read of a busy
// counter paid once every 1/staleShare of its visitors (the -clients
// load test: half the JSON handler's CPU; docs/performance.md), and
// daily.json a past day's sketch the first time it is read. A sparse
// sketch, or a form this does not know, is left to the library.
func estimate(h *hyperloglog.Sketch) uint64 {
	const m = 1 << precision
	buf := registers.Get().(*[]byte)
	defer registers.Put(buf)
	data, err := h.AppendBinary((*buf)[:0])
	*buf = data
	if err != nil || len(data) != denseHeader+m || data[1] != precision || data[2] != 0 || data[3] != 0 ||
		int(data[4])<<24|int(data[5])<<16|int(data[6])<<8|int(data[7]) != m {
		return h.Estimate()
	}
	var sum, ez float64
	for _, v := range data[denseHeader:] {
		if v == 0 {
			ez++
		}
		sum += inverse[v]
	}
	const fm = float64(m)
	alpha := 0.7213 / (1 + 1.079/fm)
	est := alpha * fm * (fm - ez) / (sum + beta14(ez))
	return uint64(est + 0.5)
}

// beta14 is the library's LogLog-Beta bias correction for precision 14,
// term for term.
func beta14(ez float64) float64 {
	zl := math.Log(ez + 1)
	return -0.371009760230692*ez +
		0.00978811941207509*zl +
		0.185796293324165*math.Pow(zl, 2) +
		0.203015527328432*math.Pow(zl, 3) +
		-0.116710521803686*math.Pow(zl, 4) +
		0.0431106699492820*math.Pow(zl, 5) +
		-0.00599583540511831*math.Pow(zl, 6) +
		0.000449704299509437*math.Pow(zl, 7)
}
