package main

import (
	"encoding/json"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
	"testing"

	"visitors/internal/servertest"
	"visitors/internal/store"
	"visitors/internal/store/dump"
)

// The /hi counter and the dump, on the real binary (issue 23, items 4
// and 5; issue 28's third promise).

// mustHi visits /hi on p and returns the number it handed out.
func mustHi(tb testing.TB, p *servertest.Proc) uint64 {
	tb.Helper()
	code, _, body := mustGet(tb, p.URL("/hi"))
	if code != 200 {
		tb.Fatalf("/hi = %d %s", code, body)
	}
	n, err := numberAfter(body, "visitor number ")
	if err != nil {
		tb.Fatal(err)
	}
	return n
}

// TestHiContinuesAfterACleanStop: SIGTERM and a restart hand out the
// next /hi number, also when none was handed out before the stop (the
// final flush used to skip its write when the counter was 0, leaving
// the 1,000-number reservation on disk: the first /hi was 1001).
func TestHiContinuesAfterACleanStop(t *testing.T) {
	for _, durability := range []string{"batch", "sync"} {
		for _, before := range []int{0, 3} {
			t.Run(fmt.Sprintf("%s/hits=%d", durability, before), func(t *testing.T) {
				args := []string{"-data", t.TempDir(), "-durability", durability}
				p := servertest.Start(t, bin, rulesOff, args...)
				for range before {
					mustHi(t, p)
				}
				waitFlushed(t, p) // a pass has written the reservation ahead
				stop(t, p)
				p = servertest.Start(t, bin, rulesOff, args...)
				if got, want := mustHi(t, p), uint64(before+1); got != want {
					t.Errorf("first /hi after a clean stop with %d handed out = %d, want %d", before, got, want)
				}
				stop(t, p)
			})
		}
	}
}

// TestOnlineImportNeverLowersHiInTheFile: an online import of a dump
// whose hits is below the store's, then SIGKILL: after the restart /hi
// is above every number handed out before (issue 28: the file held the
// dump's value until the next reservation, so a crash handed numbers
// out again).
func TestOnlineImportNeverLowersHiInTheFile(t *testing.T) {
	for _, durability := range []string{"batch", "sync"} {
		for _, replace := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/replace=%v", durability, replace), func(t *testing.T) {
				args := []string{"-data", t.TempDir(), "-durability", durability}
				p := servertest.Start(t, bin, apiEnv, args...)
				var last uint64
				for range 5 {
					last = mustHi(t, p)
				}
				dump := `{"format":"visitors-export-1","hits":2,"keys":[{"key":"k","total":1}]}`
				if r := apiDo(t, p, "POST", fmt.Sprintf("/api/v1/import?replace=%v", replace), apiRoot, dump); r.code != 200 {
					t.Fatalf("POST /api/v1/import = %d %s", r.code, r.body)
				}
				if err := p.Kill(); err != nil {
					t.Fatal(err)
				}
				p = servertest.Start(t, bin, apiEnv, args...)
				if got := mustHi(t, p); got <= last {
					t.Errorf("after an online import of hits 2 and SIGKILL, /hi = %d, want more than %d", got, last)
				}
			})
		}
	}
}

// dumpOfKeys is a dump of n keys named prefix0, prefix1, …, each with a
// total of 1, as an export writes it (dump.Encoder).
func dumpOfKeys(prefix string, n int) string {
	var b strings.Builder
	e := dump.NewEncoder(&b, 0)
	for i := range n {
		// A Key always marshals, and a strings.Builder takes every write.
		_ = e.Encode(&dump.Key{Key: prefix + strconv.Itoa(i), Total: 1})
	}
	_ = e.Close()
	return b.String()
}

