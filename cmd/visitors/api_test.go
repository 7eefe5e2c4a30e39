package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"visitors/internal/servertest"
	"visitors/internal/store/dump"
	"visitors/internal/store/storetest"
	"visitors/internal/webtest"
)

// The owner API on the real binary (issue 11's proof). The memory-store
// variants run on every branch; the embedded-store ones need
// boltstore's Set, Lock, Delete, List, tokens and Backup.

// apiRoot is the root token of these tests.
const apiRoot = "e2e-root-token-0123456789abcdef"

// apiEnv is rulesOff with the root token in the environment.
var apiEnv = append(append([]string{}, rulesOff...), "VISITORS_ADMIN_TOKEN="+apiRoot)

// apiResp is one answer of the API.
type apiResp struct {
	code int
	hdr  http.Header
	body string
}

// decode unmarshals the answer's body into v.
func (r apiResp) decode(tb testing.TB, v any) {
	tb.Helper()
	if err := json.Unmarshal([]byte(r.body), v); err != nil {
		tb.Fatalf("answer %d %q: %v", r.code, r.body, err)
	}
}

// apiDo sends method path to p as token ("" for none), with body as
// JSON if not empty.
func apiDo(tb testing.TB, p *servertest.Proc, method, path, token, body string) apiResp {
	tb.Helper()
	return send(tb, webtest.NewAPIRequest(tb, method, p.URL(path), token, body), path)
}

