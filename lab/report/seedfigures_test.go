package report

import (
	"strings"
	"testing"
)

// seedFigures are figures the seeds print for a step of their code,
// quoted with the seed's line (files in the shared seeds folder:
// 002 the YAPC::Asia talk, 003 the /hello article, 004 the /whoami
// note). The lab claims every published figure is attached to the step
// that produced it; TestPublishedAttached only checks the figures that
// are already in Published, so it cannot notice one left out.
var seedFigures = []struct {
	bench, step, figure, where string
}{
	// Present: controls.
	{"Greeting", "0", "12,843 ns", "002:329 BenchmarkHi-4 100000 12843 ns/op"},
	{"Greeting", "1", "1,451 ns", "002:507 BenchmarkHi-4 1000000 1451 ns/op"},
	{"Whoami", "1", "716 ns", "004:82 the 716ns reported by the initial benchmark"},
	// Missing.
	{"Greeting", "1", "1,420 ns", "002:518 BenchmarkHi-4 3000000 1420 ns/op (the -benchtime=3s profiling run of step 1)"},
	{"Whoami", "0", "33,000", "004:36 the initial version, load-tested with wrk, handled an average of 33,000 requests per second"},
	{"Digest", "0", "2.3 s", "001:140 开始是2.3s (the whole program before step 1)"},
	{"Digest", "1", "1.2 s", "001:140 目前是1.2s (after step 1)"},
	{"Whoami", "0", "2 s in the handler", "004:50 the total runtime of the function reduced from 2s"},
	{"Whoami", "1", "0.2 s in the handler", "004:50 … to 0.2s"},
	{"Hello", "0", "1,411 B", "003:102/377/499 the original handler at 4,297, 4,671 and 5,699 ns, 1411 B/op, 25 allocs/op"},
}

func TestSeedFiguresAttached(t *testing.T) {
	for _, f := range seedFigures {
		if !strings.Contains(Published[f.bench][f.step], f.figure) {
			t.Errorf("%s step %s: the seed's %q (%s) is not in Published (%q)", f.bench, f.step, f.figure, f.where, Published[f.bench][f.step])
		}
	}
}