// TestImportRespectsMaxKeys: four imports of 39 new keys each into a
// store of -max-keys 100, online and offline: the first two are taken,
// the third and fourth refused whole (409 online, exit status 1
// offline), naming the limit, and the store holds 78 keys (it held 156
// before issue 23).
func TestImportRespectsMaxKeys(t *testing.T) {
	t.Run("online", func(t *testing.T) {
		p := servertest.Start(t, bin, apiEnv, "-data", t.TempDir(), "-max-keys", "100")
		for i, want := range []int{200, 200, 409, 409} {
			r := apiDo(t, p, "POST", "/api/v1/import", apiRoot, dumpOfKeys(fmt.Sprintf("i%d-", i), 39))
			if r.code != want || (want != 200 && !strings.Contains(r.body, "limit of 100 (-max-keys)")) {
				t.Errorf("import %d: %d %s, want %d (naming the limit of 100 if refused)", i+1, r.code, r.body, want)
			}
		}
		if n := len(listAll(t, p, apiRoot)); n != 78 {
			t.Errorf("after the imports the store holds %d keys, want 78", n)
		}
	})
	t.Run("offline", func(t *testing.T) {
		data := t.TempDir()
		for i, ok := range []bool{true, true, false, false} {
			cmd := exec.Command(bin, "import", "-data", data, "-max-keys", "100")
			cmd.Stdin = strings.NewReader(dumpOfKeys(fmt.Sprintf("i%d-", i), 39))
			out, err := cmd.CombinedOutput()
			if ok && err != nil || !ok && (err == nil || !strings.Contains(string(out), "limit of 100")) {
				t.Errorf("import %d: %v %s, want success %v (naming the limit of 100 if refused)", i+1, err, out, ok)
			}
		}
		p := servertest.Start(t, bin, apiEnv, "-data", data)
		if n := len(listAll(t, p, apiRoot)); n != 78 {
			t.Errorf("after the imports the store holds %d keys, want 78", n)
		}
	})
	// visitors import -store redis: the same bound, told to
	// redisstore.Offline by the same flag.
	t.Run("offline-redis", func(t *testing.T) {
		rargs := redisArgs(t, false)
		for i, ok := range []bool{true, true, false, false} {
			cmd := command(t, bin, append([]string{"import", "-max-keys", "100"}, rargs...)...)
			cmd.Stdin = strings.NewReader(dumpOfKeys(fmt.Sprintf("i%d-", i), 39))
			out, err := cmd.CombinedOutput()
			if ok && err != nil || !ok && (err == nil || !strings.Contains(string(out), "limit of 100")) {
				t.Errorf("import %d: %v %s, want success %v (naming the limit of 100 if refused)", i+1, err, out, ok)
			}
		}
		out, err := command(t, bin, append([]string{"export"}, rargs...)...).Output()
		if err != nil {
			t.Fatalf("export: %v", err)
		}
		if n := strings.Count(string(out), `{"key":`); n != 78 {
			t.Errorf("after the imports the store holds %d keys, want 78:\n%s", n, out)
		}
	})
}

// TestCountersStopAtTheirBounds: a counter set to 2^62 through the owner
// API, and one whose day /add pushed to 2^39, are visited: the visits
// are answered with Visitors-Counted: false and counted in
// visitors_visits_not_counted_total{reason="saturated"}, the counts stay
// at their bounds, and the export imports into another instance (before
// issue 23 the visits counted, and no later export imported: the import
// refused a total past 2^62, a day past 2^39).
func TestCountersStopAtTheirBounds(t *testing.T) {
	for _, durability := range []string{"batch", "sync"} {
		t.Run(durability, func(t *testing.T) {
			a := servertest.Start(t, bin, apiEnv, "-data", t.TempDir(), "-durability", durability)
			if r := apiDo(t, a, "PUT", counterPath("total"), apiRoot, `{"total":4611686018427387904}`); r.code != 200 {
				t.Fatalf("PUT total = %d %s", r.code, r.body)
			}
			if r := apiDo(t, a, "POST", counterPath("day")+"/add", apiRoot, `{"n":549755813888}`); r.code != 200 {
				t.Fatalf("POST day/add = %d %s", r.code, r.body)
			}
			for _, k := range []string{"total", "day"} {
				code, hdr, body := mustGet(t, a.URL("/counter/"+k+".json"))
				if code != 200 || hdr.Get("Visitors-Counted") != "false" {
					t.Errorf("a visit to %s at its bound = %d, Visitors-Counted %q, %s; want 200, false", k, code, hdr.Get("Visitors-Counted"), body)
				}
			}
			if c := mustCounter(t, a, apiRoot, "total"); c.Total != 1<<62 {
				t.Errorf("total after a visit = %+v, want 2^62", c)
			}
			if c := mustCounter(t, a, apiRoot, "day"); c.Total != 1<<39 || c.Today != 1<<39 {
				t.Errorf("day after a visit = %+v, want 2^39 in all and today", c)
			}
			if _, _, body := mustGet(t, a.AdminURL("/metrics")); !strings.Contains(body, `visitors_visits_not_counted_total{reason="saturated"} 2`) {
				t.Errorf("/metrics has no visitors_visits_not_counted_total{reason=\"saturated\"} 2")
			}
			dump := apiDo(t, a, "GET", "/api/v1/export", apiRoot, "")
			b := servertest.Start(t, bin, apiEnv, "-data", t.TempDir(), "-durability", durability)
			if r := apiDo(t, b, "POST", "/api/v1/import", apiRoot, dump.body); r.code != 200 {
				t.Errorf("importing the export = %d %s, want 200", r.code, r.body)
			}
		})
	}
}

