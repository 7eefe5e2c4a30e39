package logsink

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"
)

// gate is a log destination that holds every Write until it is opened,
// as a stalled pipe or disk would, and records the size of each Write.
type gate struct {
	open chan struct{}

	mu     sync.Mutex // guards out and chunks
	out    strings.Builder
	chunks []int
}

func newGate() *gate { return &gate{open: make(chan struct{})} }

func (g *gate) Write(p []byte) (int, error) {
	<-g.open
	g.mu.Lock()
	defer g.mu.Unlock()
	g.out.Write(p)
	g.chunks = append(g.chunks, len(p))
	return len(p), nil
}

func (g *gate) String() string {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.out.String()
}

func (g *gate) maxChunk() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	m := 0
	for _, n := range g.chunks {
		m = max(m, n)
	}
	return m
}

// line returns the 64-byte line number i.
func line(i int) []byte {
	s := fmt.Sprintf("line %08d ", i)
	return []byte(s + strings.Repeat("x", 63-len(s)) + "\n")
}

// TestWriterHoldsRingAndBuffer: while the destination is stalled, a
// Writer holds its ring's lines (Slots rounded up to a power of two, at
// least 2; 8192 by default) and what fits in its buffer (BufferBytes; 64 KiB by
// default), and drops and counts the rest. Once the destination moves,
// every line held is written in order, in writes of at most BufferBytes,
// and the drop reports add up to Dropped.
func TestWriterHoldsRingAndBuffer(t *testing.T) {
	bounded(t)
	tests := []struct {
		name      string
		o         Options
		ring, buf int
	}{
		{"defaults", Options{}, 8192, 64 << 10},
		{"rounded up", Options{Slots: 100, BufferBytes: 1000}, 128, 1000},
		{"power of two", Options{Slots: 128, BufferBytes: 640}, 128, 640},
		{"one slot is two", Options{Slots: 1, BufferBytes: 256}, 2, 256},
		{"two slots", Options{Slots: 2, BufferBytes: 256}, 2, 256},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dst := newGate()
			w := New(dst, tt.o)
			// However far the drain goroutine got, the ring alone
			// holds its first lap without a drop.
			for i := range tt.ring {
				if n, err := w.Write(line(i)); n != 64 || err != nil {
					t.Fatalf("Write = %d, %v; want 64, nil", n, err)
				}
			}
			if d := w.Dropped(); d != 0 {
				t.Fatalf("Dropped() = %d after %d lines into a ring of %d, want 0", d, tt.ring, tt.ring)
			}
			// The ring and the buffer hold at most ring + buf/64 lines.
			total := tt.ring + tt.buf/64 + 1
			for i := tt.ring; i < total; i++ {
				if n, err := w.Write(line(i)); n != 64 || err != nil {
					t.Fatalf("Write = %d, %v; want 64, nil even when dropping", n, err)
				}
			}
			dropped := w.Dropped()
			if dropped == 0 {
				t.Fatalf("Dropped() = 0 after %d lines into a ring of %d and a buffer of %d bytes, want > 0", total, tt.ring, tt.buf)
			}
			close(dst.open)
			if err := w.Close(); err != nil {
				t.Fatalf("Close() = %v", err)
			}
			if got := w.Dropped(); got != dropped {
				t.Errorf("Dropped() = %d after Close, %d before", got, dropped)
			}

			var kept []string
			var reported uint64
			sc := bufio.NewScanner(strings.NewReader(dst.String()))
			for sc.Scan() {
				if !strings.HasPrefix(sc.Text(), "{") {
					kept = append(kept, sc.Text())
					continue
				}
				var r struct {
					Level        string
					Message      string
					Dropped      uint64
					DroppedTotal uint64 `json:"dropped_total"`
				}
				if err := json.Unmarshal(sc.Bytes(), &r); err != nil || r.Level != "warn" || !strings.HasPrefix(r.Message, "log lines dropped") {
					t.Fatalf("unexpected line %q (%v)", sc.Text(), err)
				}
				reported += r.Dropped
				if r.DroppedTotal != reported {
					t.Errorf("drop report says %d in total, the reports before it and its own add up to %d", r.DroppedTotal, reported)
				}
			}
			if reported != dropped {
				t.Errorf("drop reports add up to %d, Dropped() = %d", reported, dropped)
			}
			if uint64(len(kept))+dropped != uint64(total) {
				t.Errorf("%d lines written and %d dropped, want %d in all", len(kept), dropped, total)
			}
			for i, l := range kept {
				if i < tt.ring && l != strings.TrimSuffix(string(line(i)), "\n") {
					t.Fatalf("line %d = %q, want %q: lines of the first lap must all be kept, in order", i, l, line(i))
				}
			}
			if m := dst.maxChunk(); m > tt.buf || (len(kept)*64 >= 2*tt.buf && m != tt.buf) {
				t.Errorf("largest write to the destination = %d bytes, want the buffer's %d", m, tt.buf)
			}
		})
	}
}

