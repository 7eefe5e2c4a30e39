// Command streamload measures what live streams cost visitors: the
// counting throughput of one key with and without N streams open on it
// (wrk, rounds alternating, the server pinned to one CPU and wrk and
// the stream readers to the other), and the memory an idle stream
// holds.
//
//	go run ./lab/streamload                 # 1,000 streams, 5 rounds of 10s each way
//	go run ./lab/streamload -streams 200 -rounds 1 -duration 2s
//
// It needs wrk and taskset, and opens each stream from its own loopback
// address (127.0.0.2 and on), 4 to an address, the per-client limit.
package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"visitors/internal/servertest"
	"visitors/lab/report"
)

func main() {
	if err := run(os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "streamload:", err)
		os.Exit(1)
	}
}

func run(args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("streamload", flag.ContinueOnError)
	streams := fs.Int("streams", 1000, "streams to open")
	rounds := fs.Int("rounds", 5, "wrk rounds each way")
	duration := fs.Duration("duration", 10*time.Second, "length of a wrk round")
	conns := fs.Int("conns", 16, "wrk connections")
	if err := fs.Parse(args); err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "streamload")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	bin, err := servertest.Build(dir)
	if err != nil {
		return err
	}
	runtime.GOMAXPROCS(1) // the readers stay on the CPU wrk uses
	fmt.Fprintf(stdout, "streamload: %d streams, %d rounds of %v each way, %s, %s\n", *streams, *rounds, *duration, runtime.Version(), time.Now().UTC().Format("2006-01-02"))

	// Memory: idle streams on one key, then on as many keys.
	for _, distinct := range []bool{false, true} {
		p, err := servertest.StartWrappedErr([]string{"taskset", "-c", "0"}, bin, nil, "-store", "memory", "-log-level", "off", "-flight-recorder=false")
		if err != nil {
			return err
		}
		http.Get(p.URL("/counter/live.json"))
		time.Sleep(500 * time.Millisecond)
		before, err := memory(p)
		if err != nil {
			return err
		}
		var got atomic.Int64
		stop, err := openStreams(p, *streams, distinct, &got)
		if err != nil {
			return err
		}
		time.Sleep(2 * time.Second)
		after, err := memory(p)
		if err != nil {
			return err
		}
		what := "one key"
		if distinct {
			what = "a key each"
		}
		n := float64(*streams)
		fmt.Fprintf(stdout, "idle streams on %s: RSS %+.1f KiB, Go heap+stacks %+.1f KiB, goroutines %+.1f per stream\n", what,
			(after.rss-before.rss)/n/1024, (after.goMem-before.goMem)/n/1024, (after.goroutines-before.goroutines)/n)
		stop()
		p.Stop(syscall.SIGTERM, 30*time.Second)
	}

	// Throughput: wrk on the key, alternating without and with streams.
	p, err := servertest.StartWrappedErr([]string{"taskset", "-c", "0"}, bin, nil, "-store", "memory", "-log-level", "off", "-repeat-window", "0", "-max-streams", strconv.Itoa(*streams+10))
	if err != nil {
		return err
	}
	defer p.Stop(syscall.SIGTERM, 30*time.Second)
	url := p.URL("/counter/live.json")
	var without, with []float64
	var events atomic.Int64
	for r := range *rounds {
		cpu0 := cpuTime(p)
		rps, err := wrk(url, *conns, *duration)
		cpuWithout := cpuTime(p) - cpu0
		if err != nil {
			return err
		}
		without = append(without, rps)
		stop, err := openStreams(p, *streams, false, &events)
		if err != nil {
			return err
		}
		before := events.Load()
		cpu1 := cpuTime(p)
		rpsWith, err := wrk(url, *conns, *duration)
		cpuWith := cpuTime(p) - cpu1
		stop()
		if err != nil {
			return err
		}
		with = append(with, rpsWith)
		fmt.Fprintf(stdout, "round %d: %.0f req/s without streams (%.1f µs CPU a visit), %.0f with %d streams (%.1f µs; %d events read)\n", r+1,
			without[r], cpuWithout.Seconds()*1e6/(without[r]*duration.Seconds()), rpsWith, *streams, cpuWith.Seconds()*1e6/(rpsWith*duration.Seconds()), events.Load()-before)
	}
	mw, m := report.Median(without), report.Median(with)
	fmt.Fprintf(stdout, "median: %.0f req/s without, %.0f with %d streams: %.3fx\n", mw, m, *streams, m/mw)
	return nil
}

