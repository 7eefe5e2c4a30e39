package main

import (
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"visitors/internal/servertest"
	"visitors/internal/webtest"
)

// ack is one acknowledged visit: a 200 the client received.
type ack struct {
	at  time.Time
	hit uint64 // the /hi number, or 0 for a /hello visit
}

// load drives /hi and /hello?name=crash from clients goroutines until
// stop is closed or the server goes away, and returns every ack.
func load(t testing.TB, p *servertest.Proc, clients int, stop <-chan struct{}) []ack {
	var mu sync.Mutex
	var acks []ack
	var wg sync.WaitGroup
	tr := &http.Transport{MaxIdleConnsPerHost: clients}
	defer tr.CloseIdleConnections()
	c := &http.Client{Transport: tr, Timeout: 5 * time.Second}
	for range clients {
		wg.Go(func() {
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				url := p.URL("/hello?name=crash")
				if i%2 == 0 {
					url = p.URL("/hi")
				}
				body, ok := answered(c, url)
				if !ok {
					return // killed, or not a 200
				}
				a := ack{at: time.Now()}
				if i%2 == 0 {
					var err error
					if a.hit, err = numberAfter(string(body), "visitor number "); err != nil {
						t.Error(err)
						return
					}
				}
				mu.Lock()
				acks = append(acks, a)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return acks
}

// probe makes one /hello?name=crash visit and returns the count it got.
func probe(t *testing.T, p *servertest.Proc) uint64 {
	t.Helper()
	code, _, body := mustGet(t, p.URL("/hello?name=crash"))
	n, err := numberAfter(body, "Count: ")
	if code != 200 || err != nil {
		t.Fatalf("probe = %d %q (%v)", code, body, err)
	}
	return n
}

// TestCrash kills the real binary with SIGKILL at random moments under
// concurrent load, restarts it on the same data, and checks what survived:
// no /hi number is ever handed out twice; in sync mode every acknowledged
// visit is counted; in batch mode what is lost was acknowledged within the
// last flush interval (plus the time a flush takes) before the kill. A
// last graceful stop loses nothing.
func TestCrash(t *testing.T) {
	for _, durability := range []string{"batch", "sync"} {
		t.Run(durability, func(t *testing.T) { crashCycles(t, durability) })
	}
}

func crashCycles(t *testing.T, durability string) {
	const (
		cycles   = 5
		clients  = 16
		interval = 100 * time.Millisecond
		// A batch-mode loss window: the flush interval, plus what one
		// fdatasync pair can take on a loaded, shared disk.
		window = interval + 400*time.Millisecond
	)
	seed := uint64(time.Now().UnixNano())
	if v := os.Getenv("CRASH_SEED"); v != "" {
		var err error
		if seed, err = strconv.ParseUint(v, 10, 64); err != nil {
			t.Fatalf("CRASH_SEED=%q: %v", v, err)
		}
	}
	rng := rand.New(rand.NewPCG(seed, 1))
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("rerun with CRASH_SEED=%d", seed)
		}
	})
	dir := t.TempDir()
	args := []string{"-data", dir, "-durability", durability, "-flush-interval", interval.String(), "-log-level", "warn"}
	numbers := map[uint64]bool{}

	p := servertest.Start(t, bin, rulesOff, args...)
	count := probe(t, p) // the name's count, this probe included
	for cycle := range cycles {
		stop := make(chan struct{})
		done := make(chan []ack)
		go func() { done <- load(t, p, clients, stop) }()
		time.Sleep(time.Duration(300+rng.IntN(900)) * time.Millisecond)
		killed := time.Now()
		if err := p.Kill(); err != nil {
			t.Fatal(err)
		}
		acks := webtest.Receive(t, done, "end of the load after the kill")
		close(stop)

		var visits, late uint64
		for _, a := range acks {
			if a.hit != 0 {
				if numbers[a.hit] {
					t.Fatalf("cycle %d: /hi number %d handed out twice", cycle, a.hit)
				}
				numbers[a.hit] = true
				continue
			}
			visits++
			if killed.Sub(a.at) < window {
				late++
			}
		}

		p = servertest.Start(t, bin, rulesOff, args...) // refuses to start if SIGKILL corrupted anything
		got := probe(t, p) - 1                          // what survived, without this probe
		want := count + visits                          // every acknowledged visit
		lost := int64(want) - int64(got)
		t.Logf("cycle %d: %d acks, %d /hello visits acked, %d survived of %d, lost %d (%d acked in the last %v)", cycle, len(acks), visits, got, want, lost, late, window)
		switch {
		case lost < -clients:
			t.Errorf("cycle %d: %d visits counted beyond those acknowledged; at most %d were in flight", cycle, -lost, clients)
		case durability == "sync" && lost > 0:
			t.Errorf("cycle %d: sync mode lost %d acknowledged visits", cycle, lost)
		case durability == "batch" && lost > int64(late):
			t.Errorf("cycle %d: batch mode lost %d visits, more than the %d acknowledged in the last %v", cycle, lost, late, window)
		}
		count = got + 1
	}

	// A graceful stop loses nothing, in either mode.
	stop := make(chan struct{})
	done := make(chan []ack)
	go func() { done <- load(t, p, clients, stop) }()
	time.Sleep(300 * time.Millisecond)
	close(stop)
	var visits uint64
	for _, a := range <-done {
		if a.hit == 0 {
			visits++
		}
	}
	if err := p.Stop(syscall.SIGTERM, 15*time.Second); err != nil {
		t.Fatalf("SIGTERM: %v\n%s", err, p.Stderr())
	}
	out, err := command(t, bin, "export", "-data", dir).Output()
	if err != nil {
		t.Fatalf("visitors export: %v", err)
	}
	var dump struct {
		Keys []struct {
			Key   string
			Total uint64
		}
	}
	if err := json.Unmarshal(out, &dump); err != nil {
		t.Fatalf("export is not JSON: %v\n%s", err, out)
	}
	var total uint64
	for _, k := range dump.Keys {
		if k.Key == "crash" {
			total = k.Total
		}
	}
	if want := count + visits; total != want {
		t.Errorf("after a graceful stop, crash = %d, want exactly %d", total, want)
	}
}

