package loadtest

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
)

// RateResult is what a constant-rate run measured. Latencies are taken
// from the moment each request was due, not from when it was sent, so a
// stalled server is charged for the requests that queued behind the stall
// (no coordinated omission, as in wrk2).
type RateResult struct {
	Rate     float64       `json:"rate"`
	Sent     int64         `json:"sent"`
	Errors   int64         `json:"errors"`
	P50      time.Duration `json:"p50"`
	P99      time.Duration `json:"p99"`
	P999     time.Duration `json:"p999"`
	Max      time.Duration `json:"max"`
	Achieved float64       `json:"achieved"` // responses per second
}

// Attack runs "loadtest attack": GET -url at -rate requests per second
// for -duration over -conns connections, and prints a RateResult as JSON.
func Attack(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("loadtest attack", flag.ContinueOnError)
	fs.SetOutput(stderr)
	url := fs.String("url", "", "URL to request")
	rate := fs.Float64("rate", 1000, "requests per second")
	d := fs.Duration("duration", 10*time.Second, "how long")
	conns := fs.Int("conns", 64, "connections (and workers)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *url == "" || *rate <= 0 || *d <= 0 || *conns <= 0 {
		return fmt.Errorf("attack: -url, and a positive -rate, -duration and -conns, are needed")
	}
	r, err := constantRate(ctx, *url, *rate, *d, *conns)
	if err != nil {
		return err
	}
	return json.NewEncoder(stdout).Encode(r)
}

// constantRate sends GET url at rate per second for d, open loop: a
// dispatcher releases one due time per request on schedule, whatever the
// server does, and conns workers send them.
func constantRate(ctx context.Context, url string, rate float64, d time.Duration, conns int) (RateResult, error) {
	n := int64(rate * d.Seconds())
	due := make(chan time.Time, n)
	clients := make([]*rawConn, conns)
	for w := range clients {
		c, err := newRawConn(url)
		if err != nil {
			return RateResult{}, err
		}
		clients[w] = c
		defer c.close()
	}
	hists := make([]*hdrhistogram.Histogram, conns)
	errs := make([]int64, conns)
	var wg sync.WaitGroup
	for w := range conns {
		hists[w] = hdrhistogram.New(1, int64(30*time.Second/time.Microsecond), 3)
		wg.Go(func() {
			for at := range due {
				if err := clients[w].get(); err != nil {
					errs[w]++
				}
				hists[w].RecordValue(max(1, int64(time.Since(at)/time.Microsecond)))
			}
		})
	}
	interval := time.Duration(float64(time.Second) / rate)
	start := time.Now()
	var sent int64
	for sent < n && ctx.Err() == nil {
		// Release every request due by now, then sleep until the next.
		now := time.Now()
		for ; sent < n; sent++ {
			at := start.Add(time.Duration(sent) * interval)
			if at.After(now) {
				break
			}
			due <- at
		}
		if sent < n {
			time.Sleep(time.Until(start.Add(time.Duration(sent) * interval)))
		}
	}
	close(due)
	wg.Wait()
	elapsed := time.Since(start)

	h := hdrhistogram.New(1, int64(30*time.Second/time.Microsecond), 3)
	var errors int64
	for w := range conns {
		h.Merge(hists[w])
		errors += errs[w]
	}
	us := func(q float64) time.Duration { return time.Duration(h.ValueAtQuantile(q)) * time.Microsecond }
	return RateResult{
		Rate: rate, Sent: sent, Errors: errors,
		P50: us(50), P99: us(99), P999: us(99.9), Max: time.Duration(h.Max()) * time.Microsecond,
		Achieved: float64(sent-errors) / elapsed.Seconds(),
	}, nil
}
