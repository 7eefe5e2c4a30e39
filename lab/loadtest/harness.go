package loadtest

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"visitors/internal/servertest"
	"visitors/internal/store/redisstore/redistest"
	"visitors/lab/report"
)

// Config is one load-test run.
type Config struct {
	Servers      []string      // names from [Kinds], in the order they take turns
	Rounds       int           // a b c a b c …: how many times each is measured
	Duration     time.Duration // each wrk run
	Conns        int           // wrk connections, and constant-rate workers
	RateDuration time.Duration // the constant-rate run; 0 skips it
	Path         string        // what every server is asked for
	ServerCPU    string        // taskset list for the servers
	LoadCPU      string        // taskset list for the load generators
	Profile      string        // if set, a CPU profile of the first visitors server is saved here
	ProfileFor   time.Duration
	SVG          string // if set, a bar chart of req/s is written here
	RedisCPU     string // taskset list for the redis-server of the redis servers; "": LoadCPU
	Baseline     string // the visitors binary of the visitors-baseline server: another revision's build
	// Clients makes every wrk request come from a distinct client, named
	// in X-Forwarded-For (visitors trusts loopback as its proxy), with a
	// browser's User-Agent: the fairness rules then do real work.
	Clients bool
	// Ablation runs visitors with every feature on, then with each
	// feature off in turn, and then with all off (ablationKinds), and
	// writes what each feature costs a request (WriteAblation).
	Ablation bool
}

// clientsScript is the wrk script of Config.Clients: the n-th request
// names client address n, from 1.0.0.1 up. The requests are formatted
// once, in init, and then handed out in turn: formatting each in Lua
// (string.format and wrk.format a request) made wrk's core, not the
// server's, what bounded a run. 2^17 distinct clients last a round at
// 30,000 requests a second, so no client comes back within a round.
const clientsScript = `local pool = {}
local size = 131072
local i = 0
init = function(args)
  local ua = "Mozilla/5.0 (X11; Linux x86_64; rv:133.0) Gecko/20100101 Firefox/133.0"
  for k = 1, size do
    local a = 16777216 + k
    local ip = string.format("%d.%d.%d.%d", math.floor(a / 16777216) % 256, math.floor(a / 65536) % 256, math.floor(a / 256) % 256, a % 256)
    pool[k] = wrk.format(nil, nil, {["X-Forwarded-For"] = ip, ["User-Agent"] = ua})
  end
end
request = function()
  i = i % size + 1
  return pool[i]
end
`

// Kinds are the servers a run can compare, by name.
var Kinds = map[string]string{
	"classic":             "(a) the lab's greeting step 0 behind net/http: the classic unoptimised server",
	"bare":                "(b) net/http with a handler that only increments an atomic: the ceiling",
	"bare-badge":          "net/http answering a fixed badge (visitors' SVG and headers) and nothing else: the ceiling for a badge",
	"bare-badge-set":      "bare-badge with its headers set by Header().Set, as a handler usually sets them",
	"bare-json":           "net/http answering a fixed /counter/{key}.json body (visitors' JSON and headers) and nothing else: the ceiling for the JSON API",
	"visitors":            "(c) visitors with every default: embedded store, batch durability, access log",
	"visitors-nopgo":      "visitors built with -pgo=off",
	"visitors-memory":     "visitors with -store memory",
	"visitors-sync":       "visitors with -durability sync",
	"visitors-sync-noaio": "visitors with -durability sync, its log synced by a blocking fdatasync (VISITORS_LOG_AIO=0), not through Linux AIO",
	"visitors-nofr":       "visitors with -flight-recorder=false (metrics on): the default, the flight recorder disarmed",
	"visitors-fr":         "visitors with -flight-recorder: the flight recorder armed for good, as an arming on demand leaves it",
	"visitors-noobs":      "visitors with -flight-recorder=false -metrics=false: nothing observed",
	"visitors-redis":      "visitors with -store redis (batch) on a redis-server the harness starts, pinned to -redis-cpu",
	"visitors-redis-sync": "visitors with -store redis -durability sync on that redis-server",
	"visitors-rules0":     "visitors with every fairness rule off: -client-rate 0 -client-new-keys 0 -unique=false -count-bots",
	"visitors-hi":         "visitors with every default, asked for /hi whatever -path says",
	"visitors-baseline":   "visitors with every default, from the binary -baseline names (another revision's build: an A/B run side by side)",
	"ablate-all":          "visitors with every feature of an ablation run on (-ablation)",
	"ablate-none":         "visitors with every feature of an ablation run off (-ablation)",
}

