package main

import (
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"visitors/internal/servertest"
)

// reviewAIONames are the input classes /hello takes as a name: none (the
// empty name), the longest (128 bytes, ASCII and 4-byte runes), odd but
// valid UTF-8 (NUL, combining marks, a BOM, a slash, a percent sign,
// spaces, a right-to-left mark).
var reviewAIONames = []string{
	"",
	strings.Repeat("n", 128),
	strings.Repeat("🦀", 32),
	"\x00",
	"e\u0301\u0301",
	"\ufeffbom",
	"a/b%c d+e",
	"\u202eevil",
	"日本語",
}

// TestReviewAIOCrashEveryName: the real binary in sync mode, its log
// synced through Linux AIO (the default), on one P and on two (the
// pipelined syncer), killed with SIGKILL under load: every count a
// /hello answer gave is still there after the restart, for every input
// class of name (at most one more: the visit in flight at the kill).
func TestReviewAIOCrashEveryName(t *testing.T) {
	for _, procs := range []string{"1", "2"} {
		t.Run("GOMAXPROCS="+procs, func(t *testing.T) {
			env := append(append([]string{}, rulesOff...), "GOMAXPROCS="+procs)
			reviewAIOCrash(t, env)
		})
	}
}

func reviewAIOCrash(t *testing.T, env []string) {
	const cycles = 4
	dir := t.TempDir()
	args := []string{"-data", dir, "-durability", "sync", "-flush-interval", "150ms", "-log-level", "warn"}
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 3))
	acked := make([]uint64, len(reviewAIONames))
	p := servertest.Start(t, bin, env, args...)
	hello := func(p *servertest.Proc, hc *http.Client, i int) (uint64, bool) {
		req, err := http.NewRequest("GET", p.URL("/hello?name="+url.QueryEscape(reviewAIONames[i])), nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("User-Agent", "Mozilla/5.0 (X11; Linux x86_64)")
		resp, err := hc.Do(req)
		if err != nil {
			return 0, false
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil || resp.StatusCode != 200 {
			return 0, false
		}
		n, err := numberAfter(string(body), "Count: ")
		if err != nil {
			t.Errorf("name %q: %v", reviewAIONames[i], err)
			return 0, false
		}
		return n, true
	}
	// The log syncs through AIO here: the process holds an AIO ring.
	if maps, err := os.ReadFile(fmt.Sprintf("/proc/%d/maps", p.Cmd.Process.Pid)); err != nil || !strings.Contains(string(maps), "[aio]") {
		t.Fatalf("the server holds no AIO ring (%v): its log does not sync through AIO", err)
	}
	total := 0
	for cycle := range cycles {
		var wg sync.WaitGroup
		tr := &http.Transport{MaxIdleConnsPerHost: len(reviewAIONames)}
		hc := &http.Client{Transport: tr, Timeout: 5 * time.Second}
		answered := make([]int, len(reviewAIONames))
		for i := range reviewAIONames { // one client per name: each answer is the name's total
			wg.Go(func() {
				for {
					n, ok := hello(p, hc, i)
					if !ok {
						return // killed
					}
					acked[i] = max(acked[i], n)
					answered[i]++
				}
			})
		}
		time.Sleep(time.Duration(150+rng.IntN(500)) * time.Millisecond)
		if err := p.Kill(); err != nil {
			t.Fatal(err)
		}
		wg.Wait()
		tr.CloseIdleConnections()
		for _, n := range answered {
			total += n
		}

		p = servertest.Start(t, bin, env, args...)
		hc = &http.Client{Timeout: 5 * time.Second}
		for i, name := range reviewAIONames {
			if answered[i] == 0 {
				t.Errorf("cycle %d: name %q was never answered: the load meant nothing", cycle, name)
			}
			n, ok := hello(p, hc, i) // counts one more
			if !ok {
				t.Fatalf("cycle %d: name %q: no answer after the restart", cycle, name)
			}
			got := n - 1
			if got < acked[i] || got > acked[i]+1 {
				t.Errorf("cycle %d: name %.16q holds %d after the crash; its last answer said %d", cycle, name, got, acked[i])
			}
			acked[i] = n
		}
	}
	t.Logf("%d visits answered over %d crashes", total, cycles)
	stop(t, p)
}
