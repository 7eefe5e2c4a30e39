package loadtest

import (
	"bytes"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"visitors/internal/servertest"
)

// browser is a browser's User-Agent: visitors counts its visits.
const browser = "Mozilla/5.0 (X11; Linux x86_64; rv:133.0) Gecko/20100101 Firefox/133.0"

func get(t *testing.T, url string) (http.Header, []byte) {
	t.Helper()
	req, _ := http.NewRequest("GET", url, nil)
	req.Header.Set("User-Agent", browser)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("GET %s: %d, %v", url, resp.StatusCode, err)
	}
	return resp.Header, body
}

// headers returns h's names and values but for those that differ by
// the moment and the body's length.
func headers(h http.Header) string {
	var b strings.Builder
	for _, k := range slices.Sorted(maps.Keys(h)) {
		if k == "Date" || k == "Content-Length" {
			continue
		}
		fmt.Fprintf(&b, "%s: %s\n", k, strings.Join(h[k], ", "))
	}
	return b.String()
}

// number is a number in an answer: a count, or a width in pixels.
var number = regexp.MustCompile(`[0-9]+(\.[0-9]+)?`)

// shape returns body with every number made 0, so that two answers with
// other counts, and so other widths, compare equal.
func shape(body []byte) string { return number.ReplaceAllString(string(body), "0") }

// TestBareTwinsAnswerWhatVisitorsAnswers: a bare twin is a ceiling only
// if net/http answers with it exactly what visitors answers, with no
// work: the same headers, and a body of the same shape and about the
// same length. It runs the real binary, so that a header or a byte
// added to visitors' badge or JSON and not to its twin fails here.
func TestBareTwinsAnswerWhatVisitorsAnswers(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	dir := t.TempDir()
	bin, err := servertest.Build(dir)
	if err != nil {
		t.Fatal(err)
	}
	p := servertest.Start(t, bin, nil, "-data", filepath.Join(dir, "data"), "-repeat-window", "0") // every request counts, as in a load test
	defer p.Stop(syscall.SIGTERM, 10*time.Second)

	for _, tc := range []struct {
		path string
		twin http.Handler
	}{
		{"/counter/load.svg", newBareBadge()},
		{"/counter/load.svg", &bareBadgeSet{bareBadge{svg: newBareBadge().svg}}},
		{"/counter/load.json", new(bareJSON)},
	} {
		ts := httptest.NewServer(tc.twin)
		wantH, wantB := get(t, p.URL(tc.path))
		gotH, gotB := get(t, ts.URL+tc.path)
		ts.Close()
		if g, w := headers(gotH), headers(wantH); g != w {
			t.Errorf("%T answers headers\n%s\nvisitors answers %s with\n%s", tc.twin, g, tc.path, w)
		}
		// visitors' numbers are small here, the twin's those of a load
		// test: the shapes match, the lengths within the digits.
		if g, w := shape(gotB), shape(wantB); g != w {
			t.Errorf("%T answers\n%s\nvisitors answers %s with\n%s", tc.twin, g, tc.path, w)
		}
		if d := len(gotB) - len(wantB); d < 0 || d > 40 {
			t.Errorf("%T answers %d bytes, visitors %d: the twin is not the same response", tc.twin, len(gotB), len(wantB))
		}
	}
}

// TestAblationKinds: each feature's server has every flag of the all-on
// server and that feature's off flags after them (the last flag wins),
// or is asked without the feature's query; the all-off server has all.
func TestAblationKinds(t *testing.T) {
	all, allPath, ok := ablationArgs("ablate-all", "/counter/load.svg")
	if !ok || !slices.Equal(all, ablateAll) || allPath != "/counter/load.svg?logo=github" {
		t.Fatalf("ablate-all = %q %q %v", all, allPath, ok)
	}
	for _, f := range features {
		flags, path, ok := ablationArgs(f.kind, "/counter/load.svg")
		if !ok {
			t.Fatalf("%s is not an ablation kind", f.kind)
		}
		if _, known := Kinds[f.kind]; !known {
			t.Errorf("%s is not among Kinds: -servers refuses it", f.kind)
		}
		if !slices.Equal(flags[:len(ablateAll)], ablateAll) || !slices.Equal(flags[len(ablateAll):], f.off) {
			t.Errorf("%s: flags %q, want %q then %q", f.kind, flags, ablateAll, f.off)
		}
		if (f.query != "") == strings.Contains(path, f.query) && f.query != "" || f.query == "" && path != allPath {
			t.Errorf("%s: path %q (all on: %q)", f.kind, path, allPath)
		}
	}
	none, nonePath, _ := ablationArgs("ablate-none", "/counter/load.svg")
	if nonePath != "/counter/load.svg" || len(none) <= len(ablateAll) {
		t.Errorf("ablate-none = %q %q", none, nonePath)
	}
	if _, _, ok := ablationArgs("visitors", "/"); ok {
		t.Error("visitors taken for an ablation kind")
	}
}

// TestWriteAblation: a feature's cost is the CPU per request with it on
// less that with it off.
func TestWriteAblation(t *testing.T) {
	run := func(name string, cpuPerReq time.Duration, rps float64) Result {
		return Result{Server: name, Runs: []WrkResult{{RPS: rps, Requests: 1000, CPU: 1000 * cpuPerReq}}}
	}
	results := []Result{run("ablate-all", 30*time.Microsecond, 30000), run("ablate-fr", 27*time.Microsecond, 33000), run("ablate-none", 20*time.Microsecond, 45000)}
	var b bytes.Buffer
	if err := WriteAblation(&b, Config{Rounds: 1}, results); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"| flight recorder (armed) | 27.00 | 3000 | +10.0% | 33000 | +9.1% |", "| all of the above | 20.00 | 10000 | +33.3% | 45000 | +33.3% |"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("WriteAblation wrote\n%s\nwant a row %s", b.String(), want)
		}
	}
	if err := WriteAblation(&b, Config{}, results[1:]); err == nil {
		t.Error("WriteAblation without ablate-all: no error")
	}
}
