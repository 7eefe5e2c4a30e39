//go:build linux

// Making a log record durable through Linux AIO, so that the syncer
// waiting for the disk frees its processor (see aioSync).

package boltstore

import (
	"fmt"
	"os"
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"
)

// aioSync makes a file's written data durable as fdatasync does, through
// Linux AIO (io_submit of IOCB_CMD_FDSYNC), so that the goroutine waiting
// for the disk parks instead of holding its processor in a system call.
//
// A blocking fdatasync keeps the calling thread's P until sysmon takes it
// back, which it does only after 20 µs and, when it has found nothing to
// do for a while, up to 10 ms later: a server on one core (GOMAXPROCS=1)
// runs nothing while the log's record reaches the disk. With AIO the
// kernel runs the sync in a worker and signals an eventfd on completion;
// the flusher reads the eventfd through the runtime's netpoller, so the
// handlers of the next pass run meanwhile. The answer still waits for the
// sync's result: the promise (docs/durability.md) does not change.
//
// One sync is in flight at a time on each aioSync: each of the log's sync
// slots has its own (see syncSlot), used by one syncer, or the flusher. Where AIO is not available (an older kernel, a sandbox) or
// fails to submit, sync falls back to fdatasync, for good.
type aioSync struct {
	ctx  uintptr  // aio_context_t
	done *os.File // the eventfd, non-blocking, in the netpoller
	cb   aioCB
	cbs  [1]*aioCB
	ev   [1]aioEvent
	now  unix.Timespec // zero: io_getevents does not wait
	buf  [8]byte
	off  atomic.Bool // AIO refused: fdatasync from now on
}

// aioCB is the kernel's struct iocb (linux/aio_abi.h), little-endian.
type aioCB struct {
	_      uint64 // aio_data
	_      uint32 // aio_key
	_      uint32 // aio_rw_flags
	opcode uint16
	_      int16 // aio_reqprio
	fd     uint32
	buf    uint64 // aio_buf: for a read or write (a test's)
	nbytes uint64
	_      int64  // aio_offset
	_      uint64 // aio_reserved2
	flags  uint32
	resfd  uint32
}

// aioEvent is the kernel's struct io_event.
type aioEvent struct {
	data uint64
	obj  uint64
	res  int64
	res2 int64
}

const (
	iocbCmdFdsync = 3
	iocbFlagResfd = 1 << 0
)

// newAIOSync prepares AIO syncs of f, or returns an error if the kernel
// offers none (the caller then uses fdatasync).
func newAIOSync(f *os.File) (*aioSync, error) {
	a := &aioSync{}
	if _, _, e := unix.Syscall(unix.SYS_IO_SETUP, 1, uintptr(unsafe.Pointer(&a.ctx)), 0); e != 0 {
		return nil, fmt.Errorf("io_setup: %w", e)
	}
	efd, err := unix.Eventfd(0, unix.EFD_NONBLOCK|unix.EFD_CLOEXEC)
	if err != nil {
		unix.Syscall(unix.SYS_IO_DESTROY, a.ctx, 0, 0)
		return nil, fmt.Errorf("eventfd: %w", err)
	}
	a.done = os.NewFile(uintptr(efd), "aio-eventfd")
	a.cb = aioCB{opcode: iocbCmdFdsync, fd: uint32(f.Fd()), flags: iocbFlagResfd, resfd: uint32(efd)}
	a.cbs[0] = &a.cb
	return a, nil
}

// sync makes f's data durable; f is the file newAIOSync was given.
func (a *aioSync) sync(f *os.File) error {
	if a.off.Load() {
		return datasync(f)
	}
	n, _, e := unix.Syscall(unix.SYS_IO_SUBMIT, a.ctx, 1, uintptr(unsafe.Pointer(&a.cbs[0])))
	if e != 0 || n != 1 {
		// EINVAL: a kernel or file system without AIO fsync. Nothing
		// was submitted: fdatasync does the work, now and from now on.
		a.off.Store(true)
		return datasync(f)
	}
	// Wait for the completion, parked in the netpoller. A read error
	// here would leave the sync's outcome unknown: reap it blocking.
	_, err := a.done.Read(a.buf[:])
	return a.reap(err == nil)
}

// reap collects the one completion in flight and returns its result;
// signalled says the eventfd announced it, else it waits for it.
func (a *aioSync) reap(signalled bool) error {
	var ts *unix.Timespec
	if signalled {
		ts = &a.now // the event is there: do not wait
	}
	for {
		n, e := ioGetevents(a.ctx, &a.ev[0], ts)
		if e == unix.EINTR {
			continue
		}
		if e != 0 {
			return fmt.Errorf("io_getevents: %w", e)
		}
		if n == 0 {
			ts = nil // not there yet: wait for it
			continue
		}
		return eventErr(a.ev[0])
	}
}

// ioGetevents reaps at most one completion of the AIO context ctx into
// ev, waiting at most ts (nil: until one comes): io_getevents. It is a
// variable so that a test can hold a sync's completion unreaped and see
// that no visit is answered before it is (TestSyncVisitWaitsForTheRealSync).
var ioGetevents = func(ctx uintptr, ev *aioEvent, ts *unix.Timespec) (int, unix.Errno) {
	n, _, e := unix.Syscall6(unix.SYS_IO_GETEVENTS, ctx, 1, 1,
		uintptr(unsafe.Pointer(ev)), uintptr(unsafe.Pointer(ts)), 0)
	return int(n), e
}

// eventErr is a completed sync's result: res is 0 or a negated errno.
func eventErr(ev aioEvent) error {
	if ev.res < 0 {
		return fmt.Errorf("fdatasync (aio): %w", unix.Errno(-ev.res))
	}
	return nil
}

// close waits for any sync in flight and frees the context, once: the
// kernel gives a destroyed context's id (its ring's address) to the next
// io_setup, another store's, which a second io_destroy would destroy.
func (a *aioSync) close() error {
	ctx := a.ctx
	if ctx == 0 {
		return nil // closed already
	}
	a.ctx = 0
	_, _, e := unix.Syscall(unix.SYS_IO_DESTROY, ctx, 0, 0)
	cerr := a.done.Close()
	if e != 0 {
		return fmt.Errorf("io_destroy: %w", e)
	}
	return cerr
}
