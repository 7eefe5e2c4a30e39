//go:build !unix

package certs

import "testing"

// mustFIFO fails the test: this system has no FIFO to put at a path.
func mustFIFO(t *testing.T, name string) {
	t.Helper()
	t.Fatalf("no FIFO on this system for %s", name)
}
