// Command redisscale sends GET /counter/k<N>.json, N drawn at random
// from -keys keys, at a constant total -rate for -d, and prints how many
// were answered 200 and how many of those counted. redis-scale.sh beside
// it uses it to measure what one visitors instance costs Redis as keys
// and traffic grow, redis-uniques.sh what unique visitors add
// (docs/scaling.md). With -clients N the i-th request comes from client
// i mod N, named in X-Forwarded-For (the instance must trust loopback as
// its proxy), with a browser's User-Agent; without it every request is
// Go-http-client from one address, which the default rules do not count
// (a bot, then the per-client rate).
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
	clients := flag.Int("clients", 0, "")
	flag.Parse()
	tr := &http.Transport{MaxIdleConnsPerHost: *conns}
	hc := &http.Client{Transport: tr, Timeout: 10 * time.Second}
	type job struct{ i, k int }
	jobs := make(chan job, 10000)
	var ok, counted, bad, late atomic.Int64
	var wg sync.WaitGroup
	for range *conns {
		wg.Go(func() {
			for j := range jobs {
				req, err := http.NewRequest("GET", fmt.Sprintf("%s/counter/k%d.json", *base, j.k), nil)
				if err != nil {
					panic(err)
				}
				if *clients > 0 {
					c := j.i % *clients
					req.Header.Set("X-Forwarded-For", fmt.Sprintf("10.%d.%d.%d", c>>16&0xff, c>>8&0xff, c&0xff))
					req.Header.Set("User-Agent", "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36")
				}
				resp, err := hc.Do(req)
				if err != nil {
					bad.Add(1)
					continue
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode == 200 {
					ok.Add(1)
					if resp.Header.Get("Visitors-Counted") != "false" {
						counted.Add(1)
					}
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
		case jobs <- job{i, rand.IntN(*keys)}:
		default:
			late.Add(1)
		}
	}
	close(jobs)
	wg.Wait()
	fmt.Printf("sent=%d ok=%d counted=%d bad=%d dropped=%d in %.1fs\n", n, ok.Load(), counted.Load(), bad.Load(), late.Load(), time.Since(start).Seconds())
}
