package main

import (
	"fmt"
	"math/rand/v2"
	"net/http"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"visitors/internal/servertest"
)

// walKeyName is client c's j-th name: every other one the longest a
// name may be (128 bytes), so that records and passes vary in size.
func walKeyName(c, j int) string {
	p := fmt.Sprintf("w%02d-%d-", c, j)
	if j%2 == 0 {
		return p + strings.Repeat("x", 128-len(p))
	}
	return p
}

// TestWALCrashManyKeys: TestCrash/sync drives one name. Here each
// client owns names of its own (half of them 128 bytes), so that log
// records carry many keys of many sizes and the file catches up (the log
// starts over) every 150ms; kills come as early as 40ms after a start (within the first interval, before the file catches up) or as late as 440ms; the real binary is killed with SIGKILL at
// random moments. Each answered /hello count is a total, so after the
// restart every name must hold at least the last count it was given
// (at most one more: the visit in flight at the kill), and no /hi number
// may come twice.
// Found by review (was TestReviewWALCrashManyKeys).
func TestWALCrashManyKeys(t *testing.T) {
	const clients, names, cycles = 12, 6, 6
	dir := t.TempDir()
	args := []string{"-data", dir, "-durability", "sync", "-flush-interval", "150ms", "-log-level", "warn"}
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 2))
	acked := map[string]uint64{}
	numbers := map[uint64]bool{}
	p := servertest.Start(t, bin, rulesOff, args...)
	// At least cycles kills; more, up to maxCycles, until every name was
	// answered once: on a busy machine a cycle killed early may answer
	// none of some names (a run of 6 answered 47 of 48 here).
	const maxCycles = 30
	allNames := clients * 2 / 3 * names
	for cycle := 0; cycle < cycles || len(acked) < allNames && cycle < maxCycles; cycle++ {
		var mu sync.Mutex
		var wg sync.WaitGroup
		tr := &http.Transport{MaxIdleConnsPerHost: clients}
		hc := &http.Client{Transport: tr, Timeout: 5 * time.Second}
		for c := range clients {
			wg.Go(func() {
				for i := 0; ; i++ {
					url, name := p.URL("/hi"), ""
					if c%3 != 0 {
						name = walKeyName(c, i%names)
						url = p.URL("/hello?name=" + name)
					}
					body, ok := answered(hc, url)
					if !ok {
						return // killed, or not a 200
					}
					prefix := "Count: "
					if name == "" {
						prefix = "visitor number "
					}
					n, err := numberAfter(string(body), prefix)
					if err != nil {
						t.Error(err)
						return
					}
					mu.Lock()
					if name == "" {
						if numbers[n] {
							t.Errorf("cycle %d: /hi number %d handed out twice", cycle, n)
						}
						numbers[n] = true
					} else {
						acked[name] = max(acked[name], n)
					}
					mu.Unlock()
				}
			})
		}
		time.Sleep(time.Duration(40+rng.IntN(400)) * time.Millisecond)
		if err := p.Kill(); err != nil {
			t.Fatal(err)
		}
		wg.Wait()
		tr.CloseIdleConnections()

		p = servertest.Start(t, bin, rulesOff, args...)
		for name, want := range acked {
			code, _, body := mustGet(t, p.URL("/counter/"+name+".json?count=false"))
			var got uint64
			if code == 200 {
				_, err := fmt.Sscanf(body[strings.Index(body, `"total":`):], `"total":%d`, &got)
				if err != nil {
					t.Fatalf("/counter/%s.json = %s: %v", name, body, err)
				}
			}
			if got < want || got > want+1 {
				t.Errorf("cycle %d: name %.12s… holds %d after the crash; its last answer said %d", cycle, name, got, want)
			}
			acked[name] = got
		}
	}
	if len(acked) < allNames {
		t.Errorf("in %d cycles only %d names were answered, want all %d: the test drove too little load to mean anything", maxCycles, len(acked), allNames)
	}
	stop(t, p)
}

