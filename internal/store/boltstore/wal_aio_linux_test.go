package boltstore

import (
	"os"
	"runtime"
	"testing"
)

// TestLogPipelinedThroughAIOWithOneP: with one P and the log syncing
// through AIO, the passes are pipelined: while one record's sync is
// held, the next visit's record is written and its sync begins. (Mutation
// testing, issue 28: logPass asking pipelineLog about the wrong AIO,
// in flush.go, passed every test on this two-core machine, where
// GOMAXPROCS > 1 pipelines either way; with one P it made a sync wait for
// the one before, holding the flusher, AIO or not.)
func TestLogPipelinedThroughAIOWithOneP(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	s := openSyncLogOnly(t, t.TempDir())
	defer mustClose(t, s)
	if s.log.aio == nil {
		t.Skip("no AIO here: the log syncs with fdatasync")
	}
	began, stop := holdEachSync(s)
	defer stop()
	a := incrAsync(s, "a")
	relA := nextSync(t, began, "a's record")
	b := incrAsync(s, "b")
	relB := nextSync(t, began, "b's record while a's sync is held")
	relB(nil)
	relA(nil)
	for _, r := range []<-chan error{a, b} {
		if err := <-r; err != nil {
			t.Errorf("Incr = %v", err)
		}
	}
}

// TestLogSyncsThroughAIOByDefault: the log syncs through AIO unless
// VISITORS_LOG_AIO=0 turns it off. (Mutation testing, issue 28: with the
// setting read the wrong way round, wal.go:70:44, AIO was off by default,
// and every test that needs it skipped.)
func TestLogSyncsThroughAIOByDefault(t *testing.T) {
	if os.Getenv("VISITORS_LOG_AIO") == "0" {
		t.Skip("VISITORS_LOG_AIO=0 is set")
	}
	if !useAIO {
		t.Error("useAIO = false without VISITORS_LOG_AIO=0, want true")
	}
}
