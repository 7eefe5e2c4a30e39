package webtest

import (
	"sync"
	"testing"
	"time"
)

// Receive returns the next value from ch. If none comes within
// [Deadline] it fails tb, saying it waited for what.
func Receive[T any](tb testing.TB, ch <-chan T, what string) T {
	tb.Helper()
	t := time.NewTimer(Deadline)
	defer t.Stop()
	select {
	case v := <-ch:
		return v
	case <-t.C:
		tb.Fatalf("no %s within %v", what, Deadline)
		panic("unreachable")
	}
}

// Wait waits for wg. If it is not done within [Deadline] it fails tb,
// saying it waited for what; the goroutine that waits is then left
// behind.
func Wait(tb testing.TB, wg *sync.WaitGroup, what string) {
	tb.Helper()
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	Receive(tb, done, what)
}
