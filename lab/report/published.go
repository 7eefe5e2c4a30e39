package report

// Published holds the figures each case study published, by benchmark
// and step, as they were printed: on 2015-era laptops and Go versions, so
// they are context for the shape of the curve, not targets.
var Published = map[string]map[string]string{
	"Greeting": { // YAPC::Asia 2015, Go 1.5
		"0": "12,843 ns",
		"1": "1,451 ns",
		"2": "964 ns",
		"3": "649 ns, 32 B, 2 allocs",
	},
	"Digest": { // allocations per call
		"0": "100,158 allocs",
		"1": "159 allocs",
		"2": "23 allocs",
		"3": "19 allocs",
		"4": "3 allocs",
		"5": "0 allocs (unsafe)",
	},
	"Hello": {
		"0": "5,403 ns, 25 allocs",
		"1": "6,325 ns",
		"2": "4,203 ns",
		"3": "3,421 ns",
		"4": "1,077 ns",
		"5": "796 ns",
		"6": "590 ns, 2 allocs",
	},
	"Whoami": {
		"0": "716 ns",
		"3": "520 ns",
	},
}
