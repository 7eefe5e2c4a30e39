package boltstore

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"visitors/internal/store/storetest"

	"golang.org/x/sys/unix"
)

// realSyncHold holds the real syncs of one store's log: the fdatasync
// system call on the log's file, or the reaping (io_getevents) of its AIO
// context's completion. A held sync has not reached the disk, or has not
// been seen to: a visit answered meanwhile was answered before it was
// durable. Unlike holdSyncs, which holds a hook that runs before the
// sync is called, this holds the call that makes the record durable.
type realSyncHold struct {
	began    chan struct{} // a value each time a held sync is called
	release  chan struct{} // lets one held sync go on
	returned atomic.Int64  // held syncs that went on and returned
	stop     func()        // lets every sync through from then on
}

// holdRealSyncs makes every real sync of s's log wait until the test
// lets it go with h.release; the system calls of other files and AIO
// contexts go through. The caller defers h.stop after s's Close, so that
// a failed test still closes s; once t ends the system calls are the
// plain ones again.
func holdRealSyncs(t *testing.T, s *Store) *realSyncHold {
	t.Helper()
	h := &realSyncHold{began: make(chan struct{}, 16), release: make(chan struct{})}
	quit := make(chan struct{})
	hold := func() {
		select {
		case h.began <- struct{}{}:
		case <-quit:
			return
		}
		select {
		case <-h.release:
		case <-quit:
		}
	}
	plainSync, plainReap := fdatasync, ioGetevents
	fds := map[int]bool{}      // the log's file, each sync slot's
	ctxs := map[uintptr]bool{} // each slot's AIO context
	for _, sl := range s.log.slots {
		fds[int(sl.f.Fd())] = true
		if sl.aio != nil {
			ctxs[sl.aio.ctx] = true
		}
	}
	fdatasync = func(f int) error {
		if !fds[f] {
			return plainSync(f)
		}
		hold()
		defer h.returned.Add(1)
		return plainSync(f)
	}
	ioGetevents = func(c uintptr, ev *aioEvent, ts *unix.Timespec) (int, unix.Errno) {
		if !ctxs[c] {
			return plainReap(c, ev, ts)
		}
		hold()
		defer h.returned.Add(1)
		return plainReap(c, ev, ts)
	}
	// Runs after the caller's deferred Close and stop.
	t.Cleanup(func() { fdatasync, ioGetevents = plainSync, plainReap })
	h.stop = sync.OnceFunc(func() { close(quit) })
	return h
}

// TestSyncVisitWaitsForTheRealSync: a sync-mode visit is answered only
// once the log's real sync has returned — the fdatasync system call, or,
// through AIO, the reaping of the sync's completion — whichever path the
// log takes: AIO, AIO refused by the kernel (fdatasync from then on), or
// AIO turned off (VISITORS_LOG_AIO=0); pipelined or not. The sync is
// held at the call itself, not at a hook before it: a pass answered after
// logFault but before l.sync, or an AIO sync returning right after
// io_submit, both planted, fail it (holdSyncs' tests cannot see either;
// the crash tests kill with SIGKILL, which keeps the page cache).
func TestSyncVisitWaitsForTheRealSync(t *testing.T) {
	storetest.NoDate(t)
	paths := []struct {
		name    string
		aio     bool // useAIO: VISITORS_LOG_AIO unset, or 0
		refused bool // the kernel refused an AIO sync: fdatasync from then on
	}{
		{"aio", true, false},
		{"aio-refused", true, true},
		{"fdatasync", false, false},
	}
	defer func(v bool) { useAIO = v }(useAIO)
	for _, p := range paths {
		t.Run(p.name, func(t *testing.T) {
			inBothModes(t, func(t *testing.T) {
				useAIO = p.aio
				s := openSyncLogOnly(t, t.TempDir())
				defer mustClose(t, s)
				if (s.log.aio != nil) != p.aio {
					t.Fatalf("useAIO %v: log.aio = %v", p.aio, s.log.aio)
				}
				if p.refused {
					for _, sl := range s.log.slots {
						sl.aio.off.Store(true)
					}
				}
				h := holdRealSyncs(t, s)
				defer h.stop()
				for i, key := range []string{"a", "b"} {
					answered := make(chan error, 1)
					go func() { _, err := storetest.Incr(ctx, s, []byte(key)); answered <- err }()
					select {
					case <-h.began:
					case err := <-answered:
						t.Fatalf("visit %d: Incr(%s) returned (%v) before the log's real sync was called", i, key, err)
					case <-time.After(10 * time.Second):
						t.Fatalf("visit %d: no real sync of the log began within 10s of Incr(%s)", i, key)
					}
					select {
					case err := <-answered:
						t.Fatalf("visit %d: Incr(%s) returned (%v) while the log's real sync was held", i, key, err)
					case <-time.After(100 * time.Millisecond):
					}
					h.release <- struct{}{}
					select {
					case err := <-answered:
						if err != nil {
							t.Fatalf("visit %d: Incr(%s) = %v once its sync returned", i, key, err)
						}
					case <-time.After(10 * time.Second):
						t.Fatalf("visit %d: Incr(%s) not answered within 10s of its sync's release", i, key)
					}
					if got := h.returned.Load(); got != int64(i+1) {
						t.Fatalf("visit %d answered with %d real syncs returned, want %d", i, got, i+1)
					}
				}
				if got := s.log.aio != nil && s.log.aio.off.Load(); got != p.refused {
					t.Errorf("AIO refused = %v after the visits, want %v", got, p.refused)
				}
			})
		})
	}
}