// aioCrashNames are the input classes /hello takes as a name: none (the
// empty name), the longest (128 bytes, ASCII and 4-byte runes), odd but
// valid UTF-8 (NUL, combining marks, a BOM, a slash, a percent sign,
// spaces, a right-to-left mark).
var aioCrashNames = []string{
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

// TestAIOCrashEveryName: the real binary in sync mode, its log
// synced through Linux AIO (the default), on one P and on two (the
// pipelined syncer), killed with SIGKILL under load: every count a
// /hello answer gave is still there after the restart, for every input
// class of name (at most one more: the visit in flight at the kill).
// Found by review (was TestReviewAIOCrashEveryName).
func TestAIOCrashEveryName(t *testing.T) {
	for _, procs := range []string{"1", "2"} {
		t.Run("GOMAXPROCS="+procs, func(t *testing.T) {
			env := append(append([]string{}, rulesOff...), "GOMAXPROCS="+procs)
			aioCrash(t, env)
		})
	}
}

func aioCrash(t *testing.T, env []string) {
	const cycles = 4
	dir := t.TempDir()
	args := []string{"-data", dir, "-durability", "sync", "-flush-interval", "150ms", "-log-level", "warn"}
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 3))
	acked := make([]uint64, len(aioCrashNames))
	p := servertest.Start(t, bin, env, args...)
	hello := func(p *servertest.Proc, hc *http.Client, i int) (uint64, bool) {
		req, err := http.NewRequest("GET", p.URL("/hello?name="+url.QueryEscape(aioCrashNames[i])), nil)
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
			t.Errorf("name %q: %v", aioCrashNames[i], err)
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
		tr := &http.Transport{MaxIdleConnsPerHost: len(aioCrashNames)}
		hc := &http.Client{Transport: tr, Timeout: 5 * time.Second}
		answered := make([]int, len(aioCrashNames))
		var first atomic.Int64         // names answered at least once this cycle
		for i := range aioCrashNames { // one client per name: each answer is the name's total
			wg.Go(func() {
				for {
					n, ok := hello(p, hc, i)
					if !ok {
						return // killed
					}
					acked[i] = max(acked[i], n)
					if answered[i]++; answered[i] == 1 {
						first.Add(1)
					}
				}
			})
		}
		// The crash comes once every name has been answered, then at a
		// random moment: on a busy machine a fixed sleep could kill the
		// server before the load had reached it.
		for deadline := time.Now().Add(60 * time.Second); first.Load() < int64(len(aioCrashNames)); time.Sleep(10 * time.Millisecond) {
			if time.Now().After(deadline) {
				p.Kill()
				wg.Wait()
				t.Fatalf("cycle %d: after 60s, %d of %d names answered once", cycle, first.Load(), len(aioCrashNames))
			}
		}
		time.Sleep(time.Duration(rng.IntN(500)) * time.Millisecond)
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
		for i, name := range aioCrashNames {
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

// answered gets url with c and returns the body of a 200 answer; false
// when the server is gone (killed), the body is cut, or the answer is
// not a 200.
func answered(c *http.Client, url string) ([]byte, bool) {
	resp, err := c.Get(url)
	if err != nil {
		return nil, false
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil || resp.StatusCode != 200 {
		return nil, false
	}
	return body, true
}