// TestHealthzReportsAStuckHi: the real binary on Redis whose /hi counter
// is at 2^63-1 (as a dump of 2^64-1 imported before issue 23 left it):
// /hi answers 503, and so does /healthz on the admin listener, naming
// /hi; once the counter is mended both answer 200. (Before, /healthz
// said ok while every /hi was a 503.)
func TestHealthzReportsAStuckHi(t *testing.T) {
	rargs := redisArgs(t, false)
	p := servertest.Start(t, bin, rulesOff, append(rargs, "-durability", "sync", "-log-level", "off")...)
	hi := rargs[len(rargs)-1] + "{hi}" // the -redis-prefix value and the counter's name
	cli := func(a ...string) {
		t.Helper()
		if out, err := sharedRedis(t).CLI(a...); err != nil {
			t.Fatalf("redis-cli %v: %v %s", a, err, out)
		}
	}
	cli("SET", hi, "9223372036854775807")
	if code, _, body := mustGet(t, p.URL("/hi")); code != 503 {
		t.Fatalf("/hi with the counter at 2^63-1 = %d %s, want 503", code, body)
	}
	if code, _, body := mustGet(t, p.AdminURL("/healthz")); code != 503 || !strings.Contains(body, "/hi") {
		t.Errorf("/healthz while /hi answers 503 = %d %q, want 503 naming /hi", code, body)
	}
	cli("SET", hi, "41")
	if got := mustHi(t, p); got != 42 {
		t.Errorf("/hi once mended = %d, want 42", got)
	}
	if code, _, body := mustGet(t, p.AdminURL("/healthz")); code != 200 {
		t.Errorf("/healthz once /hi answers again = %d %q, want 200", code, body)
	}
}

// TestHiStopsAtItsBoundAndStillRestores: an import near the bound, then
// /hi: the numbers up to store.MaxHits are handed out, the next /hi
// answers 503 saying why, /healthz says so too, and the export still
// imports. Before (the hostile review of issue 23), /hi went past 2^62
// and the export was refused by every import, offline and online.
func TestHiStopsAtItsBoundAndStillRestores(t *testing.T) {
	p := servertest.Start(t, bin, apiEnv, "-data", t.TempDir())
	dump := fmt.Sprintf(`{"format":"visitors-export-1","hits":%d,"keys":[]}`, uint64(store.MaxHits)-1)
	if r := apiDo(t, p, "POST", "/api/v1/import", apiRoot, dump); r.code != 200 {
		t.Fatalf("POST /api/v1/import = %d %s", r.code, r.body)
	}
	if got := mustHi(t, p); got != store.MaxHits {
		t.Fatalf("/hi after an import of MaxHits-1 = %d, want %d", got, uint64(store.MaxHits))
	}
	code, _, body := mustGet(t, p.URL("/hi"))
	if code != 503 || !strings.Contains(body, "every number it may") {
		t.Errorf("/hi past the bound = %d %q, want 503 saying the counter is spent", code, body)
	}
	if code, _, body := mustGet(t, p.AdminURL("/healthz")); code != 503 || !strings.Contains(body, "/hi counter") {
		t.Errorf("/healthz with /hi spent = %d %q, want 503 naming the /hi counter", code, body)
	}
	r := apiDo(t, p, "GET", "/api/v1/export", apiRoot, "")
	if r.code != 200 {
		t.Fatalf("GET /api/v1/export = %d %s", r.code, r.body)
	}
	q := servertest.Start(t, bin, apiEnv, "-data", t.TempDir())
	if r := apiDo(t, q, "POST", "/api/v1/import", apiRoot, r.body); r.code != 200 {
		t.Errorf("the export of a spent /hi does not import: %d %s", r.code, r.body)
	}
	stop(t, q)
	stop(t, p)
}