func init() {
	for _, f := range features {
		Kinds[f.kind] = "visitors with every feature of an ablation run on but " + f.name + " (-ablation)"
	}
}

// Result is one server's measurements.
type Result struct {
	Server string
	Runs   []WrkResult
	Rate   *RateResult
}

// Median returns the median, min and max requests/s over the runs.
func (r Result) Median() (med, lo, hi float64) {
	v := make([]float64, len(r.Runs))
	for i, w := range r.Runs {
		v[i] = w.RPS
	}
	if len(v) == 0 {
		return 0, 0, 0
	}
	return report.Median(v), slices.Min(v), slices.Max(v)
}

// MedianCPU returns the median of the runs' CPU time per request; 0 if
// unknown.
func (r Result) MedianCPU() time.Duration {
	var v []time.Duration
	for _, w := range r.Runs {
		if c := w.CPUPerRequest(); c > 0 {
			v = append(v, c)
		}
	}
	if len(v) == 0 {
		return 0
	}
	return medianDur(v)
}

// Main runs the loadtest command: "serve" and "attack" are the helpers
// the harness starts pinned to a core; anything else is a run.
func Main(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	// A classic or bare server started by the harness is told its kind
	// in the environment: internal/servertest puts -addr and -admin-addr
	// before any other argument.
	if kind := os.Getenv(serveEnv); kind != "" {
		return Serve(ctx, append([]string{"-kind", kind}, args...), stderr)
	}
	if len(args) > 0 {
		switch args[0] {
		case "serve":
			return Serve(ctx, args[1:], stderr)
		case "attack":
			return Attack(ctx, args[1:], stdout, stderr)
		}
	}
	fs := flag.NewFlagSet("loadtest", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var c Config
	servers := fs.String("servers", "classic,bare,visitors", "comma-separated servers, from: "+strings.Join(slices.Sorted(maps.Keys(Kinds)), ", "))
	fs.IntVar(&c.Rounds, "rounds", 3, "rounds of a b c …")
	fs.DurationVar(&c.Duration, "duration", 10*time.Second, "each wrk run")
	fs.IntVar(&c.Conns, "conns", 64, "connections")
	fs.DurationVar(&c.RateDuration, "rate-duration", 10*time.Second, "constant-rate run at half of each server's maximum (0: skip)")
	fs.StringVar(&c.Path, "path", "/hi", "path and query every server is asked for")
	fs.StringVar(&c.ServerCPU, "server-cpu", "0", "taskset CPU list for the servers")
	fs.StringVar(&c.LoadCPU, "load-cpu", "1", "taskset CPU list for the load generators")
	fs.StringVar(&c.Profile, "profile", "", "save a CPU profile of visitors under load to this `file` (for PGO: cmd/visitors/default.pgo)")
	fs.DurationVar(&c.ProfileFor, "profile-for", 20*time.Second, "length of that profile")
	fs.StringVar(&c.SVG, "svg", "", "write a bar chart of req/s to this `file`")
	fs.StringVar(&c.RedisCPU, "redis-cpu", "", "taskset CPU list for the redis-server that visitors-redis* use (default: -load-cpu)")
	fs.StringVar(&c.Baseline, "baseline", "", "the visitors `binary` that the visitors-baseline server runs (go build -o it from another revision)")
	fs.BoolVar(&c.Clients, "clients", false, "each request from a distinct client address, through X-Forwarded-For from a trusted proxy (a wrk Lua script)")
	fs.BoolVar(&c.Ablation, "ablation", false, "measure what each feature costs a request: visitors with every feature on, with each off in turn, and with all off; implies -clients, and -servers is ignored")
	if err := fs.Parse(args); err != nil {
		return err
	}
	c.Servers = strings.Split(*servers, ",")
	if c.Ablation {
		c.Servers, c.Clients = ablationKinds(), true
	}
	for _, s := range c.Servers {
		if _, ok := Kinds[s]; !ok {
			return fmt.Errorf("unknown server %q", s)
		}
		if s == "visitors-baseline" && c.Baseline == "" {
			return errors.New("the visitors-baseline server needs -baseline: the binary to run")
		}
	}
	results, err := Run(ctx, c, stderr)
	if err != nil {
		return err
	}
	if err := WriteTable(stdout, c, results); err != nil {
		return err
	}
	if c.Ablation {
		if err := WriteAblation(stdout, c, results); err != nil {
			return err
		}
	}
	if c.SVG != "" {
		f, err := os.Create(c.SVG)
		if err != nil {
			return err
		}
		defer f.Close()
		if err := WriteSVG(f, c, results); err != nil {
			return err
		}
	}
	return nil
}

// serveEnv names the environment variable that makes the loadtest
// binary run "serve" with its value as -kind.
const serveEnv = "VISITORS_LOADTEST_SERVE"

// proc is a server the harness started.
type proc struct {
	name  string
	admin string // the admin listener; "" for the servers that are not visitors
	path  string // what it is asked for
	*servertest.Proc
}

// Run builds and starts every server, measures them, stops them and
// returns one Result per server in c.Servers order. It logs progress to
// log.
func Run(ctx context.Context, c Config, log io.Writer) ([]Result, error) {
	for _, tool := range []string{"taskset", "wrk"} {
		if _, err := exec.LookPath(tool); err != nil {
			return nil, fmt.Errorf("%s is needed: apt-get install util-linux wrk", tool)
		}
	}
	tmp, err := os.MkdirTemp("", "loadtest")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	// The redis-server of the visitors-redis servers; it is stopped after
	// them (defers run last first), so that they stop cleanly.
	var redisURL string
	for _, name := range c.Servers {
		if strings.HasPrefix(name, "visitors-redis") && redisURL == "" {
			rs, err := redistest.Start(tmp)
			if err != nil {
				return nil, err
			}
			defer rs.Close()
			cpu := c.RedisCPU
			if cpu == "" {
				cpu = c.LoadCPU
			}
			if err := rs.Pin(cpu); err != nil {
				return nil, err
			}
			redisURL = rs.URL()
			fmt.Fprintf(log, "loadtest: started redis-server on %s (cpu %s)\n", rs.Addr, cpu)
		}
	}
	procs := make([]*proc, len(c.Servers))
	defer func() {
		for _, p := range procs {
			if p == nil {
				continue
			}
			if err := p.Stop(syscall.SIGTERM, 10*time.Second); err != nil {
				fmt.Fprintf(log, "loadtest: stop %s: %v\n", p.name, err)
				p.Kill()
			}
		}
	}()
	script := ""
	if c.Clients {
		script = filepath.Join(tmp, "clients.lua")
		if err := os.WriteFile(script, []byte(clientsScript), 0o644); err != nil {
			return nil, err
		}
	}
	for i, name := range c.Servers {
		p, err := startServer(tmp, name, c.ServerCPU, redisURL, c.Baseline)
		if err != nil {
			return nil, err
		}
		p.path = c.Path
		if name == "visitors-hi" {
			p.path = "/hi"
		}
		if _, path, ok := ablationArgs(name, c.Path); ok {
			p.path = path
		}
		procs[i] = p
		fmt.Fprintf(log, "loadtest: started %s on %s (cpu %s)\n", name, p.Addr, c.ServerCPU)
	}

	// Warm up each server (JIT-free, but page cache, GC pacing, pools).
	for _, p := range procs {
		if _, err := runWrk(c.LoadCPU, p.URL(p.path), c.Conns, time.Second, script); err != nil {
			return nil, fmt.Errorf("%s: warm-up: %w", p.name, err)
		}
	}
	results := make([]Result, len(procs))
	for round := range c.Rounds {
		for i, p := range procs {
			cpu0, cpuErr := procCPU(p.Cmd.Process.Pid) // taskset execs the server: one pid
			r, err := runWrk(c.LoadCPU, p.URL(p.path), c.Conns, c.Duration, script)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", p.name, err)
			}
			if cpu1, err := procCPU(p.Cmd.Process.Pid); cpuErr == nil && err == nil {
				r.CPU = cpu1 - cpu0
			}
			results[i].Server = p.name
			results[i].Runs = append(results[i].Runs, r)
			fmt.Fprintf(log, "loadtest: round %d %-16s %9.0f req/s  p50 %v  p99 %v  CPU %.2f µs/req\n", round+1, p.name, r.RPS, r.P50, r.P99, us(r.CPUPerRequest()))
		}
	}
	if c.RateDuration > 0 {
		for i, p := range procs {
			med, _, _ := results[i].Median()
			rr, err := attack(ctx, c, p.URL(p.path), med/2)
			if err != nil {
				return nil, fmt.Errorf("%s: constant rate: %w", p.name, err)
			}
			results[i].Rate = &rr
			fmt.Fprintf(log, "loadtest: %-16s at %.0f req/s: p50 %v  p99 %v  p99.9 %v  errors %d\n", p.name, rr.Rate, rr.P50, rr.P99, rr.P999, rr.Errors)
		}
	}
	if c.Profile != "" {
		if err := profile(c, procs, c.Profile, script, log); err != nil {
			return nil, err
		}
	}
	return results, nil
}