// TestWriterLongLine: a line longer than a slot is kept whole.
func TestWriterLongLine(t *testing.T) {
	bounded(t)
	dst := newGate()
	close(dst.open)
	w := New(dst, Options{Slots: 2, SlotBytes: 8})
	long := strings.Repeat("0123456789", 30) + "\n"
	w.Write([]byte(long))
	w.Write([]byte("short\n"))
	if err := w.Close(); err != nil {
		t.Fatalf("Close() = %v", err)
	}
	if got, want := dst.String(), long+"short\n"; got != want {
		t.Errorf("output = %q, want %q", got, want)
	}
}

// failing is a destination whose first Write fails with errFirst and
// every later one with errLater.
type failing struct{ calls int }

var errFirst, errLater = errors.New("disk full"), errors.New("later error")

func (f *failing) Write(p []byte) (int, error) {
	f.calls++
	if f.calls == 1 {
		return 0, errFirst
	}
	return 0, errLater
}

// TestCloseReportsFirstError: Write never fails, even when the
// destination does; Close reports the destination's first error.
func TestCloseReportsFirstError(t *testing.T) {
	bounded(t)
	w := New(&failing{}, Options{BufferBytes: 16})
	for i := range 100 {
		if n, err := w.Write(line(i)); n != 64 || err != nil {
			t.Fatalf("Write = %d, %v; want 64, nil", n, err)
		}
	}
	if err := w.Close(); !errors.Is(err, errFirst) {
		t.Errorf("Close() = %v, want %v", err, errFirst)
	}
}

// TestCloseReportsFlushError: an error the destination returns only
// when the last lines are flushed is reported by Close too.
func TestCloseReportsFlushError(t *testing.T) {
	bounded(t)
	w := New(&failing{}, Options{})
	w.Write(line(0))
	if err := w.Close(); !errors.Is(err, errFirst) {
		t.Errorf("Close() = %v, want %v", err, errFirst)
	}
}

// valve is a log destination that a test can stall and free again.
type valve struct {
	mu     sync.Mutex // guards closed and out
	cond   *sync.Cond
	closed bool
	out    strings.Builder
}

func newValve() *valve {
	v := &valve{}
	v.cond = sync.NewCond(&v.mu)
	return v
}

func (v *valve) Write(p []byte) (int, error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	for v.closed {
		v.cond.Wait()
	}
	return v.out.Write(p)
}

func (v *valve) set(closed bool) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.closed = closed
	v.cond.Broadcast()
}

func (v *valve) String() string {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.out.String()
}

