package boltstore

import (
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"visitors/internal/store/storetest"
)

// TestLogSlotsSyncThroughFilesOfTheirOwn: the kernel reports a write-back
// error once per open file description (errseq); two syncs side by side
// through one would see it once, and one of them would answer a record
// that never reached the disk. Each sync slot must hold an open file
// description of its own (not the same *os.File, not a dup: the offset is
// per description), of the log's inode, opened before any record is
// written, and an AIO context of its own submitting on that file. Planted
// (slot 2 reusing slot 1's file), no other test failed.
func TestLogSlotsSyncThroughFilesOfTheirOwn(t *testing.T) {
	for _, aio := range []bool{true, false} {
		t.Run("aio="+strconv.FormatBool(aio), func(t *testing.T) {
			defer func(v bool) { useAIO = v }(useAIO)
			useAIO = aio
			dir := t.TempDir()
			s := openSyncLogOnly(t, dir)
			defer mustClose(t, s)
			l := s.log
			if len(l.slots) != maxFlying {
				t.Fatalf("%d sync slots, want %d", len(l.slots), maxFlying)
			}
			if l.slots[0].f != l.f {
				t.Error("slot 0 does not sync the file the records are written through")
			}
			var want unix.Stat_t
			if err := unix.Stat(filepath.Join(dir, LogName), &want); err != nil {
				t.Fatal(err)
			}
			fds := map[int]int{}
			ctxs := map[uintptr]int{}
			for i, sl := range l.slots {
				fd := int(sl.f.Fd())
				if j, dup := fds[fd]; dup {
					t.Errorf("slots %d and %d sync through one file (fd %d)", j, i, fd)
				}
				fds[fd] = i
				var st unix.Stat_t
				if err := unix.Fstat(fd, &st); err != nil {
					t.Fatal(err)
				}
				if st.Dev != want.Dev || st.Ino != want.Ino {
					t.Errorf("slot %d syncs another file than %s", i, LogName)
				}
				if aio != (sl.aio != nil) {
					t.Errorf("slot %d: AIO %v, want %v", i, sl.aio != nil, aio)
				}
				if sl.aio != nil {
					if j, dup := ctxs[sl.aio.ctx]; dup {
						t.Errorf("slots %d and %d share an AIO context", j, i)
					}
					ctxs[sl.aio.ctx] = i
					if int(sl.aio.cb.fd) != fd {
						t.Errorf("slot %d's AIO syncs fd %d, not its own %d", i, sl.aio.cb.fd, fd)
					}
				}
			}
			// Distinct descriptions: each keeps the offset set through it.
			// (The log is written with pwrite: the offsets are unused.)
			for i, sl := range l.slots {
				if _, err := unix.Seek(int(sl.f.Fd()), int64(100+i), 0); err != nil {
					t.Fatal(err)
				}
			}
			for i, sl := range l.slots {
				if off, _ := unix.Seek(int(sl.f.Fd()), 0, 1); off != int64(100+i) {
					t.Errorf("slot %d's offset is %d after setting %d: it shares an open file description with slot %d", i, off, 100+i, off-100)
				}
			}
			mustIncrN(t, s, "a", 3) // the offsets changed nothing
		})
	}
}

// TestLogWriteFailureStealsNoSyncError: the kernel reports a write-back
// error once per open file description. A record whose write fails is
// burnt by wal.fail, which overwrites its header and fdatasyncs the log
// through l.f, slot 0's file, ignoring the result; if an earlier record's
// sync is running through slot 0 meanwhile (pipelined, records in flight),
// one of the two calls sees the error and the other does not. Here the
// write-back error (modelled: the fdatasync below reports each error once
// per descriptor, as errseq does) reaches fail's call, and the earlier
// record's sync returns nil: its visit is answered, though its record
// never reached the disk and the data file does not hold it either.
// The record write is made to fail for real: RLIMIT_FSIZE just past the
// header, so the header's overwrite succeeds and the record's pwrite gets
// EFBIG. The limit is the whole process's, so the test runs in a process
// of its own: in go test's, a write of its log (testlog.txt, when the
// result may be cached) failed with "file too large" while it held.
func TestLogWriteFailureStealsNoSyncError(t *testing.T) {
	if !storetest.OwnProcess(t) {
		return
	}
	defer func(f func(bool) bool) { pipelineLog = f }(pipelineLog)
	pipelineLog = func(bool) bool { return true }
	defer func(v bool) { useAIO = v }(useAIO)
	useAIO = false
	dir := t.TempDir()
	s := openSyncLogOnly(t, dir)
	mustIncr(t, s, []byte("a"))
	fd0 := int(s.log.slots[0].f.Fd())

	var (
		mu     sync.Mutex
		errs   int             // write-back errors of the log so far
		seen   = map[int]int{} // the errors each descriptor has reported
		armed  = true
		held   = make(chan struct{}, 1)
		go0    = make(chan struct{})
		failed = make(chan struct{}, 1) // a sync of the log after the held one began
	)
	plain := fdatasync
	fdatasync = func(fd int) error {
		mu.Lock()
		hold := armed && fd == fd0
		if hold {
			armed = false
		} else if !armed {
			select {
			case failed <- struct{}{}:
			default:
			}
		}
		mu.Unlock()
		if hold {
			held <- struct{}{}
			<-go0
		}
		mu.Lock()
		report := errs > seen[fd]
		seen[fd] = errs
		mu.Unlock()
		if report {
			return unix.EIO
		}
		return plain(fd)
	}
	t.Cleanup(func() { fdatasync = plain })

	// Visit until a record's sync runs through slot 0 (the syncers take
	// records in turn), and hold it there.
	var first <-chan error
	answered := uint64(1) // visits of a answered so far
	for i := 0; first == nil; i++ {
		if i == 20 {
			t.Fatal("no record was synced through slot 0 in 20 visits")
		}
		r := incrAsync(s, "a")
		select {
		case <-held:
			first = r
		case err := <-r:
			if err != nil {
				t.Fatal(err)
			}
			answered++
		case <-time.After(10 * time.Second):
			t.Fatal("a visit was neither answered nor synced within 10s")
		}
	}
	var old unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_FSIZE, &old); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	errs++ // the held record's blocks fail to reach the disk
	mu.Unlock()
	lim := old
	lim.Cur = uint64(s.log.off) + logHeader // the next record's header fits, its body does not
	if err := unix.Setrlimit(unix.RLIMIT_FSIZE, &lim); err != nil {
		t.Fatal(err)
	}
	second := incrAsync(s, "b")
	select {
	case <-failed: // fail's overwrite of b's header, synced
	case <-time.After(10 * time.Second):
		unix.Setrlimit(unix.RLIMIT_FSIZE, &old)
		t.Fatal("b's failed write was not burnt within 10s")
	}
	close(go0)
	err1 := <-first
	<-second
	if err := unix.Setrlimit(unix.RLIMIT_FSIZE, &old); err != nil {
		t.Fatal(err)
	}
	file := readTotalInFile(t, s, "a")
	t.Logf("the held visit: %v; the data file holds a = %d", err1, file)
	mustClose(t, s)
	if err1 == nil && file < answered+1 {
		t.Errorf("visit %d of a was answered, but its record's write-back failed and the data file holds a = %d: lost at the next power cut", answered+1, file)
	}
}
