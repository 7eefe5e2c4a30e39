package logsink

import (
	"bufio"
	"fmt"
	"io"
	"log"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/rs/zerolog/diode"

	"visitors/internal/servertest"
)

func TestWriterKeepsEveryLineInOrder(t *testing.T) {
	bounded(t)
	var dst servertest.Buffer
	w := New(&dst, Options{Slots: 64, Poll: time.Millisecond})
	const n = 10000
	for i := range n {
		line := fmt.Sprintf("line %d\n", i)
		for {
			before := w.Dropped()
			w.Write([]byte(line))
			if w.Dropped() == before {
				break
			}
			time.Sleep(time.Millisecond) // ring full: retry, so that none is lost
		}
	}
	if err := w.Close(); err != nil {
		t.Fatalf("Close() = %v", err)
	}
	sc := bufio.NewScanner(strings.NewReader(dst.String()))
	i := 0
	for sc.Scan() {
		if strings.Contains(sc.Text(), "dropped") {
			continue // drop reports from the retries above
		}
		if want := fmt.Sprintf("line %d", i); sc.Text() != want {
			t.Fatalf("line %d = %q, want %q", i, sc.Text(), want)
		}
		i++
	}
	if i != n {
		t.Fatalf("got %d lines, want %d", i, n)
	}
}

func TestWriterConcurrent(t *testing.T) {
	bounded(t)
	var dst servertest.Buffer
	w := New(&dst, Options{Slots: 1 << 16})
	const goroutines, per = 16, 1000
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Go(func() {
			for i := range per {
				fmt.Fprintf(w, "g%d-%d\n", g, i)
			}
		})
	}
	wg.Wait()
	if err := w.Close(); err != nil {
		t.Fatalf("Close() = %v", err)
	}
	if d := w.Dropped(); d != 0 {
		t.Fatalf("Dropped() = %d with a ring larger than the load, want 0", d)
	}
	if got := w.Written(); got != goroutines*per {
		t.Errorf("Written() = %d, want %d", got, goroutines*per)
	}
	seen := make(map[string]bool)
	for _, l := range strings.Split(strings.TrimSpace(dst.String()), "\n") {
		if seen[l] {
			t.Fatalf("line %q written twice", l)
		}
		seen[l] = true
	}
	if len(seen) != goroutines*per {
		t.Fatalf("got %d distinct lines, want %d", len(seen), goroutines*per)
	}
}

// blockedWriter blocks every Write until release is closed: a log
// destination slower than the traffic.
type blockedWriter struct {
	release chan struct{}
	buf     servertest.Buffer
}

func (b *blockedWriter) Write(p []byte) (int, error) {
	<-b.release
	return b.buf.Write(p)
}

func TestWriterDropsAndReportsWhenFull(t *testing.T) {
	bounded(t)
	dst := &blockedWriter{release: make(chan struct{})}
	w := New(dst, Options{Slots: 8, BufferBytes: 16, Poll: time.Millisecond})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for range 100 {
			w.Write([]byte("a line longer than the sixteen byte buffer\n"))
		}
	}()
	select {
	case <-done: // 100 writes returned while the destination was blocked
	case <-time.After(10 * time.Second):
		t.Fatal("Write blocked on a blocked destination")
	}
	if w.Dropped() == 0 {
		t.Fatal("Dropped() = 0 after overfilling an 8-slot ring, want > 0")
	}
	close(dst.release)
	if err := w.Close(); err != nil {
		t.Fatalf("Close() = %v", err)
	}
	if got, want := w.Written()+w.Dropped(), uint64(100); got != want {
		t.Errorf("Written() + Dropped() = %d + %d, want %d", w.Written(), w.Dropped(), want)
	}
	out := dst.buf.String()
	if !strings.Contains(out, `"message":"log lines dropped`) {
		t.Errorf("output has no drop report:\n%s", out)
	}
	if !strings.Contains(out, fmt.Sprintf(`"dropped_total":%d`, w.Dropped())) {
		t.Errorf("drop report does not give the total %d:\n%s", w.Dropped(), out)
	}
}

func TestWriteAllocatesNothing(t *testing.T) {
	bounded(t)
	w := New(io.Discard, Options{})
	defer w.Close()
	line := []byte(`{"level":"info","name":"gopher","count":42,"message":"visited"}` + "\n")
	if got := testing.AllocsPerRun(1000, func() { w.Write(line) }); got != 0 {
		t.Fatalf("Write allocs = %v, want 0", got)
	}
}

// BenchmarkWrite compares this writer with zerolog's own non-blocking
// writer, diode, on the line the service writes for each /hello visit.
func BenchmarkWrite(b *testing.B) {
	// diode reports "Diode set collision" through the standard logger,
	// onto the lines benchstat reads; keep them out.
	log.SetOutput(io.Discard)
	defer log.SetOutput(os.Stderr)
	impls := []struct {
		name string
		new  func() io.WriteCloser
	}{
		{"ring", func() io.WriteCloser { return New(io.Discard, Options{}) }},
		{"diode", func() io.WriteCloser {
			return diode.NewWriter(nopCloser{io.Discard}, 8192, 10*time.Millisecond, func(int) {})
		}},
	}
	for _, impl := range impls {
		b.Run("impl="+impl.name, func(b *testing.B) {
			w := impl.new()
			defer w.Close()
			log := zerolog.New(w).With().Timestamp().Logger()
			name := []byte("gopher")
			b.ReportAllocs()
			for b.Loop() {
				log.Info().Bytes("name", name).Uint64("count", 42).Msg("visited")
			}
		})
		b.Run("impl="+impl.name+"/parallel", func(b *testing.B) {
			w := impl.new()
			defer w.Close()
			log := zerolog.New(w).With().Timestamp().Logger()
			name := []byte("gopher")
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					log.Info().Bytes("name", name).Uint64("count", 42).Msg("visited")
				}
			})
		})
	}
}

type nopCloser struct{ io.Writer }

func (nopCloser) Close() error { return nil }

// bounded ends the test binary, naming t, if t runs over 20s: under a
// Write that spins (a ring index that never advances) or a Close that
// never returns (a drain that never looks at its stop channel), every
// test would otherwise wait for go test's timeout, ten minutes, and say
// nothing of where. Each test's own waits fail it within 10s first.
func bounded(t *testing.T) {
	timer := time.AfterFunc(20*time.Second, func() {
		panic(t.Name() + " ran over 20s: a Write, or Close, never returned")
	})
	t.Cleanup(func() { timer.Stop() })
}
