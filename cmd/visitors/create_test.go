package main

import (
	"fmt"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"visitors/internal/servertest"
	"visitors/internal/store/storetest"
)

// Self-service counters on the real binary (issue 15, part 4): open
// creation with -open-create, the exact token it answers, and add.

// openEnv is apiEnv with open creation on, through its variable.
var openEnv = append(append([]string{}, apiEnv...), "VISITORS_OPEN_CREATE=true")

// created is the answer to open creation.
type created struct {
	apiCounter
	Token struct {
		ID, Token, Name, Prefix string
		Exact                   bool
	}
}

// mustCreate creates key without a token and returns the answer.
func mustCreate(tb testing.TB, p *servertest.Proc, key string) created {
	tb.Helper()
	r := apiDo(tb, p, "POST", counterPath(key), "", "")
	var c created
	r.decode(tb, &c)
	if r.code != 201 || c.Key != key || c.Total != 0 || c.Token.Prefix != key || !c.Token.Exact || !strings.HasPrefix(c.Token.Token, "vt_"+c.Token.ID+".") {
		tb.Fatalf("create %q = %d %s", key, r.code, r.body)
	}
	return c
}

// mustAdd adds n to key as token and returns the counter.
func mustAdd(tb testing.TB, p *servertest.Proc, token, key string, n int64) apiCounter {
	tb.Helper()
	path := counterPath(key)
	if key == "" {
		path = "/api/v1/counters//add?key="
	} else {
		path += "/add"
	}
	r := apiDo(tb, p, "POST", path, token, fmt.Sprintf(`{"n":%d}`, n))
	if r.code != 200 {
		tb.Fatalf("add %d to %q = %d %s", n, key, r.code, r.body)
	}
	var c apiCounter
	r.decode(tb, &c)
	return c
}

// openKeys are the keys open creation takes: those /counter/{key} takes,
// the longest among them.
var openKeys = []string{"self/service", strings.Repeat("k", 128), "A-Z_a.z~0-9/x", "add"}

