package web

import (
	"context"
	"errors"
	"io"
	"strconv"
	"testing"
	"time"
)

// TestStreamToldToReconnectAtShutdown: when the server shuts down, an
// open stream gets a retry field, a wait between one and two retry
// intervals (so that every stream does not come back at once), then
// ends cleanly, and Shutdown does not wait it out. Before, the stream
// ended without a word: EventSource came back after the retry it was
// given at the start, every stream at the same moment.
func TestStreamToldToReconnectAtShutdown(t *testing.T) {
	const retry = 3 * time.Second
	_, hs, _ := mustStreamServer(t, Config{}, streamTimes{interval: time.Hour, heartbeat: time.Hour, retry: retry})
	const streams = 4 // DefaultStreamsPerClient: all from one address
	type result struct {
		retry string
		err   error
	}
	results := make(chan result, streams)
	for range streams {
		_, er := mustOpen(t, hs.URL+"/counter/k/stream")
		nextCounts(t, er)
		go func() {
			ev, err := er.Next()
			if err != nil {
				results <- result{err: err}
				return
			}
			if _, err := er.Next(); err != io.EOF {
				results <- result{ev.Retry, errors.New("after the retry field the stream did not end cleanly: " + errString(err))}
				return
			}
			results <- result{retry: ev.Retry}
		}()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	start := time.Now()
	if err := hs.Config.Shutdown(ctx); err != nil {
		t.Fatalf("Shutdown = %v after %v, want the streams ended at once", err, time.Since(start))
	}
	for range streams {
		r := <-results
		if r.err != nil {
			t.Errorf("stream at shutdown: %v", r.err)
			continue
		}
		ms, err := strconv.Atoi(r.retry)
		if err != nil || ms < int(retry.Milliseconds()) || ms >= int(2*retry.Milliseconds()) {
			t.Errorf("retry at shutdown = %q, want milliseconds in [%d, %d)", r.retry, retry.Milliseconds(), 2*retry.Milliseconds())
		}
	}
}

func errString(err error) string {
	if err == nil {
		return "an event"
	}
	return err.Error()
}