// TestWALStartOnAFullDisk: sync mode preallocates its 4 MiB log at
// start. On a disk with less room it used to refuse to start (a data
// directory that served in sync mode before the log existed), and the
// zeros it wrote before ENOSPC stayed, taking every free byte. Now it
// gives the room back and starts without the log, committing each pass
// to the data file, with a warning. A 2 MiB tmpfs in a user and mount
// namespace.
// Found by review (was TestReviewWALStartOnAFullDisk).
func TestWALStartOnAFullDisk(t *testing.T) {
	if _, err := exec.LookPath("unshare"); err != nil {
		t.Fatal("unshare (util-linux) is needed to mount a small tmpfs without privileges")
	}
	const script = `mount -t tmpfs -o size=2m tmpfs "$1" || exit 99
d=$1; shift
before=$(df -k --output=avail "$d" | tail -1)
timeout 3 "$@"
rc=$?
after=$(df -k --output=avail "$d" | tail -1)
echo "rc=$rc before=$before after=$after"`
	dir := t.TempDir()
	out, _ := command(t, "unshare", "--user", "--map-root-user", "--mount", "sh", "-c", script, "sh", dir,
		bin, "-addr", "127.0.0.1:0", "-admin-addr", "", "-data", dir, "-durability", "sync", "-log-level", "warn").CombinedOutput()
	var rc, before, after int
	i := strings.LastIndex(string(out), "rc=")
	if i < 0 {
		t.Fatalf("the script said %q", out)
	}
	if _, err := fmt.Sscanf(string(out[i:]), "rc=%d before=%d after=%d", &rc, &before, &after); err != nil {
		t.Fatalf("the script said %q: %v", out, err)
	}
	// It starts without the log (each pass commits to the data file) and
	// serves until timeout stops it; the room the log did not get is
	// given back.
	if rc != 124 {
		t.Errorf("a sync start on a 2 MiB disk exited %d, want it serving (without the log) until stopped:\n%s", rc, out)
	}
	if before-after > 256 { // visitors.db alone takes some tens of KiB
		t.Errorf("a sync start left %d KiB of the disk's %d KiB free taken:\n%s", before-after, before, out)
	}
}

// TestWALExportFromAReadOnlyDirectory: export used to open the
// store read-only, so a data directory on a read-only mount (a snapshot,
// a backup volume) could be exported. With records a crash left in the
// log, export now first writes them into visitors.db (settleLog), and on
// a read-only mount fails. It should apply them in memory (or to a
// temporary copy) instead. A read-only bind mount in a user and mount
// namespace.
// Found by review (was TestReviewWALExportFromAReadOnlyDirectory).
func TestWALExportFromAReadOnlyDirectory(t *testing.T) {
	if _, err := exec.LookPath("unshare"); err != nil {
		t.Fatal("unshare (util-linux) is needed to mount read-only without privileges")
	}
	data, ro := t.TempDir(), t.TempDir()
	p := servertest.Start(t, bin, rulesOff, "-data", data, "-durability", "sync", "-flush-interval", "1h", "-log-level", "warn")
	for range 3 {
		if code, _, body := mustGet(t, p.URL("/hello?name=ro")); code != 200 {
			t.Fatalf("/hello = %d %s", code, body)
		}
	}
	if err := p.Kill(); err != nil { // the visits are in the log alone
		t.Fatal(err)
	}
	const script = `mount --bind "$1" "$2" && mount -o remount,bind,ro "$2" || exit 99
shift 2
exec "$@"`
	out, err := command(t, "unshare", "--user", "--map-root-user", "--mount", "sh", "-c", script, "sh", data, ro,
		bin, "export", "-data", ro).CombinedOutput()
	if err != nil || !strings.Contains(string(out), `"key":"ro","total":3`) {
		t.Errorf("export of a read-only data directory = %v\n%s\nwant the 3 visits in the log", err, out)
	}
}
