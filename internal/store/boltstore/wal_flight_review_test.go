package boltstore

import (
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestLogAtMostFourRecordsWritten: with four records' syncs held, no
// fifth record is written (nor synced): the visits that come meanwhile
// wait outside the log. docs/durability.md promises four in flight;
// TestLogFlightsAreBounded reads the bound from maxFlying and cannot see
// it raised, nor a fifth record written and queued behind four busy
// syncers (both planted: maxFlying = 5, and `>` for `>=` in logPass).
func TestLogAtMostFourRecordsWritten(t *testing.T) {
	defer func(f func(bool) bool) { pipelineLog = f }(pipelineLog)
	pipelineLog = func(bool) bool { return true }
	const four = 4
	dir := t.TempDir()
	s := openSyncLogOnly(t, dir)
	defer mustClose(t, s)
	began, stop := holdEachSync(s)
	defer stop()
	var res []<-chan error
	var rel []func(error)
	for i := range four {
		res = append(res, incrAsync(s, strconv.Itoa(i)))
		rel = append(rel, nextSync(t, began, "record "+strconv.Itoa(i)))
	}
	var queued []<-chan error
	for i := range 3 {
		queued = append(queued, incrAsync(s, "q"+strconv.Itoa(i)))
	}
	waitForWaiters(t, s, four+3)
	select {
	case <-began:
		t.Fatalf("a sync began with %d records in flight", four)
	case <-time.After(100 * time.Millisecond):
	}
	recs, err := readLog(filepath.Join(dir, LogName), s.log.id, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != four {
		t.Errorf("the log holds %d records with %d syncs held, want %d: at most four in flight", len(recs), four, four)
	}
	stop()
	for i, r := range append(res, queued...) {
		if err := <-r; err != nil {
			t.Errorf("visit %d = %v", i, err)
		}
	}
}

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

// TestLogHoleStopsTheReplay: with records in flight side by side, a power
// cut can leave a later record on the disk and an earlier one not (its
// blocks never written, or torn). None of them was answered: a record is
// answered only after every record before it is durable. The replay takes
// the records before the hole and none after it, even whole ones: their
// absolute counts include the missing record's visits.
func TestLogHoleStopsTheReplay(t *testing.T) {
	s := openSyncLogOnly(t, t.TempDir())
	keys := []string{"k1", "k2", "k3", "k4", "k5"}
	for _, k := range keys {
		mustIncr(t, s, []byte(k)) // one at a time: a record each
	}
	crashed := crashCopy(t, s)
	id := s.log.id
	mustClose(t, s)
	offs := logOffsets(t, crashed, id)
	if len(offs) != 6 {
		t.Fatalf("the log holds %d records, want 5 (one per sequential visit)", len(offs)-1)
	}
	start, end := offs[2], offs[3] // k3's record
	for _, tc := range []struct {
		name string
		harm func(b []byte)
	}{
		{"never written", func(b []byte) { clear(b[start:end]) }},
		{"torn in the middle", func(b []byte) { clear(b[start+(end-start)/2 : end]) }},
		{"header only", func(b []byte) { clear(b[start+logHeader : end]) }},
		{"a flipped byte", func(b []byte) { b[end-1] ^= 0x40 }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			copyFile(t, filepath.Join(crashed, FileName), filepath.Join(dir, FileName))
			b, err := os.ReadFile(filepath.Join(crashed, LogName))
			if err != nil {
				t.Fatal(err)
			}
			tc.harm(b)
			if err := os.WriteFile(filepath.Join(dir, LogName), b, 0o644); err != nil {
				t.Fatal(err)
			}
			for i, k := range keys {
				want := uint64(0)
				if i < 2 {
					want = 1
				}
				if n := readTotal(t, dir, k); n != want {
					t.Errorf("%s = %d with record 3 of 5 missing, want %d", k, n, want)
				}
			}
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
// EFBIG.
func TestLogWriteFailureStealsNoSyncError(t *testing.T) {
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

// readTotalInFile returns key's total in the data file of s as it is now,
// without the log.
func readTotalInFile(t *testing.T, s *Store, key string) uint64 {
	t.Helper()
	return readTotal(t, fileCopy(t, s), key)
}