// openStreams opens n streams, on key live or on a key each, from
// loopback addresses 4 to an address, and reads them in the background,
// counting the events into got. stop closes them.
func openStreams(p *servertest.Proc, n int, distinct bool, got *atomic.Int64) (stop func(), _ error) {
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	ready := make(chan error, n)
	for i := range n {
		ip := net.IPv4(127, 0, byte(2+i/4/250), byte(1+i/4%250))
		tr := &http.Transport{DialContext: (&net.Dialer{LocalAddr: &net.TCPAddr{IP: ip}}).DialContext}
		key := "live"
		if distinct {
			key = fmt.Sprintf("live%d", i)
		}
		req, _ := http.NewRequestWithContext(ctx, "GET", p.URL("/counter/"+key+"/stream"), nil)
		wg.Add(1)
		go func() {
			defer wg.Done()
			resp, err := tr.RoundTrip(req)
			if err != nil {
				ready <- err
				return
			}
			defer resp.Body.Close()
			if resp.StatusCode != 200 {
				ready <- fmt.Errorf("stream %d: %s", i, resp.Status)
				return
			}
			br := bufio.NewReader(resp.Body)
			first := true
			for {
				line, err := br.ReadString('\n')
				if err != nil {
					return
				}
				if strings.HasPrefix(line, "data: ") {
					got.Add(1)
					if first {
						ready <- nil
						first = false
					}
				}
			}
		}()
	}
	for range n {
		if err := <-ready; err != nil {
			cancel()
			wg.Wait()
			return nil, err
		}
	}
	return func() { cancel(); wg.Wait() }, nil
}

type mem struct{ rss, goMem, goroutines float64 }

// memory reads the process's resident memory and, from /metrics, the Go
// heap in use, the stacks and the goroutines.
func memory(p *servertest.Proc) (mem, error) {
	var m mem
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(p.Cmd.Process.Pid), "status"))
	if err != nil {
		return m, err
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if f := strings.Fields(line); len(f) == 3 && f[0] == "VmRSS:" {
			kb, _ := strconv.ParseFloat(f[1], 64)
			m.rss = kb * 1024
		}
	}
	resp, err := http.Get(p.AdminURL("/metrics"))
	if err != nil {
		return m, err
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) != 2 {
			continue
		}
		v, _ := strconv.ParseFloat(f[1], 64)
		switch f[0] {
		case "go_memstats_heap_inuse_bytes", "go_memstats_stack_inuse_bytes":
			m.goMem += v
		case "go_goroutines":
			m.goroutines = v
		}
	}
	return m, sc.Err()
}

// cpuTime returns the CPU time the server has used, user and system.
func cpuTime(p *servertest.Proc) time.Duration {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(p.Cmd.Process.Pid), "stat"))
	if err != nil {
		return 0
	}
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+2:]))
	ut, _ := strconv.ParseInt(f[11], 10, 64) // utime and stime, fields 14 and 15
	st, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(ut+st) * 10 * time.Millisecond // USER_HZ is 100
}

func wrk(url string, conns int, d time.Duration) (float64, error) {
	out, err := exec.Command("taskset", "-c", "1", "wrk", "-t1", fmt.Sprintf("-c%d", conns), fmt.Sprintf("-d%ds", max(1, int(d/time.Second))), url).CombinedOutput()
	if err != nil {
		return 0, fmt.Errorf("wrk: %v\n%s", err, out)
	}
	for line := range strings.SplitSeq(string(out), "\n") {
		if f := strings.Fields(line); len(f) == 2 && f[0] == "Requests/sec:" {
			return strconv.ParseFloat(f[1], 64)
		}
		if strings.Contains(line, "Non-2xx") {
			return 0, fmt.Errorf("wrk saw errors:\n%s", out)
		}
	}
	return 0, fmt.Errorf("no Requests/sec in wrk's output:\n%s", out)
}
