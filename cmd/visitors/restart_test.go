package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"visitors/internal/servertest"
	"visitors/internal/webtest"
)

var restartData = flag.String("restart-data", "", "TestRestartRefusesNoConnection: restart the binary on this data `directory` (a copy: it gains visits) instead of an empty one")

// TestRestartRefusesNoConnection restarts the real binary under load
// as systemd does with visitors.socket: the listening socket is made
// once, by the supervisor (here the test), and each instance gets it as
// fd 3 (-addr fd:3); the supervisor keeps it open, so it outlives the
// process. Sixteen clients visit one counter all along, half on
// keep-alive connections, half on a new connection a visit; midway the
// first instance gets SIGTERM, and once it has exited a second starts
// on the same socket and data directory. No visit is refused or reset
// or unanswered: a connection made while no process runs waits in the
// socket's backlog for the next one (a keep-alive connection the old
// instance closes while idle is retried by the client, as browsers do).
// Every visit answered 200 is counted: the export of the stopped store
// holds exactly the visits acknowledged. The longest wait of a visit,
// about the second instance's start time, is logged, not asserted.
//
// With -restart-data DIR it restarts the binary on DIR instead of an
// empty store (a copy of one scripts/starttime.sh wrote, for the wait
// across the restart of a million keys); DIR gains the test's visits.
func TestRestartRefusesNoConnection(t *testing.T) {
	sock, addr, err := servertest.ListenFile()
	if err != nil {
		t.Fatal(err)
	}
	defer sock.Close()
	dir := *restartData
	if dir == "" {
		dir = t.TempDir()
	}
	start := func(name string) (*exec.Cmd, chan error, *servertest.Buffer) {
		t.Helper()
		out := &servertest.Buffer{}
		cmd := exec.Command(bin, "-addr", "fd:3", "-admin-addr", "", "-data", dir)
		cmd.Env = append(os.Environ(), rulesOff...)
		cmd.ExtraFiles = []*os.File{sock}
		cmd.Stdout, cmd.Stderr = out, out
		if err := cmd.Start(); err != nil {
			t.Fatalf("start %s: %v", name, err)
		}
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		t.Cleanup(func() {
			cmd.Process.Kill()
		})
		return cmd, done, out
	}
	stop := func(name string, cmd *exec.Cmd, done chan error, out *servertest.Buffer) {
		t.Helper()
		if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		select {
		case err := <-done:
			if err != nil {
				t.Fatalf("%s after SIGTERM: %v, want exit status 0\n%s", name, err, out.String())
			}
		case <-time.After(webtest.Deadline):
			t.Fatalf("%s did not exit within %v of SIGTERM\n%s", name, webtest.Deadline, out.String())
		}
	}

	key := "restart"
	var restartBefore uint64 // the counter's total in a -restart-data directory
	if *restartData != "" {
		key = "user000000/repo" // the store may be full (-max-keys): a key it holds
		out, err := command(t, bin, "export", "-data", dir).Output()
		if err != nil {
			t.Fatalf("visitors export: %v", err)
		}
		restartBefore = exportTotals(t, out)[key]
	}
	first, firstDone, firstOut := start("the first instance")
	var acked atomic.Int64
	var longest atomic.Int64  // ns, of the visits sent from measured on
	var measured atomic.Int64 // Unix ns: the first instance's start is not the restart's wait
	measured.Store(math.MaxInt64)
	var mu sync.Mutex // guards failures
	failures := map[string]int{}
	fail := func(what string) {
		mu.Lock()
		failures[what]++
		mu.Unlock()
	}
	quit := make(chan struct{})
	var wg sync.WaitGroup
	for i := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			tr := &http.Transport{DisableKeepAlives: i%2 == 1}
			defer tr.CloseIdleConnections()
			c := &http.Client{Timeout: webtest.Deadline, Transport: tr}
			for {
				select {
				case <-quit:
					return
				default:
				}
				t0 := time.Now()
				resp, err := c.Get("http://" + addr + "/counter/" + key + ".json")
				if err != nil {
					switch {
					case errors.Is(err, syscall.ECONNREFUSED):
						fail("refused")
					case errors.Is(err, syscall.ECONNRESET):
						fail("reset")
					default:
						fail(fmt.Sprintf("%v (keep-alive %v)", err, i%2 == 0))
					}
					continue
				}
				_, err = io.ReadAll(resp.Body)
				resp.Body.Close()
				switch {
				case err != nil:
					fail(fmt.Sprintf("body of a %d cut short: %v", resp.StatusCode, err))
				case resp.StatusCode != http.StatusOK:
					fail(fmt.Sprintf("status %d", resp.StatusCode))
				default:
					acked.Add(1)
				}
				if d := int64(time.Since(t0)); t0.UnixNano() >= measured.Load() && d > longest.Load() {
					longest.Store(d) // one writer at a time is enough for a log line
				}
			}
		}()
	}

	for t0 := time.Now(); acked.Load() == 0; time.Sleep(time.Millisecond) {
		if time.Since(t0) > webtest.Deadline {
			t.Fatalf("no visit answered within %v of the first start\n%s", webtest.Deadline, firstOut.String())
		}
	}
	measured.Store(time.Now().UnixNano())
	time.Sleep(500 * time.Millisecond)
	stop("the first instance", first, firstDone, firstOut)
	before := acked.Load() // a visit in flight at SIGTERM is answered before the exit
	t0 := time.Now()
	second, secondDone, secondOut := start("the second instance")
	for acked.Load() == before {
		if time.Since(t0) > webtest.Deadline {
			t.Fatalf("no visit answered within %v of the second start\n%s", webtest.Deadline, secondOut.String())
		}
		time.Sleep(time.Millisecond)
	}
	startTime := time.Since(t0)
	time.Sleep(500 * time.Millisecond)
	close(quit)
	wg.Wait()
	stop("the second instance", second, secondDone, secondOut)

	for what, n := range failures {
		t.Errorf("%d visits across the restart: %s", n, what)
	}
	if before == 0 || acked.Load() == before {
		t.Errorf("%d visits answered before the restart, %d in all: want some on each side", before, acked.Load())
	}
	out, err := command(t, bin, "export", "-data", dir).Output()
	if err != nil {
		t.Fatalf("visitors export: %v", err)
	}
	if got, want := exportTotals(t, out)[key], uint64(acked.Load())+restartBefore; got != want {
		t.Errorf("after the restart the store holds %d visits, want the %d acknowledged", got, want)
	}
	t.Logf("%d visits acknowledged (%d before the restart); the second instance answered %v after its exec; the longest visit sent after the first instance answered took %v; failures %v",
		acked.Load(), before, startTime.Round(time.Millisecond), time.Duration(longest.Load()).Round(time.Millisecond), strings.TrimSpace(fmt.Sprint(failures)))
}
