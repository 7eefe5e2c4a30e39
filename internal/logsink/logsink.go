// Package logsink is a buffered, non-blocking [io.Writer] for the
// service's log lines.
//
// A request must never wait for its log line: not for a write syscall and
// not for a lock shared with other requests. [Writer.Write] therefore only
// copies the line into a slot of a fixed ring (claimed with one atomic
// compare-and-swap, the lock-free bounded queue of D. Vyukov) and returns.
// One background goroutine drains the ring in order into a buffered writer
// and flushes it when the ring runs dry. While lines come, it looks for
// them once per poll; after a poll that finds none it sleeps until the
// next Write wakes it, so that an idle service does not wake up a hundred
// times a second for its log (docs/performance.md, issue 26). When the ring is full the line is
// dropped and counted; the drain goroutine reports drops as a warning line
// of its own, and [Writer.Dropped] exposes the total.
//
// A line that must not be lost, such as the owner API's audit lines, is
// written with [Writer.WriteWait] (or through [Writer.Waiting]): when the
// ring is full it waits for a free slot instead (back-pressure on the
// rare caller that asked for it), so it is never dropped.
package logsink

import (
	"bufio"
	"errors"
	"io"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"
)

// Options tune a [Writer]. The zero value selects the defaults.
type Options struct {
	// Slots is the ring's capacity in lines, rounded up to a power of two
	// of at least 2. Default 8192.
	Slots int
	// SlotBytes is the capacity preallocated for each line. Longer lines
	// still fit: the slot grows once and keeps its new size. Default 512.
	SlotBytes int
	// Poll is how long the drain goroutine waits between two looks at
	// the ring while lines come, so the most a line waits before it is
	// written. A look that finds none puts the goroutine to sleep until
	// the next Write, which then wakes it at once. Default 10ms.
	Poll time.Duration
	// BufferBytes is the size of the buffer in front of the destination.
	// Default 64 KiB.
	BufferBytes int

	// sleeping, for tests only, is called by the drain goroutine as it
	// goes to sleep, before and after it marks itself asleep (marked),
	// so that a test can Write in either window of that race.
	sleeping func(w *Writer, marked bool)
}

// Writer is a non-blocking, buffered writer of lines. Each Write must hold
// one whole line, as zerolog's events do. Write may be called concurrently;
// Close must be called once, after the last Write.
type Writer struct {
	head    atomic.Uint64 // next position producers claim
	_       [56]byte
	dropped atomic.Uint64 // lines lost because the ring was full
	_       [56]byte
	asleep  atomic.Bool // the drain goroutine waits for wake, not for its poll
	_       [63]byte
	closing atomic.Bool  // Close has begun: WriteWait takes no line from here on
	waiters atomic.Int64 // WriteWaits running: the drain goroutine's last look waits for them
	slots   []slot
	mask    uint64

	written  atomic.Uint64 // lines handed to the destination; written by the drain goroutine only
	out      *bufio.Writer // owned by the drain goroutine
	poll     time.Duration
	reported uint64        // drops already reported; owned by the drain goroutine
	naps     atomic.Uint64 // times the drain goroutine went to sleep
	wake     chan struct{} // one wake for a sleeping drain goroutine
	stop     chan struct{}
	done     chan struct{}
	once     sync.Once
	err      error // first write error of the destination; read after done

	sleeping func(w *Writer, marked bool) // Options.sleeping; nil outside tests
}

type slot struct {
	seq atomic.Uint64 // Vyukov sequence: pos when free, pos+1 when full
	buf []byte
	_   [32]byte
}

