// Command redisscale sends GET /counter/k<N>.json, N drawn at random
// from -keys keys, at a constant total -rate for -d, and prints how many
// were answered 200. redis-scale.sh beside it uses it to measure what
// one visitors instance costs Redis as keys and traffic grow
// (docs/scaling.md).
package main

import (
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

func main() {
	base := flag.String("base", "http://127.0.0.1:18181", "")
	rate := flag.Int("rate", 1000, "")
	keys := flag.Int("keys", 100, "")
	dur := flag.Duration("d", 5*time.Second, "")
	conns := flag.Int("c", 32, "")
	flag.Parse()
	tr := &http.Transport{MaxIdleConnsPerHost: *conns}
	hc := &http.Client{Transport: tr, Timeout: 10 * time.Second}
	jobs := make(chan int, 10000)
	var ok, bad, late atomic.Int64
	var wg sync.WaitGroup
	for range *conns {
		wg.Go(func() {
			for k := range jobs {
				resp, err := hc.Get(fmt.Sprintf("%s/counter/k%d.json", *base, k))
				if err != nil {
					bad.Add(1)
					continue
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode == 200 {
					ok.Add(1)
				} else {
					bad.Add(1)
				}
			}
		})
	}
	start := time.Now()
	n := int(float64(*rate) * dur.Seconds())
	for i := range n {
		at := start.Add(time.Duration(float64(i) / float64(*rate) * float64(time.Second)))
		if d := time.Until(at); d > 0 {
			time.Sleep(d)
		}
		select {
		case jobs <- rand.IntN(*keys):
		default:
			late.Add(1)
		}
	}
	close(jobs)
	wg.Wait()
	fmt.Printf("sent=%d ok=%d bad=%d dropped=%d in %.1fs\n", n, ok.Load(), bad.Load(), late.Load(), time.Since(start).Seconds())
}
