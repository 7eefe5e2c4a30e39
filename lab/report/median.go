package report

import (
	"slices"

	"golang.org/x/perf/benchmath"
)

// Median returns the median of values as benchstat computes it
// (benchmath's, the mean of the two middle values for an even count); 0
// for none. It is the lab's one median: the tables, the load test and
// the stream load test all use it.
func Median(values []float64) float64 {
	if len(values) == 0 {
		return 0
	}
	return benchmath.AssumeNothing.Summary(benchmath.NewSample(slices.Clone(values), &benchmath.DefaultThresholds), Confidence).Center
}