// attack runs the constant-rate generator as a pinned subprocess.
func attack(ctx context.Context, c Config, url string, rate float64) (RateResult, error) {
	self, err := os.Executable()
	if err != nil {
		return RateResult{}, err
	}
	cmd := exec.CommandContext(ctx, "taskset", "-c", c.LoadCPU, self, "attack",
		"-url", url, "-rate", fmt.Sprint(rate), "-duration", c.RateDuration.String(), "-conns", fmt.Sprint(c.Conns))
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return RateResult{}, fmt.Errorf("attack: %v\n%s", err, stderr.String())
	}
	var r RateResult
	if err := json.Unmarshal(out, &r); err != nil {
		return r, fmt.Errorf("attack output %q: %w", out, err)
	}
	return r, nil
}

// profile takes a CPU profile of the first visitors server from its admin
// listener while wrk loads it as the run did (with the clients' script,
// if any), and saves it to file.
func profile(c Config, procs []*proc, file, script string, log io.Writer) error {
	var p *proc
	for _, q := range procs {
		if q.admin != "" {
			p = q
			break
		}
	}
	if p == nil {
		return errors.New("-profile needs a visitors server among -servers")
	}
	secs := max(1, int(c.ProfileFor/time.Second))
	type wrkDone struct {
		r   WrkResult
		err error
	}
	before, err := served(p.admin)
	if err != nil {
		return fmt.Errorf("profile: %w", err)
	}
	wrkErr := make(chan wrkDone, 1)
	go func() {
		r, err := runWrk(c.LoadCPU, p.URL(p.path), c.Conns, time.Duration(secs+3)*time.Second, script)
		wrkErr <- wrkDone{r, err}
	}()
	// The profile begins once the server has answered wrk: on a busy
	// machine wrk may take longer than a fixed wait to start, and a
	// profile taken before its load holds none of it.
	for deadline := time.Now().Add(30 * time.Second); ; {
		n, err := served(p.admin)
		if err != nil {
			return fmt.Errorf("profile: %w", err)
		}
		if n > before {
			break
		}
		if time.Now().After(deadline) {
			return errors.New("profile: the server answered no request of wrk's in 30s")
		}
		time.Sleep(20 * time.Millisecond)
	}
	time.Sleep(500 * time.Millisecond) // let the load reach steady state
	url := fmt.Sprintf("http://%s/debug/pprof/profile?seconds=%d", p.admin, secs)
	resp, err := http.Get(url)
	if err != nil {
		return fmt.Errorf("profile: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		b, _ := io.ReadAll(resp.Body)
		return fmt.Errorf("profile: %s: %s", resp.Status, b)
	}
	f, err := os.Create(file)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, resp.Body); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	w := <-wrkErr
	if w.err != nil {
		return w.err
	}
	// The rate lets a reader turn the profile's seconds into time per
	// request: a function's share of samples × secs ÷ (rate × secs).
	fmt.Fprintf(log, "loadtest: saved a %ds CPU profile of %s under load to %s (%.0f req/s during the load around it)\n", secs, p.name, file, w.r.RPS)
	return nil
}