// TestOpenCreate is the self-service story on the real binary, on every
// store: a counter created without a token is 201 with a token for that
// key alone, shown once; creating it again is 409 and tells nothing; the
// token reads, adds (down to 0, never below), sets, locks and deletes
// that key and no other, and lists nothing; the counters and tokens come
// back after a restart (SIGKILL for the embedded store, once answered in
// sync mode, after a flush interval in batch mode); a deleted key
// created anew by someone else is not the first creator's.
func TestOpenCreate(t *testing.T) {
	tests := []struct {
		name    string
		args    func(t *testing.T) []string
		durable bool
		batch   bool
	}{
		{"memory", func(*testing.T) []string { return []string{"-store", "memory"} }, false, false},
		{"embedded-sync", embeddedStore("sync"), true, false},
		{"embedded-batch", embeddedStore("batch"), true, true},
		{"redis-batch", redisStore(false, "batch"), true, false},
		{"redis-sync", redisStore(false, "sync"), true, false},
		{"cluster-batch", redisStore(true, "batch"), true, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			args := tt.args(t)
			p := servertest.Start(t, bin, openEnv, args...)
			toks := map[string]string{}
			for _, k := range openKeys {
				toks[k] = mustCreate(t, p, k).Token.Token
			}
			key, tok := openKeys[0], toks[openKeys[0]]
			// Again, and on a key visits made: 409, one answer.
			mustGet(t, p.URL("/counter/visited.svg"))
			for _, k := range []string{key, "visited"} {
				if r := apiDo(t, p, "POST", counterPath(k), "", ""); r.code != 409 || strings.Contains(r.body, "vt_") {
					t.Errorf("create %q again = %d %s, want 409 without a token", k, r.code, r.body)
				}
			}
			// Keys /counter/ refuses, the empty one and odd UTF-8
			// among them: 400, nothing made.
			for _, k := range []string{"", "été", "a b", "a//b", strings.Repeat("k", 129)} {
				path := counterPath(k)
				if r := apiDo(t, p, "POST", path, "", ""); r.code != 400 {
					t.Errorf("create %q = %d %s, want 400", k, r.code, r.body)
				}
			}
			// Its token: its key, and no other.
			if c := mustAdd(t, p, tok, key, 5); c.Total != 5 || c.Today != 5 {
				t.Errorf("add 5 = %+v, want total and today 5", c)
			}
			mustGet(t, p.URL("/counter/"+key+".svg")) // a visit counts as ever
			if c := mustAdd(t, p, tok, key, -2); c.Total != 4 || c.Today != 4 {
				t.Errorf("add -2 = %+v, want total and today 4", c)
			}
			if c := mustAdd(t, p, tok, key, -1000); c.Total != 0 || c.Today != 0 {
				t.Errorf("add -1000 = %+v, want 0: never below", c)
			}
			if c := mustAdd(t, p, tok, key, 40); c.Total != 40 {
				t.Errorf("add 40 = %+v", c)
			}
			for _, c := range []struct{ method, path, body string }{
				{"GET", counterPath(key + "x"), ""},
				{"PUT", counterPath(key + "/x"), `{"total":1}`},
				{"POST", counterPath(openKeys[2]) + "/add", `{"n":1}`},
				{"DELETE", counterPath("visited"), ""},
				{"GET", "/api/v1/counters?prefix=" + key, ""},
				{"POST", "/api/v1/tokens", `{"name":"x","prefix":"self/"}`},
			} {
				if r := apiDo(t, p, c.method, c.path, tok, c.body); r.code != 403 {
					t.Errorf("%s %s as %q's token = %d %s, want 403", c.method, c.path, key, r.code, r.body)
				}
			}
			// Keys no badge can show: root makes none either, and adds
			// to them once they exist (as /hello or an import makes them).
			for _, path := range []string{"/api/v1/counters//add?key=", counterPath("été") + "/add"} {
				if r := apiDo(t, p, "POST", path, apiRoot, `{"n":3}`); r.code != 400 || !strings.Contains(r.body, "makes only keys a badge can show") {
					t.Errorf("root POST %s before the key exists = %d %s, want 400 naming the rule", path, r.code, r.body)
				}
			}
			for _, q := range []string{"", "?name=%C3%A9t%C3%A9"} {
				if code, _, body := mustGet(t, p.URL("/hello"+q)); code != 200 || !strings.Contains(body, "Count: 1<") {
					t.Fatalf("GET /hello%s = %d %q, want the first visit", q, code, body)
				}
			}
			for _, k := range []string{"", "été"} {
				if c := mustAdd(t, p, apiRoot, k, 2); c.Total != 3 {
					t.Errorf("root adds 3 to %q = %+v", k, c)
				}
			}
			for i, k := range openKeys[1:] {
				mustAdd(t, p, toks[k], k, int64(10+i))
			}
			if r := apiDo(t, p, "PUT", counterPath(openKeys[3]), toks[openKeys[3]], `{"locked":true}`); r.code != 200 {
				t.Fatalf("lock = %d %s", r.code, r.body)
			}
			if tt.durable {
				if tt.batch {
					waitFlushed(t, p)
				}
				if err := p.Kill(); err != nil {
					t.Fatal(err)
				}
				p = servertest.Start(t, bin, openEnv, args...)
			}
			if c := mustCounter(t, p, tok, key); c.Total != 40 || c.Today != 40 {
				t.Errorf("after a restart, %q = %+v, want total and today 40", key, c)
			}
			for i, k := range openKeys[1:] {
				c := mustCounter(t, p, toks[k], k)
				if c.Total != uint64(10+i) || c.Locked != (k == openKeys[3]) {
					t.Errorf("after a restart, %q = %+v, want total %d", k, c, 10+i)
				}
			}
			for _, k := range []string{"", "été"} {
				if c := mustCounter(t, p, apiRoot, k); c.Total != 3 {
					t.Errorf("after a restart, %q = %+v, want total 3", k, c)
				}
			}
			// Deleted, created anew by another: the first token is refused.
			if r := apiDo(t, p, "DELETE", counterPath(key), tok, ""); r.code != 200 {
				t.Fatalf("delete = %d %s", r.code, r.body)
			}
			other := mustCreate(t, p, key)
			for _, c := range []struct{ method, path, body string }{
				{"GET", counterPath(key), ""},
				{"POST", counterPath(key) + "/add", `{"n":1}`},
				{"DELETE", counterPath(key), ""},
			} {
				if r := apiDo(t, p, c.method, c.path, tok, c.body); r.code != 401 {
					t.Errorf("the first creator's token after the key was made anew: %s = %d %s, want 401", c.method, r.code, r.body)
				}
			}
			if c := mustAdd(t, p, other.Token.Token, key, 2); c.Total != 2 {
				t.Errorf("the new creator adds 2 = %+v", c)
			}
			if err := p.Stop(syscall.SIGTERM, 15*time.Second); err != nil {
				t.Fatal(err)
			}
			logs := p.Stdout() + p.Stderr()
			for _, want := range []string{`"audit":"create"`, `"audit":"add"`, `"n":2`} {
				if !strings.Contains(logs, want) {
					t.Errorf("the log lacks %s", want)
				}
			}
			for _, secret := range []string{tok, other.Token.Token} {
				if strings.Contains(logs, secret) {
					t.Errorf("the log holds a secret")
				}
			}
		})
	}
}