// New starts a Writer that drains into w. The caller must call Close to
// write the lines still queued and stop the drain goroutine.
func New(w io.Writer, o Options) *Writer {
	if o.Slots <= 0 {
		o.Slots = 8192
	}
	if o.SlotBytes <= 0 {
		o.SlotBytes = 512
	}
	if o.Poll <= 0 {
		o.Poll = 10 * time.Millisecond
	}
	if o.BufferBytes <= 0 {
		o.BufferBytes = 64 << 10
	}
	n := 2 // with one slot, a full slot would look free to the next lap
	for n < o.Slots {
		n <<= 1
	}
	lw := &Writer{
		slots:    make([]slot, n),
		mask:     uint64(n - 1),
		out:      bufio.NewWriterSize(w, o.BufferBytes),
		poll:     o.Poll,
		sleeping: o.sleeping,
		wake:     make(chan struct{}, 1),
		stop:     make(chan struct{}),
		done:     make(chan struct{}),
	}
	for i := range lw.slots {
		lw.slots[i].seq.Store(uint64(i))
		lw.slots[i].buf = make([]byte, 0, o.SlotBytes)
	}
	go lw.drain()
	return lw
}

// Write queues a copy of p and returns at once. It never blocks and never
// fails: when the ring is full the line is dropped and counted.
func (w *Writer) Write(p []byte) (int, error) {
	if !w.put(p) {
		w.dropped.Add(1)
	}
	return len(p), nil
}

// ErrClosed is the error of a [Writer.WriteWait] after [Writer.Close].
var ErrClosed = errors.New("logsink: write after close")

// WriteWait queues a copy of p as Write does, but when the ring is full
// it waits for the drain goroutine to free a slot instead of dropping
// the line: the line is never lost. It may be called concurrently with
// Write; it fails only once Close has begun, with [ErrClosed]: a line
// it took is written by Close.
func (w *Writer) WriteWait(p []byte) (int, error) {
	// Counted before closing is read (both sequentially consistent): the
	// drain goroutine, having set closing, sees this WriteWait and takes
	// its last look only once it has returned, so that a line put is a
	// line written.
	w.waiters.Add(1)
	defer w.waiters.Add(-1)
	for {
		if w.closing.Load() { // no drain goroutine would write it: refused, not lost
			return 0, ErrClosed
		}
		if w.put(p) {
			return len(p), nil
		}
		// A full ring is being drained (a drain goroutine asleep found
		// it empty, and a Write since has woken it); wake it anyway, in
		// case, and look again soon: a slot frees as soon as the
		// destination takes a line.
		if w.asleep.Load() && w.asleep.CompareAndSwap(true, false) {
			select {
			case w.wake <- struct{}{}:
			default:
			}
		}
		time.Sleep(waitRetry)
	}
}

// waitRetry is how long [Writer.WriteWait] waits before it looks for a
// free slot again.
const waitRetry = 100 * time.Microsecond

// Waiting returns an [io.Writer] whose Write is w's [Writer.WriteWait],
// for a logger whose lines must never be dropped.
func (w *Writer) Waiting() io.Writer { return waiting{w} }

// waiting is [Writer.Waiting]'s writer.
type waiting struct{ w *Writer }

func (ww waiting) Write(p []byte) (int, error) { return ww.w.WriteWait(p) }

// put queues a copy of p and reports whether it found a slot: false
// when the ring is full.
func (w *Writer) put(p []byte) bool {
	pos := w.head.Load()
	var s *slot
	for {
		s = &w.slots[pos&w.mask]
		seq := s.seq.Load()
		switch d := int64(seq - pos); {
		case d == 0:
			if w.head.CompareAndSwap(pos, pos+1) {
				s.buf = append(s.buf[:0], p...)
				s.seq.Store(pos + 1)
				// The drain goroutine sets asleep before it looks at the
				// ring a last time, and the line was published before
				// this load: either it sees the line, or this Write sees
				// it asleep and wakes it. One wake is enough; another
				// Write may have sent it already.
				if w.asleep.Load() && w.asleep.CompareAndSwap(true, false) {
					select {
					case w.wake <- struct{}{}:
					default:
					}
				}
				return true
			}
			pos = w.head.Load()
		case d < 0: // the slot still holds a line from one lap ago: full
			return false
		default: // another producer claimed pos; catch up
			pos = w.head.Load()
		}
	}
}

