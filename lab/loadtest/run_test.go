package loadtest

import (
	"bytes"
	"compress/gzip"
	"context"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestRunMeasuresAndProfiles runs the harness end to end on the real
// binary, as `cmd/loadtest -profile` does: one short round of wrk
// against visitors with the clients' script, then a CPU profile under
// the same load. The round must have answered requests and been charged
// the server's CPU, the profile must hold net/http serving visitors'
// handler, and the log must give the load's rate around the profile, by
// which its seconds become time per request (docs/performance.md).
func TestRunMeasuresAndProfiles(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the real binary and wrk")
	}
	prof := filepath.Join(t.TempDir(), "cpu.pprof")
	var log strings.Builder
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	res, err := Run(ctx, Config{
		Servers: []string{"visitors-memory"}, Rounds: 1, Duration: time.Second, Conns: 8,
		Path: "/counter/run.svg", ServerCPU: "0", LoadCPU: "1", Clients: true,
		Profile: prof, ProfileFor: time.Second,
	}, &log)
	if err != nil {
		t.Fatalf("Run: %v\n%s", err, log.String())
	}
	if len(res) != 1 || len(res[0].Runs) != 1 {
		t.Fatalf("results %+v, want one round of one server", res)
	}
	r := res[0].Runs[0]
	if r.RPS <= 0 || r.Requests <= 0 || r.CPU <= 0 {
		t.Errorf("round: %+v, want requests answered and the server's CPU charged", r)
	}

	m := regexp.MustCompile(`saved a 1s CPU profile of visitors-memory under load to \S+ \(([0-9]+) req/s during the load around it\)`).FindStringSubmatch(log.String())
	if m == nil {
		t.Fatalf("no profile line with the load's rate in the log:\n%s", log.String())
	}
	if rps, _ := strconv.Atoi(m[1]); rps <= 0 {
		t.Errorf("the load around the profile answered %s req/s", m[1])
	}

	f, err := os.Open(prof)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	z, err := gzip.NewReader(f)
	if err != nil {
		t.Fatalf("the profile is not a gzipped pprof profile: %v", err)
	}
	body, err := io.ReadAll(z)
	if err != nil {
		t.Fatal(err)
	}
	// The profile's string table names the functions sampled: the server
	// was profiled while it answered badges.
	for _, fn := range []string{"net/http.(*conn).serve", "visitors/internal/web.(*Server).ServeHTTP"} {
		if !bytes.Contains(body, []byte(fn)) {
			t.Errorf("the profile holds no sample in %s", fn)
		}
	}
}
