package loadtest

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"
)

// WrkResult is what one wrk run measured.
type WrkResult struct {
	RPS      float64
	P50, P99 time.Duration
	Requests int64
	// CPU is the server's own CPU time (user and system) during the run;
	// 0 if unknown. CPU per request is what the server costs whatever
	// its neighbours on a shared machine leave it: req/s is not.
	CPU time.Duration
}

// CPUPerRequest returns the server's CPU time per request of the run, or
// 0 if unknown.
func (r WrkResult) CPUPerRequest() time.Duration {
	if r.CPU == 0 || r.Requests == 0 {
		return 0
	}
	return r.CPU / time.Duration(r.Requests)
}

// clockTick is the unit of utime and stime in /proc/PID/stat: USER_HZ,
// 100 on Linux.
const clockTick = 10 * time.Millisecond

// procCPU returns the user and system CPU time process pid has used, all
// its threads, from /proc/PID/stat.
func procCPU(pid int) (time.Duration, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// The command name, field 2, is in parentheses and may hold spaces:
	// the fields after it start at state, field 3; utime and stime are
	// fields 14 and 15.
	i := strings.LastIndexByte(string(b), ')')
	f := strings.Fields(string(b[i+1:]))
	if i < 0 || len(f) < 13 {
		return 0, fmt.Errorf("/proc/%d/stat: %q", pid, b)
	}
	utime, err1 := strconv.ParseInt(f[11], 10, 64)
	stime, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("/proc/%d/stat: %q", pid, b)
	}
	return time.Duration(utime+stime) * clockTick, nil
}

// runWrk drives url with wrk, one thread and conns connections, for d,
// pinned to cpu, with the Lua script at script if it is not "", and
// parses its report.
func runWrk(cpu string, url string, conns int, d time.Duration, script string) (WrkResult, error) {
	args := []string{"-c", cpu, "wrk", "-t1", fmt.Sprintf("-c%d", conns),
		fmt.Sprintf("-d%ds", max(1, int(d.Round(time.Second)/time.Second))), "--latency"}
	if script != "" {
		args = append(args, "-s", script)
	}
	cmd := exec.Command("taskset", append(args, url)...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return WrkResult{}, fmt.Errorf("wrk %s: %v\n%s", url, err, out)
	}
	return parseWrk(string(out))
}

// parseWrk reads wrk's report: requests/s, the latency percentiles of
// --latency, and any non-2xx responses, which make the run invalid.
func parseWrk(out string) (WrkResult, error) {
	var r WrkResult
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		switch {
		case len(f) == 2 && f[0] == "Requests/sec:":
			v, err := strconv.ParseFloat(f[1], 64)
			if err != nil {
				return r, fmt.Errorf("wrk: %q: %w", sc.Text(), err)
			}
			r.RPS = v
		case len(f) == 2 && f[0] == "50%":
			r.P50, _ = parseWrkDuration(f[1])
		case len(f) == 2 && f[0] == "99%":
			r.P99, _ = parseWrkDuration(f[1])
		case len(f) >= 2 && f[1] == "requests" && len(f) >= 4 && f[2] == "in":
			r.Requests, _ = strconv.ParseInt(f[0], 10, 64)
		case strings.HasPrefix(sc.Text(), "  Non-2xx or 3xx responses:"):
			return r, fmt.Errorf("wrk: %s", strings.TrimSpace(sc.Text()))
		case strings.HasPrefix(strings.TrimSpace(sc.Text()), "Socket errors:"):
			return r, fmt.Errorf("wrk: %s", strings.TrimSpace(sc.Text()))
		}
	}
	if r.RPS == 0 {
		return r, fmt.Errorf("wrk: no Requests/sec in its output:\n%s", out)
	}
	return r, nil
}

// parseWrkDuration parses wrk's 1.23ms, 456.00us, 2.00s.
func parseWrkDuration(s string) (time.Duration, error) {
	for _, u := range []struct {
		suffix string
		unit   time.Duration
	}{{"us", time.Microsecond}, {"ms", time.Millisecond}, {"s", time.Second}} {
		if v, ok := strings.CutSuffix(s, u.suffix); ok {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				return 0, err
			}
			return time.Duration(f * float64(u.unit)), nil
		}
	}
	return 0, fmt.Errorf("duration %q", s)
}