// Dropped reports how many lines have been dropped because the ring was full.
func (w *Writer) Dropped() uint64 { return w.dropped.Load() }

// Written reports how many queued lines have been written to the
// destination (its buffer, flushed when the ring runs dry). Counting them
// is the drain goroutine's work, off the writers' path.
func (w *Writer) Written() uint64 { return w.written.Load() }

// Close writes every queued line, flushes, and stops the drain goroutine.
// It returns the first error the destination reported, if any.
func (w *Writer) Close() error {
	w.once.Do(func() { close(w.stop) })
	<-w.done
	return w.err
}

func (w *Writer) drain() {
	defer close(w.done)
	var tail uint64
	t := time.NewTimer(w.poll)
	defer t.Stop()
	for {
		from := tail
		tail = w.drainReady(tail)
		w.reportDrops()
		w.flush()
		if tail == from {
			if w.sleep(tail) {
				select {
				case <-w.stop:
					w.last(tail)
					return
				case <-w.wake:
				}
			}
			// Woken, or a line came as it fell asleep: look now, not
			// a poll later (the Write that woke it may be that line's).
			continue
		}
		t.Reset(w.poll)
		select {
		case <-w.stop:
			w.last(tail)
			return
		case <-t.C:
		}
	}
}

// last writes what is left at Close: every line queued from tail on and
// the drops not yet reported, flushed. It first waits, draining, for the
// WriteWaits running to return: each has put its line, or will refuse it.
func (w *Writer) last(tail uint64) {
	w.closing.Store(true)
	for w.waiters.Load() != 0 {
		tail = w.drainReady(tail)
		time.Sleep(waitRetry)
	}
	w.drainReady(tail)
	w.reportDrops()
	w.flush()
}

// sleep marks the drain goroutine asleep after a poll that found no line,
// and reports whether it may wait for a wake: not if a line was published
// at tail meanwhile (its Write may have found it awake), nor if a drop
// is left to report; the caller then looks at the ring again at once.
func (w *Writer) sleep(tail uint64) bool {
	if w.sleeping != nil {
		w.sleeping(w, false)
	}
	w.asleep.Store(true)
	if w.sleeping != nil {
		w.sleeping(w, true)
	}
	if w.slots[tail&w.mask].seq.Load() == tail+1 || w.dropped.Load() != w.reported {
		if w.asleep.CompareAndSwap(true, false) {
			return false
		}
		<-w.wake // a Write took asleep back and sent its wake: take it
		return false
	}
	w.naps.Add(1)
	return true
}

// drainReady writes every published line from tail on, in order, and
// returns the position of the first line not yet published.
func (w *Writer) drainReady(tail uint64) uint64 {
	from := tail
	for {
		s := &w.slots[tail&w.mask]
		if s.seq.Load() != tail+1 {
			w.written.Add(tail - from)
			return tail
		}
		w.write(s.buf)
		s.seq.Store(tail + w.mask + 1) // free for the producer one lap on
		tail++
	}
}

func (w *Writer) reportDrops() {
	n := w.dropped.Load()
	if n == w.reported {
		return
	}
	log := zerolog.New(direct{w}).With().Timestamp().Logger()
	log.Warn().Uint64("dropped", n-w.reported).Uint64("dropped_total", n).
		Msg("log lines dropped: the log destination is slower than the traffic")
	w.reported = n
}

// direct writes to the destination, bypassing the ring. Only the drain
// goroutine uses it.
type direct struct{ w *Writer }

func (d direct) Write(p []byte) (int, error) { d.w.write(p); return len(p), nil }

// write is called only from the drain goroutine.
func (w *Writer) write(p []byte) {
	if _, err := w.out.Write(p); err != nil && w.err == nil {
		w.err = err
	}
}

func (w *Writer) flush() {
	if err := w.out.Flush(); err != nil && w.err == nil {
		w.err = err
	}
}