// TestOpenCreateLimits: one budget of new counters per client, badges
// and open creation alike (-client-new-keys, 429 with Retry-After);
// without -open-create, POST on a counter is the 405 it was; and
// -open-create without the owner API is refused at start.
func TestOpenCreateLimits(t *testing.T) {
	env := []string{"VISITORS_COUNT_BOTS=true", "VISITORS_CLIENT_RATE=0", "VISITORS_REPEAT_WINDOW=0", "VISITORS_ADMIN_TOKEN=" + apiRoot}
	p := servertest.Start(t, bin, env, "-store", "memory", "-open-create", "-client-new-keys", "2/h")
	mustCreate(t, p, "one")
	if code, _, _ := mustGet(t, p.URL("/counter/two.svg")); code != 200 {
		t.Fatalf("a badge's new key = %d", code)
	}
	r := apiDo(t, p, "POST", counterPath("three"), "", "")
	// The message quotes the budget as configured, and names its flag.
	const quoted = "at most 2/h (-client-new-keys)"
	if r.code != 429 || r.hdr.Get("Retry-After") == "" || !strings.Contains(r.body, quoted) {
		t.Errorf("a third new counter = %d Retry-After %q %s, want 429 quoting %q", r.code, r.hdr.Get("Retry-After"), r.body, quoted)
	}
	if code, _, body := mustGet(t, p.URL("/counter/four.json")); code != 429 || !strings.Contains(body, quoted) {
		t.Errorf("a badge's new key past the budget = %d %s, want 429 quoting %q", code, body, quoted)
	}
	if c := mustCounter(t, p, apiRoot, "three"); c.Total != 0 {
		t.Errorf("three = %+v after a refused creation", c)
	}

	off := servertest.Start(t, bin, apiEnv, "-store", "memory")
	if r := apiDo(t, off, "POST", counterPath("x"), "", ""); r.code != 405 || r.hdr.Get("Allow") != "GET, PUT, DELETE" {
		t.Errorf("POST without -open-create = %d Allow %q, want 405 GET, PUT, DELETE", r.code, r.hdr.Get("Allow"))
	}

	cmd := command(t, bin, "-store", "memory", "-admin-addr", "", "-open-create")
	cmd.Env = append(os.Environ(), "VISITORS_ADMIN_TOKEN=")
	out, err := cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(out), "-open-create needs the owner API") {
		t.Errorf("-open-create without a root token: %v %s, want a refusal at start", err, out)
	}
}

// TestOpenCreateHostileAdds: root adds to every hostile key through the
// real binary and the embedded store, and each is back after SIGKILL.
func TestOpenCreateHostileAdds(t *testing.T) {
	args := []string{"-data", t.TempDir(), "-durability", "sync"}
	p := servertest.Start(t, bin, openEnv, args...)
	keys := storetest.HostileKeys()
	mustMakeKeys(t, p, keys)
	for i, k := range keys {
		mustAdd(t, p, apiRoot, string(k), int64(100+i))
		mustAdd(t, p, apiRoot, string(k), -int64(i))
	}
	if err := p.Kill(); err != nil {
		t.Fatal(err)
	}
	p = servertest.Start(t, bin, openEnv, args...)
	for _, k := range keys {
		if c := mustCounter(t, p, apiRoot, string(k)); c.Total != 100 || c.Today != 100 {
			t.Errorf("after SIGKILL, %q = %+v, want total and today 100", k, c)
		}
	}
}

// TestOpenCreateImportReplace: an import that replaces deletes the keys
// its dump lacks, and revokes their open-creation tokens with them: the
// key can be created anew, and the old token is refused on it; a key
// the dump has keeps its token.
func TestOpenCreateImportReplace(t *testing.T) {
	a := servertest.Start(t, bin, openEnv, "-data", t.TempDir())
	mustCreate(t, a, "keep")
	dump := apiDo(t, a, "GET", "/api/v1/export", apiRoot, "")
	if dump.code != 200 {
		t.Fatalf("export = %d %s", dump.code, dump.body)
	}
	b := servertest.Start(t, bin, openEnv, "-data", t.TempDir())
	keep, gone := mustCreate(t, b, "keep"), mustCreate(t, b, "gone")
	if r := apiDo(t, b, "POST", "/api/v1/import?replace=true", apiRoot, dump.body); r.code != 200 {
		t.Fatalf("import = %d %s", r.code, r.body)
	}
	if c := mustCounter(t, b, keep.Token.Token, "keep"); c.Total != 0 {
		t.Errorf("keep after the import = %+v", c)
	}
	if r := apiDo(t, b, "GET", counterPath("gone"), gone.Token.Token, ""); r.code != 401 {
		t.Errorf("the token of a key the import deleted = %d %s, want 401", r.code, r.body)
	}
	again := mustCreate(t, b, "gone")
	if r := apiDo(t, b, "GET", counterPath("gone"), gone.Token.Token, ""); r.code != 401 {
		t.Errorf("the old token on the key made anew = %d %s, want 401", r.code, r.body)
	}
	mustAdd(t, b, again.Token.Token, "gone", 1)
}

