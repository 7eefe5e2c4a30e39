//go:build race

// Package race reports whether the race detector is on. Under it,
// sync.Pool drops a quarter of what is put back, on purpose, so
// allocation budgets are checked only in normal builds (scripts/test.sh
// runs them so).
package race

// Enabled reports whether the binary was built with -race.
const Enabled = true
