//go:build race

package web

// raceEnabled reports whether the race detector is on. Under it sync.Pool
// drops a quarter of what is put back, on purpose, so allocation budgets
// are checked only in normal builds (scripts/test.sh runs them so).
const raceEnabled = true
