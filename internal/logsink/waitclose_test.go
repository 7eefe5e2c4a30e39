package logsink

import (
	"bytes"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
)

// lockedBuffer is a destination a test reads after Close.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

// TestWriteWaitRacingCloseLosesNothing: a WriteWait that returns no
// error has its line written, even when Close runs meanwhile: either the
// line is written, or WriteWait says ErrClosed. Before, a line put in the
// ring after the drain goroutine's last look, but before it marked
// itself done, was acknowledged and never written (8 lines in 300
// rounds).
func TestWriteWaitRacingCloseLosesNothing(t *testing.T) {
	bounded(t)
	lost := int64(0)
	for round := range 1000 {
		var out lockedBuffer
		w := New(&out, Options{Slots: 4})
		var acked atomic.Int64
		var wg sync.WaitGroup
		for g := range 4 {
			wg.Go(func() {
				for i := range 50 {
					if _, err := w.WriteWait(fmt.Appendf(nil, "r%d-g%d-%d\n", round, g, i)); err == nil {
						acked.Add(1)
					} else if err != ErrClosed {
						t.Errorf("WriteWait = %v, want nil or ErrClosed", err)
					}
				}
			})
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		wg.Wait()
		if n := int64(bytes.Count(out.b.Bytes(), []byte("\n"))); n < acked.Load() {
			lost += acked.Load() - n
		}
	}
	if lost != 0 {
		t.Errorf("%d lines WriteWait acknowledged were never written", lost)
	}
}
