//go:build linux

package deploy

import (
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"

	"visitors/internal/servertest"
	"visitors/internal/store/redisstore/redistest"
)

// composeFile is deploy/compose/compose.yaml as the test reads it: what
// an engine would run.
type composeFile struct {
	Name     string                    `yaml:"name"`
	Services map[string]composeService `yaml:"services"`
	Volumes  map[string]any            `yaml:"volumes"`
}

type composeService struct {
	Image       string            `yaml:"image"`
	Command     []string          `yaml:"command"`
	Environment map[string]string `yaml:"environment"`
	Ports       []string          `yaml:"ports"`
	Volumes     []string          `yaml:"volumes"`
	DependsOn   map[string]struct {
		Condition string `yaml:"condition"`
	} `yaml:"depends_on"`
	Healthcheck struct {
		Test []string `yaml:"test"`
	} `yaml:"healthcheck"`
	Ulimits struct {
		Nofile struct{ Soft, Hard int } `yaml:"nofile"`
		Nproc  int                      `yaml:"nproc"`
	} `yaml:"ulimits"`
}

// docCompose is the command of docs/deploy.md that runs the file.
const docCompose = `docker compose -f deploy/compose/compose.yaml up -d`

// TestCompose reads deploy/compose/compose.yaml and checks it against
// the binary and the image: Redis with a volume and a health check the
// instances wait for; two instances of the image build.sh tags, on
// distinct host ports that map to the port -addr listens on by default,
// with limits the container docs give; every variable one the binary
// takes. Then it runs what the file describes without an engine: a real
// redis-server, and two real visitors with the services' environment
// (the Redis URL's host pointed at that server), which must start and
// count into one counter. No compose engine runs here (no Docker daemon,
// no podman-compose): the test says so, and runs `docker compose config`
// if one ever does.
func TestCompose(t *testing.T) {
	b, err := os.ReadFile("compose/compose.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var f composeFile
	if err := yaml.Unmarshal(b, &f); err != nil {
		t.Fatalf("compose.yaml: %v", err)
	}
	doc, err := os.ReadFile("../docs/deploy.md")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(doc), docCompose) || !strings.Contains(string(doc), docImageBuild) {
		t.Errorf("docs/deploy.md does not show %q after %q", docCompose, docImageBuild)
	}
	usage := mustOutput(t, ".", bin, "-h")

	redis, ok := f.Services["redis"]
	if !ok {
		t.Fatalf("no service redis in %v", f.Services)
	}
	if !strings.HasPrefix(redis.Image, "redis:") || !slices.Contains(redis.Command, "--appendonly") {
		t.Errorf("redis: image %q, command %q; want an official redis with --appendonly", redis.Image, redis.Command)
	}
	if len(redis.Volumes) != 1 || !strings.HasSuffix(redis.Volumes[0], ":/data") {
		t.Errorf("redis: volumes %q, want one at /data", redis.Volumes)
	} else if vol, _, _ := strings.Cut(redis.Volumes[0], ":"); f.Volumes == nil || !hasKey(f.Volumes, vol) {
		t.Errorf("redis's volume %q is not declared in volumes: %v", vol, f.Volumes)
	}
	if !slices.Contains(redis.Healthcheck.Test, "ping") {
		t.Errorf("redis: health check %q, want redis-cli ping", redis.Healthcheck.Test)
	}

	addr := regexp.MustCompile(`(?m)^  -addr address\n.*\(default ":(\d+)"`).FindStringSubmatch(usage)
	if addr == nil {
		t.Fatal("visitors -h: no default of -addr")
	}
	var instances []composeService
	hostPorts := map[string]bool{}
	for _, name := range []string{"visitors-1", "visitors-2"} {
		s, ok := f.Services[name]
		if !ok {
			t.Fatalf("no service %s", name)
		}
		instances = append(instances, s)
		if s.Image != "${VISITORS_IMAGE:-visitors}" {
			t.Errorf("%s: image %q, want the tag build.sh is given in the doc, visitors", name, s.Image)
		}
		if s.DependsOn["redis"].Condition != "service_healthy" {
			t.Errorf("%s: does not wait for redis to be healthy", name)
		}
		if len(s.Ports) != 1 {
			t.Fatalf("%s: ports %q, want one", name, s.Ports)
		}
		host, container, _ := strings.Cut(s.Ports[0], ":")
		if container != addr[1] || hostPorts[host] {
			t.Errorf("%s: port %q: want a host port of its own to the container's %s (-addr's default)", name, s.Ports[0], addr[1])
		}
		hostPorts[host] = true
		if n := s.Ulimits.Nofile; n.Soft != 16384 || n.Hard != 16384 || s.Ulimits.Nproc != 4096 || !strings.Contains(string(doc), "--ulimit nofile=16384:16384 --ulimit nproc=4096:4096") {
			t.Errorf("%s: ulimits %+v, want the container docs' nofile 16384, nproc 4096", name, s.Ulimits)
		}
		for k := range s.Environment {
			if !strings.Contains(usage, "env "+k+")") {
				t.Errorf("%s: %s is not a variable of visitors -h", name, k)
			}
		}
		u, err := url.Parse(s.Environment["VISITORS_REDIS_URL"])
		if err != nil || u.Hostname() != "redis" || u.Port() != "6379" || s.Environment["VISITORS_STORE"] != "redis" {
			t.Errorf("%s: VISITORS_STORE %q, VISITORS_REDIS_URL %q: want redis at the service redis:6379", name, s.Environment["VISITORS_STORE"], s.Environment["VISITORS_REDIS_URL"])
		}
	}

	// The services, run without an engine: the real binary with each
	// instance's environment, on a real Redis.
	srv := redistest.StartTest(t)
	var procs []*servertest.Proc
	for _, s := range instances {
		var env []string
		for k, v := range s.Environment {
			if k == "VISITORS_REDIS_URL" {
				v = strings.Replace(v, "redis:6379", srv.Addr, 1)
			}
			env = append(env, k+"="+v)
		}
		// The image's own VISITORS_DATA (its flight recorder's traces
		// go there), and the test's clients told apart.
		env = append(env, "VISITORS_DATA="+t.TempDir(), "VISITORS_TRUSTED_PROXIES=127.0.0.1")
		procs = append(procs, servertest.Start(t, bin, env, "-log-level", "off", "-flush-interval", "10ms"))
	}
	for i := range 6 {
		p := procs[i%2]
		if code, body := getUA(t, p.URL("/hit/compose/shared"), fmt.Sprintf("198.51.100.%d", i+1)); code != 200 {
			t.Fatalf("instance %d: /hit = %d %q", i%2+1, code, body)
		}
	}
	waitTotal(t, procs[0], "countapi/compose/shared", 6)
	waitTotal(t, procs[1], "countapi/compose/shared", 6)

	engine := composeEngine()
	if engine == nil {
		t.Log("no compose engine runs here (no Docker daemon, no podman-compose): the file was checked against the binary and run as the services would, not by an engine")
		return
	}
	c := exec.Command(engine[0], append(engine[1:], "-f", "compose/compose.yaml", "config")...)
	if out, err := c.CombinedOutput(); err != nil {
		t.Errorf("%s config: %v\n%s", strings.Join(engine, " "), err, out)
	}
}