// TestImportRefusesAKeyTheDumpDoesNotName: a dump whose entry has a
// null key, no key, or a key with half a UTF-16 surrogate pair
// ("\u0000\ud800", which encoding/json reads as U+FFFD) is refused whole
// naming its line, by the owner API's import (400) and by the offline
// `visitors import` (exit status 1), with and without replace, and the
// store is as it was. Before, the first two imported the empty key and
// the third a key the dump did not name.
func TestImportRefusesAKeyTheDumpDoesNotName(t *testing.T) {
	const head = `{"format":"visitors-export-1","hits":3,"keys":[` + "\n" + `{"key":"kept","total":5},` + "\n"
	tests := []struct {
		name, entry, want string
	}{
		{"null key", `{"total":7,"key":null}`, `line 3: key: null is not a string`},
		{"no key", `{"total":7}`, `line 3: no key field`},
		{"half a surrogate pair", `{"total":7,"key":"\u0000\ud800"}`, `line 3: key: \ud800 is half of a UTF-16 surrogate pair`},
	}
	good := head[:len(head)-2] + "\n]}\n"
	check := func(t *testing.T, p *servertest.Proc) {
		t.Helper()
		got := listAll(t, p, apiRoot)
		if len(got) != 1 || got[0].Key != "kept" || got[0].Total != 5 {
			t.Errorf("after the refused imports the store holds %+v, want only kept at 5", got)
		}
	}
	t.Run("online", func(t *testing.T) {
		p := servertest.Start(t, bin, apiEnv, "-data", t.TempDir())
		if r := apiDo(t, p, "POST", "/api/v1/import", apiRoot, good); r.code != 200 {
			t.Fatalf("import of the good dump: %d %s", r.code, r.body)
		}
		for _, tt := range tests {
			for _, replace := range []string{"", "?replace=true"} {
				r := apiDo(t, p, "POST", "/api/v1/import"+replace, apiRoot, head+tt.entry+"\n]}\n")
				var e struct{ Error string }
				if json.Unmarshal([]byte(r.body), &e); r.code != 400 || !strings.Contains(e.Error, tt.want) {
					t.Errorf("%s%s: %d %s, want 400 naming %q", tt.name, replace, r.code, r.body, tt.want)
				}
			}
		}
		check(t, p)
	})
	t.Run("offline", func(t *testing.T) {
		data := t.TempDir()
		imp := func(dump string, args ...string) (string, error) {
			cmd := exec.Command(bin, append([]string{"import", "-data", data}, args...)...)
			cmd.Stdin = strings.NewReader(dump)
			out, err := cmd.CombinedOutput()
			return string(out), err
		}
		if out, err := imp(good); err != nil {
			t.Fatalf("import of the good dump: %v %s", err, out)
		}
		for _, tt := range tests {
			for _, args := range [][]string{nil, {"-replace"}} {
				if out, err := imp(head+tt.entry+"\n]}\n", args...); err == nil || !strings.Contains(out, tt.want) {
					t.Errorf("%s %v: %v %s, want a failure naming %q", tt.name, args, err, out, tt.want)
				}
			}
		}
		check(t, servertest.Start(t, bin, apiEnv, "-data", data))
	})
}
