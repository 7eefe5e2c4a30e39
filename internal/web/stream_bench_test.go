package web

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"visitors/internal/webtest"
)

// BenchmarkCounterStreams is the counting path of one key, in parallel,
// with N live streams open on that key: each stream is a real
// connection whose reader runs in this process, so the figure charges
// the streams' server and client work alike to the counting. Streams
// get an event a second while the key counts (run with -benchtime=3s or
// more for several).
func BenchmarkCounterStreams(b *testing.B) {
	for _, n := range []int{0, 1000} {
		b.Run(fmt.Sprintf("streams=%d", n), func(b *testing.B) {
			s, hs, _ := mustStreamServer(b, Config{MaxStreams: n + 1, StreamsPerClient: n + 1},
				streamTimes{interval: streamInterval, heartbeat: streamHeartbeat, retry: streamRetry})
			stop := openStreamsB(b, hs.URL+"/counter/k/stream", n)
			defer stop()
			r := httptest.NewRequest("GET", "/counter/k.json", nil)
			b.ReportAllocs()
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				w := webtest.NewResponseWriter()
				for pb.Next() {
					w.Reset()
					s.ServeHTTP(w, r)
				}
			})
			b.StopTimer()
			if got := s.Streams(); got != n {
				b.Fatalf("%d streams open at the end, want %d", got, n)
			}
		})
	}
}

// openStreamsB opens n streams on url and reads them until stop.
func openStreamsB(b *testing.B, url string, n int) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	ready := make(chan error, n)
	tr := &http.Transport{MaxConnsPerHost: 0, MaxIdleConnsPerHost: n}
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			req, _ := http.NewRequestWithContext(ctx, "GET", url, nil)
			resp, err := tr.RoundTrip(req)
			if err != nil || resp.StatusCode != 200 {
				ready <- fmt.Errorf("open a stream: %v %v", resp, err)
				return
			}
			defer resp.Body.Close()
			ready <- nil
			br := bufio.NewReader(resp.Body)
			for {
				if _, err := br.ReadString('\n'); err != nil {
					return
				}
			}
		}()
	}
	for range n {
		if err := <-ready; err != nil {
			b.Fatal(err)
		}
	}
	return func() {
		cancel()
		wg.Wait()
		tr.CloseIdleConnections()
		time.Sleep(10 * time.Millisecond)
	}
}