// TestDropReportsAddUp: each drop report gives the lines dropped since
// the last report and the total so far.
func TestDropReportsAddUp(t *testing.T) {
	bounded(t)
	dst := newValve()
	w := New(dst, Options{Slots: 8, BufferBytes: 256, Poll: time.Millisecond})
	var want []uint64 // the total after each stall
	for stall := range 3 {
		dst.set(true)
		for i := range 8 + 256/64 + 1 + stall { // more than ring and buffer hold
			w.Write(line(i))
		}
		want = append(want, w.Dropped())
		dst.set(false)
		// Wait for this stall's report before the next one.
		deadline := time.Now().Add(10 * time.Second)
		for !strings.Contains(dst.String(), fmt.Sprintf(`"dropped_total":%d,`, w.Dropped())) {
			if time.Now().After(deadline) {
				t.Fatalf("no report of %d dropped lines in 10s:\n%s", w.Dropped(), dst.String())
			}
			time.Sleep(time.Millisecond)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatalf("Close() = %v", err)
	}
	var got []uint64
	var sum uint64
	for _, l := range strings.Split(dst.String(), "\n") {
		var r struct {
			Dropped      uint64
			DroppedTotal uint64 `json:"dropped_total"`
		}
		if !strings.HasPrefix(l, "{") {
			continue
		}
		if err := json.Unmarshal([]byte(l), &r); err != nil {
			t.Fatalf("report %q: %v", l, err)
		}
		sum += r.Dropped
		if sum != r.DroppedTotal {
			t.Errorf("report %q: the reports' dropped add up to %d, want its dropped_total", l, sum)
		}
		got = append(got, r.DroppedTotal)
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("reported totals %v, want one report per stall: %v", got, want)
	}
}

// TestIdleSleepsAndAWriteWakes: a Writer with nothing to write stops
// looking: with Poll a millisecond, its drain goroutine takes one nap
// in 200ms, not two hundred looks, and after each line it naps again.
// A line written to a sleeping Writer is written at once, not at the
// next poll (Poll an hour). Fails if the drain polls while idle, if it
// never sleeps again after a line, or if a Write does not wake it (the
// line then waits until Close).
func TestIdleSleepsAndAWriteWakes(t *testing.T) {
	bounded(t)
	dst := newValve()
	w := New(dst, Options{Poll: time.Millisecond})
	waitNaps(t, w, 1)
	time.Sleep(200 * time.Millisecond)
	if n := w.naps.Load(); n != 1 {
		t.Errorf("an idle Writer with Poll 1ms napped %d times in 200ms, want once: it looks for lines while idle", n)
	}
	for i := range 3 {
		w.Write([]byte("a\n"))
		waitNaps(t, w, uint64(i+2))
	}
	w.Close()
	if got := dst.String(); got != "a\na\na\n" {
		t.Errorf("wrote %q, want three lines", got)
	}

	dst = newValve()
	w = New(dst, Options{Poll: time.Hour})
	defer w.Close()
	waitNaps(t, w, 1)
	w.Write([]byte("b\n"))
	for deadline := time.Now().Add(10 * time.Second); dst.String() != "b\n"; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("a line written to a sleeping Writer (Poll an hour) was not written within 10s: %q", dst.String())
		}
	}
}

// TestAWriteAsTheDrainFallsAsleepIsWritten: a line written while the
// drain goroutine goes to sleep, just before it marks itself asleep (the
// Write finds it awake and sends no wake) or just after (the Write wakes
// it), is written at once, not at the next poll (Poll an hour) nor at
// Close; and the drain then naps once and stays asleep, no wake left
// over. Fails if sleep does not look at the ring again once marked (the
// line waits for the next Write or Close: a lost wakeup), if the line
// that look finds waits for the poll (as it did when this test was
// written), or if the drain leaves the wake of a Write it did not wait
// for in the channel (it then wakes again at once for nothing).
func TestAWriteAsTheDrainFallsAsleepIsWritten(t *testing.T) {
	bounded(t)
	for _, marked := range []bool{false, true} {
		t.Run(fmt.Sprintf("marked=%v", marked), func(t *testing.T) {
			for _, poll := range []time.Duration{time.Hour, time.Millisecond} {
				dst := newValve()
				var once sync.Once
				w := New(dst, Options{Poll: poll, sleeping: func(w *Writer, m bool) {
					if m == marked {
						once.Do(func() { w.Write([]byte("a\n")) })
					}
				}})
				for deadline := time.Now().Add(10 * time.Second); dst.String() != "a\n"; time.Sleep(time.Millisecond) {
					if time.Now().After(deadline) {
						got := dst.String()
						w.Close()
						t.Fatalf("Poll %v: a line written as the drain went to sleep was not written within 10s: %q", poll, got)
					}
				}
				if poll == time.Millisecond {
					waitNaps(t, w, 1)
					time.Sleep(100 * time.Millisecond)
					if n := w.naps.Load(); n != 1 {
						t.Errorf("Poll %v: the drain napped %d times in 100ms after one line, want once: a wake was left over", poll, n)
					}
				}
				if err := w.Close(); err != nil {
					t.Fatalf("Close() = %v", err)
				}
			}
		})
	}
}