// composeEngine returns the command of a compose engine that works
// here, or nil.
func composeEngine() []string {
	if exec.Command("docker", "compose", "version").Run() == nil && exec.Command("docker", "info").Run() == nil {
		return []string{"docker", "compose"}
	}
	if _, err := exec.LookPath("podman-compose"); err == nil {
		return []string{"podman-compose"}
	}
	return nil
}

func hasKey(m map[string]any, k string) bool { _, ok := m[k]; return ok }

// getUA GETs url as a browser behind the trusted loopback proxy, as
// client xff.
func getUA(t *testing.T, u, xff string) (int, string) {
	t.Helper()
	req, err := http.NewRequest("GET", u, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("User-Agent", "Mozilla/5.0")
	req.Header.Set("X-Forwarded-For", xff)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", u, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("GET %s: %v", u, err)
	}
	return resp.StatusCode, string(b)
}

// waitTotal waits until p shows key's total at want: the instances
// share counts through Redis, each within a flush.
func waitTotal(t *testing.T, p *servertest.Proc, key string, want int) {
	t.Helper()
	var body string
	for range 200 {
		_, body = getUA(t, p.URL("/counter/"+key+".json?count=false"), "198.51.100.200")
		if strings.Contains(body, fmt.Sprintf(`"total":%d,`, want)) {
			return
		}
		time.Sleep(25 * time.Millisecond)
	}
	t.Errorf("%s on %s = %s, want total %d", key, p.Addr, body, want)
}
