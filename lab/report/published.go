package report

import (
	"regexp"
	"strconv"
	"strings"
)

// Published holds the figures each case study published, by benchmark
// and step, as they were printed, attached to the step whose code
// produced them. They were measured on the authors' machines and Go
// versions: a Mac laptop in 2015 with "Go 1.4.2 or 1.5+ recommended"
// (greeting, -4), a 2019 Mac with an 8-thread CPU (hello, -8), machines
// and years the digest article and the /whoami note do not give. They are context for the shape of the curve, not targets.
// Several figures of one step are separated by "; ".
var Published = map[string]map[string]string{
	"Greeting": { // YAPC::Asia 2015: BenchmarkHi, a new httptest.ResponseRecorder per iteration until step 4
		"0": "12,843 ns",
		"1": "1,451 ns; 1,180 ns, 720 B, 9 allocs; 1,420 ns", // the second: the run benchcmp compared (mem.0); the third: the -benchtime=3s profiling run
		"3": "964 ns, 224 B, 5 allocs",                       // mem.2
		"4": "649 ns, 32 B, 2 allocs",                        // mem.3: the recorder reused
	},
	"Digest": { // allocations per call, testing.AllocsPerRun(100, foo(rand.Int())); times: the whole program, foo(12345) and 100 foo(rand.Int()) under the CPU profiler
		"0": "100,158 allocs; 2.3 s for 101 calls (about 23 ms a call)",
		"1": "159 allocs; 1.2 s for 101 calls (about 12 ms a call)",
		"2": "23 allocs",
		"3": "19 allocs",
		"4": "18 allocs",
		"5": "3 allocs",
		"7": "1 alloc",
		"8": "0 allocs",
	},
	"Hello": { // go test -bench . -benchtime=3s (10s from step 5), logrus' TextFormatter until step 4
		"0": "5,403 ns, 1,307 B, 25 allocs; 4,116 ns; 4,297 ns, 1,411 B, 25 allocs; 4,671 ns, 1,411 B, 25 allocs; 5,699 ns, 1,411 B, 25 allocs", // the first: the run the article compared with; then its earlier runs of the same code
		"1": "6,325 ns, 1,153 B, 23 allocs",
		"2": "4,203 ns, 1,131 B, 21 allocs",
		"3": "3,999 ns, 1,131 B, 21 allocs",
		"4": "3,421 ns, 783 B, 19 allocs",
		"5": "1,077 ns, 391 B, 5 allocs",
		"6": "796 ns, 303 B, 2 allocs",
		"7": "590 ns, 217 B, 2 allocs",
	},
	"Whoami": { // the note's go test benchmark, after the host name fix; step 0: its wrk load test; the profile's time in the handler, before and after the fix
		"0": "33,000 req/s (wrk); 2 s in the handler (profile)",
		"1": "716 ns, 447 B, 12 allocs; 0.2 s in the handler (profile)",
		"3": "520 ns",
	},
}

// Figures splits a published entry into its figures.
func Figures(published string) []string {
	if published == "" {
		return nil
	}
	return strings.Split(published, "; ")
}

var nsRx = regexp.MustCompile(`^([\d,]+) ns`)

// PublishedNs returns the first time per operation of a published entry
// in ns, and whether it has one.
func PublishedNs(published string) (float64, bool) {
	m := nsRx.FindStringSubmatch(published)
	if m == nil {
		return 0, false
	}
	v, err := strconv.ParseFloat(strings.ReplaceAll(m[1], ",", ""), 64)
	return v, err == nil
}