// TestOpenCreateRacesFirstVisit: open creation is create-if-absent
// (issue 23, item 7). Round after round, a key's first visit races its
// creation on the real binary, on every store: the creation either
// answers 201 for a counter that held no visit (total 0: the visit
// counts after it), or 409. Either way the visit is counted once. On
// main the check, the token and the creation were three steps: the
// creation answered 201 with a token for a counter that already held
// the visit (77 of 300 rounds on the embedded store).
func TestOpenCreateRacesFirstVisit(t *testing.T) {
	tests := []struct {
		name string
		args func(t *testing.T) []string
	}{
		{"memory", func(*testing.T) []string { return []string{"-store", "memory"} }},
		{"embedded-batch", embeddedStore("batch")},
		{"embedded-sync", embeddedStore("sync")},
		{"redis-batch", redisStore(false, "batch")},
		{"redis-sync", redisStore(false, "sync")},
		{"cluster-batch", redisStore(true, "batch")},
	}
	const rounds = 150
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := servertest.Start(t, bin, openEnv, tt.args(t)...)
			made, held := 0, 0
			for i := range rounds {
				key := fmt.Sprintf("race/%d", i)
				var visit apiResp
				var wg sync.WaitGroup
				wg.Go(func() { visit = apiDo(t, p, "GET", "/counter/"+key+".json", "", "") })
				create := apiDo(t, p, "POST", counterPath(key), "", "")
				wg.Wait()
				if visit.code != 200 {
					t.Fatalf("round %d: the visit = %d %s", i, visit.code, visit.body)
				}
				switch create.code {
				case 201:
					made++
					var c created
					create.decode(t, &c)
					if c.Total != 0 {
						held++
						t.Errorf("round %d: create = 201 for a counter that held %d visits", i, c.Total)
					}
				case 409:
				default:
					t.Fatalf("round %d: create = %d %s, want 201 or 409", i, create.code, create.body)
				}
				if c := mustCounter(t, p, apiRoot, key); c.Total != 1 {
					t.Errorf("round %d: %s = %+v, want the visit counted once", i, key, c)
				}
			}
			t.Logf("%d rounds: %d created (%d of them holding a visit), %d refused", rounds, made, held, rounds-made)
		})
	}
}

// embeddedStore and redisStore are the flags of a store a test of every
// backend starts the binary on: the embedded one in a directory of the
// test's, or Redis (standalone or cluster) under a prefix of its own.
func embeddedStore(durability string) func(t *testing.T) []string {
	return func(t *testing.T) []string { return []string{"-data", t.TempDir(), "-durability", durability} }
}

func redisStore(cluster bool, durability string) func(t *testing.T) []string {
	return func(t *testing.T) []string { return append(redisArgs(t, cluster), "-durability", durability) }
}

// TestAddSurvivesSIGKILL: an add is an owner operation, written
// and synced before it answers in both modes: SIGKILL right after the
// answers, without waiting for a flush, loses none of them, and the
// batch visits counted before an add are written with it; a negative
// add is not undone by the records of the visits before it.
// Found by review (was TestReviewAddSurvivesSIGKILL).
func TestAddSurvivesSIGKILL(t *testing.T) {
	for _, durability := range []string{"sync", "batch"} {
		t.Run(durability, func(t *testing.T) {
			args := []string{"-data", t.TempDir(), "-durability", durability, "-flush-interval", "1h"}
			p := servertest.Start(t, bin, openEnv, args...)
			up, down := mustCreate(t, p, "up"), mustCreate(t, p, "down")
			for range 3 {
				mustGet(t, p.URL("/counter/up.svg"))
				mustGet(t, p.URL("/counter/down.svg"))
			}
			if c := mustAdd(t, p, up.Token.Token, "up", 1<<39-3); c.Total != 1<<39 || c.Today != 1<<39 {
				t.Fatalf("add 2^39-3 after 3 visits = %+v", c)
			}
			if c := mustAdd(t, p, down.Token.Token, "down", -2); c.Total != 1 || c.Today != 1 {
				t.Fatalf("add -2 after 3 visits = %+v", c)
			}
			if err := p.Kill(); err != nil {
				t.Fatal(err)
			}
			p = servertest.Start(t, bin, openEnv, args...)
			for k, tok := range map[string]string{"up": up.Token.Token, "down": down.Token.Token} {
				want := map[string]uint64{"up": 1 << 39, "down": 1}[k]
				if c := mustCounter(t, p, tok, k); c.Total != want || c.Today != want {
					t.Errorf("after SIGKILL, %s = %+v, want total and today %d", k, c, want)
				}
			}
		})
	}
}
