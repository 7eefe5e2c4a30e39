package boltstore

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
)

// TestAIOSync: on Linux the log syncs through AIO (the kernel here must
// offer it: CI runs on the machine the service is measured on), a sync
// reports success only once its completion is reaped, and nothing is
// left in flight after it.
func TestAIOSync(t *testing.T) {
	f, a := newTestAIO(t)
	for i := range 3 {
		if _, err := f.WriteAt([]byte("record"), int64(i*6)); err != nil {
			t.Fatal(err)
		}
		if err := a.sync(f); err != nil {
			t.Fatalf("sync %d: %v", i, err)
		}
		if a.off.Load() {
			t.Fatalf("sync %d fell back to fdatasync on a regular file", i)
		}
		// Nothing left to reap, however long one waits: sync collected
		// its own completion (a sync that returned before its completion
		// would leave it here).
		var ev [1]aioEvent
		ts := unix.Timespec{Nsec: 200e6}
		n, _, e := unix.Syscall6(unix.SYS_IO_GETEVENTS, a.ctx, 1, 1,
			uintptr(unsafe.Pointer(&ev[0])), uintptr(unsafe.Pointer(&ts)), 0)
		if e != 0 || n != 0 {
			t.Fatalf("after sync %d: io_getevents = %d, %v; want 0 events left", i, n, e)
		}
		// And the eventfd was read: no signal left for a later sync to
		// take for its own.
		rc, err := a.done.SyscallConn()
		if err != nil {
			t.Fatal(err)
		}
		var rerr error
		rc.Read(func(fd uintptr) bool {
			var buf [8]byte
			_, rerr = unix.Read(int(fd), buf[:])
			return true
		})
		if rerr != unix.EAGAIN {
			t.Fatalf("after sync %d the eventfd read %v, want EAGAIN (nothing signalled)", i, rerr)
		}
	}
	if err := a.close(); err != nil {
		t.Fatal(err)
	}
}

// newTestAIO returns a new file, closed when t ends, and an aioSync of
// it, which the caller closes. The kernel here must offer AIO: CI runs
// on the machine the service is measured on.
func newTestAIO(t *testing.T) (*os.File, *aioSync) {
	t.Helper()
	f, err := os.Create(filepath.Join(t.TempDir(), "log"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	a, err := newAIOSync(f)
	if err != nil {
		t.Fatalf("newAIOSync: %v (this kernel offers no AIO?)", err)
	}
	return f, a
}

// TestAIOSyncFallsBack: a file AIO cannot sync is refused at submission;
// the sync then runs as fdatasync, whose answer it returns, and so does
// every later one.
func TestAIOSyncFallsBack(t *testing.T) {
	r, w, err := os.Pipe() // a pipe has no fsync: EINVAL either way
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	a, err := newAIOSync(w)
	if err != nil {
		t.Fatal(err)
	}
	defer a.close()
	for i := range 2 {
		err := a.sync(w)
		if !errors.Is(err, unix.EINVAL) {
			t.Fatalf("sync %d of a pipe = %v, want EINVAL", i, err)
		}
		if !a.off.Load() {
			t.Fatalf("sync %d: still on AIO after a refused submission", i)
		}
	}
}

// TestEventErr: a completion's negative result is its errno.
func TestEventErr(t *testing.T) {
	for _, tc := range []struct {
		res  int64
		want error
	}{
		{0, nil},
		{1, nil},
		{-int64(unix.EIO), unix.EIO},
		{-int64(unix.ENOSPC), unix.ENOSPC},
	} {
		err := eventErr(aioEvent{res: tc.res})
		if tc.want == nil && err != nil || tc.want != nil && !errors.Is(err, tc.want) {
			t.Errorf("eventErr(res %d) = %v, want %v", tc.res, err, tc.want)
		}
	}
}

// TestLogWithoutAIO: with AIO turned off (VISITORS_LOG_AIO=0) the log
// syncs with fdatasync, and sync visits still survive a crash.
func TestLogWithoutAIO(t *testing.T) {
	defer func(v bool) { useAIO = v }(useAIO)
	for _, on := range []bool{false, true} {
		useAIO = on
		s := openSyncLogOnly(t, t.TempDir())
		if (s.log.aio != nil) != on {
			t.Fatalf("useAIO %v: log.aio = %v", on, s.log.aio)
		}
		for range 3 {
			mustIncr(t, s, []byte("a"))
		}
		crashed := crashCopy(t, s)
		mustClose(t, s)
		r := mustOpen(t, Options{Dir: crashed})
		if st := r.Stats(); st.Replayed == 0 {
			t.Errorf("useAIO %v: nothing replayed: the visits were not in the log", on)
		}
		if c := mustGet(t, r, []byte("a")); c.Total != 3 {
			t.Errorf("useAIO %v: after a crash a = %+v, want total 3", on, c)
		}
		mustClose(t, r)
	}
}

// TestAIOLayout: the structs handed to the kernel have its layout
// (linux/aio_abi.h: struct iocb is 64 bytes, struct io_event 32, the
// opcode at 16, the fd at 20, the flags and the eventfd last).
func TestAIOLayout(t *testing.T) {
	var cb aioCB
	for _, c := range []struct {
		name      string
		got, want uintptr
	}{
		{"sizeof iocb", unsafe.Sizeof(cb), 64},
		{"aio_lio_opcode", unsafe.Offsetof(cb.opcode), 16},
		{"aio_fildes", unsafe.Offsetof(cb.fd), 20},
		{"aio_flags", unsafe.Offsetof(cb.flags), 56},
		{"aio_resfd", unsafe.Offsetof(cb.resfd), 60},
		{"sizeof io_event", unsafe.Sizeof(aioEvent{}), 32},
		{"io_event.res", unsafe.Offsetof(aioEvent{}.res), 16},
	} {
		if c.got != c.want {
			t.Errorf("%s = %d, want %d", c.name, c.got, c.want)
		}
	}
}