// served reads how many requests the visitors server whose admin
// listener is admin has answered, from its /metrics.
func served(admin string) (float64, error) {
	resp, err := http.Get("http://" + admin + "/metrics")
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("%s/metrics: %s", admin, resp.Status)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		return 0, fmt.Errorf("%s/metrics: %w", admin, err)
	}
	var n float64
	for _, m := range families["visitors_http_requests_total"].GetMetric() {
		n += m.GetCounter().GetValue()
	}
	return n, nil
}

// startServer builds if needed and starts server name, pinned to cpu,
// on free loopback ports, and waits until it listens. Every server is
// started by internal/servertest, which passes -addr and -admin-addr.
// visitors-baseline runs the binary baseline.
func startServer(tmp, name, cpu, redisURL, baseline string) (*proc, error) {
	var argv, env []string
	admin := true
	switch name {
	case "classic", "bare", "bare-badge", "bare-badge-set", "bare-json":
		self, err := os.Executable()
		if err != nil {
			return nil, fmt.Errorf("find the loadtest binary: %w", err)
		}
		argv = []string{self}
		env = []string{serveEnv + "=" + name}
		admin = false
	default:
		var flags []string
		bin := "visitors-pgo-auto"
		if name == "visitors-nopgo" {
			bin, flags = "visitors-pgo-off", []string{"-pgo=off"}
		}
		path := filepath.Join(tmp, bin)
		if name == "visitors-baseline" {
			if _, err := os.Stat(baseline); err != nil {
				return nil, fmt.Errorf("-baseline: %w", err)
			}
			path = baseline
		}
		if _, err := os.Stat(path); err != nil {
			if path, err = servertest.BuildAs(tmp, bin, flags...); err != nil {
				return nil, err
			}
		}
		// Loopback is the trusted proxy: with -clients, wrk names each
		// request's client in X-Forwarded-For. Every view counts
		// (-repeat-window 0), as before its default was 30m: wrk's
		// clients reload the same badge, and the runs measure counting.
		argv = []string{path, "-data", filepath.Join(tmp, name+"-data"), "-trusted-proxies", "127.0.0.1", "-repeat-window", "0"}
		switch name {
		case "visitors-rules0":
			argv = append(argv, "-client-rate", "0", "-client-new-keys", "0", "-unique=false", "-count-bots")
		case "visitors-memory":
			argv = append(argv, "-store", "memory")
		case "visitors-sync":
			argv = append(argv, "-durability", "sync")
		case "visitors-sync-noaio":
			argv = append(argv, "-durability", "sync")
			env = append(env, "VISITORS_LOG_AIO=0")
		case "visitors-nofr":
			argv = append(argv, "-flight-recorder=false")
		case "visitors-fr":
			argv = append(argv, "-flight-recorder")
		case "visitors-noobs":
			argv = append(argv, "-flight-recorder=false", "-metrics=false")
		case "visitors-redis":
			argv = append(argv, "-store", "redis", "-redis-url", redisURL, "-redis-prefix", name+":")
		case "visitors-redis-sync":
			argv = append(argv, "-store", "redis", "-redis-url", redisURL, "-redis-prefix", name+":", "-durability", "sync")
		default:
			if flags, _, ok := ablationArgs(name, ""); ok {
				argv = append(argv, flags...)
			}
		}
	}
	// The access log goes to the process's output, kept in memory by
	// servertest, as it is written in production.
	p, err := servertest.StartWrappedErr([]string{"taskset", "-c", cpu}, argv[0], env, argv[1:]...)
	if err != nil {
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	pr := &proc{name: name, Proc: p}
	if admin {
		pr.admin = p.AdminAddr
	}
	return pr, nil
}
