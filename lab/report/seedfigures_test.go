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
	// Missing from an earlier round of the lab.
	{"Greeting", "1", "1,420 ns", "002:518 BenchmarkHi-4 3000000 1420 ns/op (the -benchtime=3s profiling run of step 1)"},
	{"Whoami", "0", "33,000", "004:36 the initial version, load-tested with wrk, handled an average of 33,000 requests per second"},
	{"Digest", "0", "2.3 s", "001:140 开始是2.3s (the whole program before step 1)"},
	{"Digest", "1", "1.2 s", "001:140 目前是1.2s (after step 1)"},
	{"Whoami", "0", "2 s in the handler", "004:50 the total runtime of the function reduced from 2s"},
	{"Whoami", "1", "0.2 s in the handler", "004:50 … to 0.2s"},
	// Every allocation count of the digest article and the rest of the note's figures.
	{"Digest", "0", "100,158 allocs", "001:123 Allocs: 100158"},
	{"Digest", "1", "159 allocs", "001:139 Allocs: 159"},
	{"Digest", "2", "23 allocs", "001:170 Allocs: 23"},
	{"Digest", "3", "19 allocs", "001:179 减少到了19个"},
	{"Digest", "4", "18 allocs", "001:183 到 18 了"},
	{"Digest", "5", "3 allocs", "001:198 只剩下 3 个分配了"},
	{"Digest", "7", "1 alloc", "001:266 减少到 1 个分配"},
	{"Digest", "8", "0 allocs", "001:272 Allocs: 0"},
	{"Whoami", "1", "447 B, 12 allocs", "004:60 12 allocations for a total of 447 bytes per operation"},
	{"Whoami", "3", "520 ns", "004:82 each operation took about 520ns"},
	{"Hello", "0", "1,411 B", "003:102/377/499 the original handler at 4,297, 4,671 and 5,699 ns, 1411 B/op, 25 allocs/op"},
}

func TestSeedFiguresAttached(t *testing.T) {
	for _, f := range seedFigures {
		if !strings.Contains(Published[f.bench][f.step], f.figure) {
			t.Errorf("%s step %s: the seed's %q (%s) is not in Published (%q)", f.bench, f.step, f.figure, f.where, Published[f.bench][f.step])
		}
	}
}