// waitNaps waits until w's drain goroutine has gone to sleep n times.
func waitNaps(t *testing.T, w *Writer, n uint64) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); w.naps.Load() < n; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the drain goroutine napped %d times in 10s, want %d", w.naps.Load(), n)
		}
	}
}

// TestPollIsTheWait: a line that arrives while the drain goroutine is
// awake, waiting for its next poll, waits for that poll, however long
// Poll is, and is written at Close.
func TestPollIsTheWait(t *testing.T) {
	bounded(t)
	dst := newValve()
	w := New(dst, Options{Poll: time.Hour})
	w.Write([]byte("a\n"))
	// Either the drain's first pass saw a, or it had already gone to
	// sleep before a came; either way it sleeps now, for an hour.
	for deadline := time.Now().Add(100 * time.Millisecond); time.Now().Before(deadline) && dst.String() == ""; {
		time.Sleep(time.Millisecond)
	}
	w.Write([]byte("b\n"))
	time.Sleep(100 * time.Millisecond)
	if got := dst.String(); strings.Contains(got, "b") {
		t.Fatalf("with Poll an hour, a line was written within 100ms of a sleeping drain: %q", got)
	}
	if err := w.Close(); err != nil {
		t.Fatalf("Close() = %v", err)
	}
	if got := dst.String(); got != "a\nb\n" {
		t.Errorf("after Close the output is %q, want %q", got, "a\nb\n")
	}
}

// TestWriteWaitNeverDrops: while the destination is stalled and the ring
// full, Write drops lines, but WriteWait (and a zerolog logger on
// Waiting, as the audit lines are written) waits for room: once the
// destination moves, every one of its lines is written, after the lines
// the ring held. After Close, WriteWait fails with ErrClosed.
func TestWriteWaitNeverDrops(t *testing.T) {
	bounded(t)
	g := newGate()
	w := New(g, Options{Slots: 8, BufferBytes: 64, Poll: time.Millisecond})
	// Fill the ring, let the drain goroutine take what its buffer holds
	// and stall on the destination, and fill again: no slot is free.
	for i := range 100 {
		w.Write(line(i))
	}
	time.Sleep(20 * time.Millisecond)
	for i := range 100 {
		w.Write(line(100 + i))
	}
	if w.Dropped() == 0 {
		t.Fatal("a stalled destination dropped nothing: the ring is not full")
	}
	audit := zerolog.New(w.Waiting())
	const n = 5
	done := make(chan int, n)
	for i := range n {
		go func() {
			audit.Info().Int("change", i).Msg("api change")
			done <- i
		}()
	}
	select {
	case i := <-done:
		t.Fatalf("audit line %d returned while the ring is full: it was dropped, or the ring was not full", i)
	case <-time.After(50 * time.Millisecond):
	}
	dropped := w.Dropped()
	close(g.open)
	for range n {
		<-done
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	out := g.String()
	for i := range n {
		if !strings.Contains(out, fmt.Sprintf(`{"level":"info","change":%d,"message":"api change"}`, i)) {
			t.Errorf("audit line %d is not written:\n%s", i, out)
		}
	}
	if w.Dropped() != dropped {
		t.Errorf("Dropped() = %d after the audit lines, want %d: they were dropped", w.Dropped(), dropped)
	}
	if _, err := w.WriteWait(line(0)); err != ErrClosed {
		t.Errorf("WriteWait after Close = %v, want ErrClosed", err)
	}
}