// send sends req, the request for path, and returns the answer, all of
// its body read.
func send(tb testing.TB, req *http.Request, path string) apiResp {
	tb.Helper()
	resp, err := webtest.Client.Do(req)
	if err != nil {
		tb.Fatalf("%s %s: %v", req.Method, path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		tb.Fatalf("%s %s: read: %v", req.Method, path, err)
	}
	return apiResp{resp.StatusCode, resp.Header, string(b)}
}

// apiCounter is a counter as the API answers it.
type apiCounter struct {
	Key         string  `json:"key"`
	Total       uint64  `json:"total"`
	Today       uint64  `json:"today"`
	Locked      bool    `json:"locked"`
	UniqueToday *uint64 `json:"unique_today"`
	Deleted     bool    `json:"deleted"`
}

// counterPath is the API path of key: in the path, percent-encoded, or
// ?key= for the empty key.
func counterPath(key string) string {
	if key == "" {
		return "/api/v1/counters/?key="
	}
	var b strings.Builder
	b.WriteString("/api/v1/counters/")
	for i := 0; i < len(key); i++ {
		c := key[i]
		if 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || strings.IndexByte("-_~/", c) >= 0 {
			b.WriteByte(c)
		} else {
			fmt.Fprintf(&b, "%%%02X", c) // '.' too, so that no client or proxy folds . and .. segments
		}
	}
	return b.String()
}

// mustCounter reads key through the API as token.
func mustCounter(tb testing.TB, p *servertest.Proc, token, key string) apiCounter {
	tb.Helper()
	r := apiDo(tb, p, "GET", counterPath(key), token, "")
	if r.code != 200 {
		tb.Fatalf("GET %q = %d %s", key, r.code, r.body)
	}
	var c apiCounter
	r.decode(tb, &c)
	return c
}

// mustToken makes a token for prefix as root and returns its id and
// secret.
func mustToken(tb testing.TB, p *servertest.Proc, name, prefix string) (id, secret string) {
	tb.Helper()
	r := apiDo(tb, p, "POST", "/api/v1/tokens", apiRoot, fmt.Sprintf(`{"name":%q,"prefix":%q}`, name, prefix))
	var nt struct{ ID, Token, Name, Prefix string }
	r.decode(tb, &nt)
	if r.code != 201 || nt.ID == "" || !strings.HasPrefix(nt.Token, "vt_") || nt.Name != name || nt.Prefix != prefix {
		tb.Fatalf("POST /api/v1/tokens = %d %s", r.code, r.body)
	}
	return nt.ID, nt.Token
}

// listAll pages through every counter as token, 1000 at a time.
func listAll(tb testing.TB, p *servertest.Proc, token string) []apiCounter {
	tb.Helper()
	var all []apiCounter
	q := "/api/v1/counters?limit=1000"
	for {
		r := apiDo(tb, p, "GET", q, token, "")
		var page struct {
			Counters []apiCounter
			Next     *string
		}
		r.decode(tb, &page)
		if r.code != 200 {
			tb.Fatalf("GET %s = %d %s", q, r.code, r.body)
		}
		all = append(all, page.Counters...)
		if page.Next == nil {
			return all
		}
		q = "/api/v1/counters?limit=1000&after=" + url.QueryEscape(*page.Next)
	}
}

// TestAPIOwnerStory is the owner's story on the real binary, on each
// store: the root token makes a scoped token; it sets, reads, locks,
// lists and deletes inside its prefix and gets 403 outside it; a locked
// key counts nothing; a deleted key frees its place under -max-keys; a
// revoked token gets 401 at once; failed attempts end in 429; and no
// secret shows in the log, /debug/vars or /debug/pprof/cmdline.
func TestAPIOwnerStory(t *testing.T) {
	t.Run("memory", func(t *testing.T) { ownerStory(t, apiEnv, "-store", "memory") })
	t.Run("embedded", func(t *testing.T) {
		// The root token from a file, as a service manager's credential.
		file := filepath.Join(t.TempDir(), "root-token")
		if err := os.WriteFile(file, []byte(apiRoot+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		ownerStory(t, rulesOff, "-data", t.TempDir(), "-admin-token-file", file)
	})
}

func ownerStory(t *testing.T, env []string, args ...string) {
	p := servertest.Start(t, bin, env, append(args, "-max-keys", "3")...)
	id, tok := mustToken(t, p, "ci", "octocat/")

	if r := apiDo(t, p, "PUT", counterPath("octocat/a"), tok, `{"total":100}`); r.code != 200 || !strings.Contains(r.body, `"total": 100`) {
		t.Fatalf("PUT octocat/a = %d %s", r.code, r.body)
	}
	if c := mustCounter(t, p, tok, "octocat/a"); c.Total != 100 || c.Today != 0 || c.Locked || c.UniqueToday == nil {
		t.Errorf("GET octocat/a = %+v, want total 100, today 0, unlocked, with unique_today", c)
	}
	if _, _, body := mustGet(t, p.URL("/counter/octocat/a.json")); !strings.Contains(body, `"total":101`) {
		t.Errorf("a visit after the start value = %s, want total 101", body)
	}
	// Locked: answered with the count, not counted.
	if r := apiDo(t, p, "PUT", counterPath("octocat/a"), tok, `{"locked":true}`); r.code != 200 || !strings.Contains(r.body, `"locked": true`) {
		t.Fatalf("lock = %d %s", r.code, r.body)
	}
	for _, u := range []string{"/counter/octocat/a.svg", "/counter/octocat/a.json", "/hello?name=octocat/a"} {
		code, hdr, body := mustGet(t, p.URL(u))
		if code != 200 || hdr.Get("Visitors-Counted") != "false" || !strings.Contains(body, "101") {
			t.Errorf("GET %s on a locked key = %d, Visitors-Counted %q, %.200s; want 200, false, the count 101", u, code, hdr.Get("Visitors-Counted"), body)
		}
	}
	if c := mustCounter(t, p, tok, "octocat/a"); c.Total != 101 || !c.Locked {
		t.Errorf("after visits to a locked key: %+v, want total 101, locked", c)
	}
	if v, _ := sample(mustScrape(t, p), "visitors_visits_not_counted_total", "reason", "locked"); v != 3 {
		t.Errorf("visits not counted for locked = %v, want 3", v)
	}
	// Listing, in pages.
	if r := apiDo(t, p, "PUT", counterPath("octocat/b"), tok, `{"total":5}`); r.code != 200 {
		t.Fatalf("PUT octocat/b = %d %s", r.code, r.body)
	}
	r := apiDo(t, p, "GET", "/api/v1/counters?limit=1", tok, "")
	if r.code != 200 || !strings.Contains(r.body, `"key": "octocat/a"`) || !strings.Contains(r.body, `"next": "octocat/a"`) {
		t.Errorf("first page = %d %s", r.code, r.body)
	}
	r = apiDo(t, p, "GET", "/api/v1/counters?limit=1&after=octocat%2Fa", tok, "")
	if r.code != 200 || !strings.Contains(r.body, `"key": "octocat/b"`) || !strings.Contains(r.body, `"next": null`) {
		t.Errorf("second page = %d %s", r.code, r.body)
	}
	// Outside the prefix: 403, nothing changed.
	for _, c := range []struct{ method, path, body string }{
		{"PUT", counterPath("torvalds/linux"), `{"total":1}`},
		{"GET", counterPath("octocat"), ""},
		{"DELETE", counterPath("other"), ""},
		{"GET", "/api/v1/counters?prefix=torvalds/", ""},
		{"GET", "/api/v1/tokens", ""},
		{"GET", "/api/v1/export", ""},
	} {
		if r := apiDo(t, p, c.method, c.path, tok, c.body); r.code != 403 || !strings.Contains(r.body, `"error"`) {
			t.Errorf("%s %s as the scoped token = %d %s, want 403", c.method, c.path, r.code, r.body)
		}
	}
	if c := mustCounter(t, p, apiRoot, "torvalds/linux"); c.Total != 0 {
		t.Errorf("torvalds/linux = %+v after a refused PUT", c)
	}
	// -max-keys 3: a third key fills the store; a delete frees a place.
	if code, _, _ := mustGet(t, p.URL("/counter/third.svg")); code != 200 {
		t.Fatalf("a third key = %d", code)
	}
	if code, _, _ := mustGet(t, p.URL("/counter/fourth.json")); code != 503 {
		t.Fatalf("a fourth key past -max-keys 3 = %d, want 503", code)
	}
	if r := apiDo(t, p, "PUT", counterPath("octocat/c"), tok, `{"total":1}`); r.code != 409 || !strings.Contains(r.body, "-max-keys") {
		t.Errorf("a new key through the API past -max-keys = %d %s, want 409", r.code, r.body)
	}
	r = apiDo(t, p, "DELETE", counterPath("octocat/b"), tok, "")
	var del apiCounter
	r.decode(t, &del)
	if r.code != 200 || !del.Deleted || del.Total != 5 {
		t.Fatalf("DELETE octocat/b = %d %s", r.code, r.body)
	}
	if code, _, body := mustGet(t, p.URL("/counter/fourth.json")); code != 200 || !strings.Contains(body, `"total":1`) {
		t.Errorf("a fourth key after a delete = %d %s, want counted", code, body)
	}
	if r := apiDo(t, p, "DELETE", counterPath("octocat/b"), tok, ""); r.code != 404 {
		t.Errorf("DELETE again = %d %s, want 404", r.code, r.body)
	}
	// Revoked: 401 at once.
	if r := apiDo(t, p, "DELETE", "/api/v1/tokens/"+id, apiRoot, ""); r.code != 200 {
		t.Fatalf("revoke = %d %s", r.code, r.body)
	}
	r = apiDo(t, p, "GET", counterPath("octocat/a"), tok, "")
	if r.code != 401 || !strings.HasPrefix(r.hdr.Get("WWW-Authenticate"), "Bearer") {
		t.Errorf("the revoked token = %d %q %s, want 401 with WWW-Authenticate: Bearer", r.code, r.hdr.Get("WWW-Authenticate"), r.body)
	}
	// That was a failed attempt; four more, then 429 for this client,
	// whatever the token.
	for i := range 4 {
		if r := apiDo(t, p, "GET", "/api/v1/counters", "vt_guess", ""); r.code != 401 {
			t.Fatalf("failure %d = %d %s, want 401", i+2, r.code, r.body)
		}
	}
	for _, token := range []string{"vt_guess", apiRoot} {
		if r := apiDo(t, p, "GET", "/api/v1/counters", token, ""); r.code != 429 || r.hdr.Get("Retry-After") == "" {
			t.Errorf("after five failures = %d Retry-After %q %s, want 429 with Retry-After", r.code, r.hdr.Get("Retry-After"), r.body)
		}
	}
	// No secret anywhere an operator reads.
	_, _, vars := mustGet(t, p.AdminURL("/debug/vars"))
	_, _, cmdline := mustGet(t, p.AdminURL("/debug/pprof/cmdline"))
	if err := p.Stop(syscall.SIGTERM, 15*time.Second); err != nil {
		t.Fatal(err)
	}
	logs := p.Stdout() + p.Stderr()
	if !strings.Contains(logs, `"audit":"set"`) || !strings.Contains(logs, `"key":"octocat/a"`) {
		t.Errorf("no audit line of the set in the log:\n%s", logs)
	}
	for where, s := range map[string]string{"the log": logs, "/debug/vars": vars, "/debug/pprof/cmdline": cmdline} {
		for _, secret := range []string{apiRoot, tok, strings.TrimPrefix(tok, "vt_")} {
			if strings.Contains(s, secret) {
				t.Errorf("%s holds a secret", where)
			}
		}
	}
}

// TestAPIOnlyWithRootToken: without a root token /api/ is the plain 404
// of any unknown path; a short root token is refused at start.
func TestAPIOnlyWithRootToken(t *testing.T) {
	p := servertest.Start(t, bin, rulesOff, "-store", "memory")
	if r := apiDo(t, p, "GET", "/api/v1/counters", apiRoot, ""); r.code != 404 || r.body != "404 page not found" {
		t.Errorf("without a root token = %d %q, want the plain 404", r.code, r.body)
	}
	cmd := command(t, bin, "-store", "memory", "-admin-addr", "")
	cmd.Env = append(os.Environ(), "VISITORS_ADMIN_TOKEN=short\n")
	out, err := cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(out), "VISITORS_ADMIN_TOKEN: the root token is 5 bytes; want at least 16") {
		t.Errorf("a short root token: %v %s, want a refusal at start", err, out)
	}
}

// TestAPISetSurvivesKill: what the API changed — a start value, a
// delete, a lock, a token — survives SIGKILL in sync mode once
// answered, and in batch mode once a flush interval has passed.
func TestAPISetSurvivesKill(t *testing.T) {
	for _, durability := range []string{"sync", "batch"} {
		t.Run(durability, func(t *testing.T) {
			data := t.TempDir()
			args := []string{"-data", data, "-durability", durability}
			p := servertest.Start(t, bin, apiEnv, args...)
			for range 3 {
				mustGet(t, p.URL("/counter/gone.svg"))
				mustGet(t, p.URL("/counter/set.svg"))
			}
			_, tok := mustToken(t, p, "ci", "set")
			if r := apiDo(t, p, "PUT", counterPath("set"), tok, `{"total":1000}`); r.code != 200 {
				t.Fatalf("PUT set = %d %s", r.code, r.body)
			}
			if r := apiDo(t, p, "PUT", counterPath("frozen"), apiRoot, `{"total":7,"locked":true}`); r.code != 200 {
				t.Fatalf("PUT frozen = %d %s", r.code, r.body)
			}
			if r := apiDo(t, p, "DELETE", counterPath("gone"), apiRoot, ""); r.code != 200 {
				t.Fatalf("DELETE gone = %d %s", r.code, r.body)
			}
			if durability == "batch" {
				waitFlushed(t, p)
			}
			if err := p.Kill(); err != nil {
				t.Fatal(err)
			}
			p = servertest.Start(t, bin, apiEnv, args...)
			if c := mustCounter(t, p, tok, "set"); c.Total != 1000 || c.Today != 0 {
				t.Errorf("after SIGKILL, set = %+v, want total 1000, today 0 (the scoped token still valid)", c)
			}
			if c := mustCounter(t, p, apiRoot, "frozen"); c.Total != 7 || !c.Locked {
				t.Errorf("after SIGKILL, frozen = %+v, want total 7, locked", c)
			}
			if _, hdr, _ := mustGet(t, p.URL("/counter/frozen.svg")); hdr.Get("Visitors-Counted") != "false" {
				t.Errorf("after SIGKILL a visit to the locked key was counted")
			}
			var all []apiCounter
			for _, c := range listAll(t, p, apiRoot) {
				if c.Key != "flush-tick" {
					all = append(all, c)
				}
			}
			if len(all) != 2 || all[0].Key != "frozen" || all[1].Key != "set" {
				t.Errorf("after SIGKILL the counters are %+v, want frozen and set: the deleted key stays deleted", all)
			}
		})
	}
}

// waitFlushed waits until the embedded store has written two passes
// after now: the second began after the first ended, so whatever was
// answered before this call is on disk. A visit to another key gives
// each pass something to write.
func waitFlushed(t *testing.T, p *servertest.Proc) {
	t.Helper()
	passes := func() uint64 {
		_, _, body := mustGet(t, p.AdminURL("/debug/vars"))
		var v struct {
			Visitors struct{ Store struct{ Passes uint64 } }
		}
		if err := json.Unmarshal([]byte(body), &v); err != nil {
			t.Fatalf("/debug/vars: %v", err)
		}
		return v.Visitors.Store.Passes
	}
	start := passes()
	deadline := time.Now().Add(30 * time.Second)
	for passes() < start+2 {
		mustGet(t, p.URL("/counter/flush-tick.svg"))
		if time.Now().After(deadline) {
			t.Fatalf("the store wrote fewer than two passes in 30s")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// mustMakeKeys makes keys at 0 on p by an import, as /hello makes any
// name: the owner API makes only keys a badge can show, and changes any
// key that exists.
func mustMakeKeys(tb testing.TB, p *servertest.Proc, keys [][]byte) {
	tb.Helper()
	var b strings.Builder
	e := dump.NewEncoder(&b, 0)
	for _, k := range keys {
		// A Key always marshals, and a strings.Builder takes every write.
		_ = e.Encode(&dump.Key{Key: string(k)})
	}
	_ = e.Close()
	if r := apiDo(tb, p, "POST", "/api/v1/import", apiRoot, b.String()); r.code != 200 {
		tb.Fatalf("import of %d keys at 0: %d %s", len(keys), r.code, r.body)
	}
}

// TestAPIExportImportOnline: an export of one running instance, imported
// into another running one, gives identical counts (every hostile key,
// locks and today's counts included); a hostile import changes nothing;
// the export holds no secret.
func TestAPIExportImportOnline(t *testing.T) {
	a := servertest.Start(t, bin, apiEnv, "-data", t.TempDir())
	_, tok := mustToken(t, a, "ci", "c/")
	mustMakeKeys(t, a, storetest.HostileKeys())
	for i, k := range storetest.HostileKeys() {
		if r := apiDo(t, a, "PUT", counterPath(string(k)), apiRoot, fmt.Sprintf(`{"total":%d,"locked":%v}`, 1000+i, i%3 == 0)); r.code != 200 {
			t.Fatalf("PUT %q = %d %s", k, r.code, r.body)
		}
	}
	for range 3 {
		mustGet(t, a.URL("/counter/c/visited.svg"))
		mustGet(t, a.URL("/hi"))
	}
	dump := apiDo(t, a, "GET", "/api/v1/export", apiRoot, "")
	if dump.code != 200 || dump.hdr.Get("Content-Type") != "application/json" || !json.Valid([]byte(dump.body)) {
		t.Fatalf("GET /api/v1/export = %d %q %.300s", dump.code, dump.hdr.Get("Content-Type"), dump.body)
	}
	for _, secret := range []string{apiRoot, tok, strings.TrimPrefix(tok, "vt_")} {
		if strings.Contains(dump.body, secret) {
			t.Errorf("the export holds a secret")
		}
	}

	maxBytes := len(dump.body) + 64
	b := servertest.Start(t, bin, apiEnv, "-data", t.TempDir(), "-import-max-bytes", fmt.Sprint(maxBytes))
	mustGet(t, b.URL("/counter/only-in-b.svg"))
	if r := apiDo(t, b, "POST", "/api/v1/import?replace=true", apiRoot, dump.body); r.code != 200 {
		t.Fatalf("POST /api/v1/import = %d %s", r.code, r.body)
	}
	wantList, gotList := listAll(t, a, apiRoot), listAll(t, b, apiRoot)
	if w, g := fmt.Sprintf("%+v", wantList), fmt.Sprintf("%+v", gotList); w != g || len(wantList) != len(storetest.HostileKeys())+1 {
		t.Errorf("after the import the counters differ:\n a: %s\n b: %s", w, g)
	}
	if again := apiDo(t, b, "GET", "/api/v1/export", apiRoot, ""); again.body != dump.body {
		t.Errorf("b's export differs from a's:\n%s\n%s", dump.body, again.body)
	}
	if _, _, body := mustGet(t, b.URL("/hi")); !strings.Contains(body, "number 4!") {
		t.Errorf("/hi on b after the import = %q, want number 4", body)
	}

	// Hostile imports: each refused whole, nothing changed.
	before := fmt.Sprintf("%+v", listAll(t, b, apiRoot))
	long := strings.Repeat("k", 129)
	hostile := []struct {
		name, body string
		code       int
	}{
		{"not JSON", "this is not a dump", 400},
		{"another format", `{"format":"other","hits":0,"keys":[]}`, 400},
		{"a key of 129 bytes", `{"format":"visitors-export-1","hits":0,"keys":[{"key":"ok","total":1},{"key":"` + long + `","total":1}]}`, 400},
		{"a key not UTF-8", "{\"format\":\"visitors-export-1\",\"hits\":0,\"keys\":[{\"key\":\"ok\",\"total\":1},{\"key\":\"\xff\",\"total\":1}]}", 400},
		{"a total past 2^62", `{"format":"visitors-export-1","hits":0,"keys":[{"key":"ok","total":1},{"key":"big","total":4611686018427387905}]}`, 400},
		{"a bad date", `{"format":"visitors-export-1","hits":0,"keys":[{"key":"ok","total":1,"days":{"2026-13-01":1}}]}`, 400},
		{"a key's field given twice", `{"format":"visitors-export-1","hits":0,"keys":[{"key":"ok","key":"other","total":1}]}`, 400},
		{"a key given twice", `{"format":"visitors-export-1","hits":0,"keys":[{"key":"ok","total":5},{"key":"ok","total":7}]}`, 400},
		{"hits of 2^64-1", `{"format":"visitors-export-1","hits":18446744073709551615,"keys":[]}`, 400},
		{"cut short", dump.body[:len(dump.body)/2], 400},
		{"garbage after it", dump.body + "garbage", 400},
		{"over -import-max-bytes", dump.body + strings.Repeat(" ", 100), 413},
	}
	for _, h := range hostile {
		r := apiDo(t, b, "POST", "/api/v1/import?replace=true", apiRoot, h.body)
		if r.code != h.code || !strings.Contains(r.body, `"error"`) {
			t.Errorf("%s: %d %s, want %d with an error", h.name, r.code, r.body, h.code)
		}
		if after := fmt.Sprintf("%+v", listAll(t, b, apiRoot)); after != before {
			t.Errorf("%s changed the counters:\n%s\n%s", h.name, before, after)
		}
	}
	if r := apiDo(t, b, "POST", "/api/v1/import", tok, dump.body); r.code != 401 {
		t.Errorf("a token of another instance's store = %d, want 401", r.code)
	}
}
