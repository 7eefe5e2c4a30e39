package dashboard_test

import (
	"bytes"
	"io"
	"mime/multipart"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"visitors/internal/store"
	"visitors/internal/store/boltstore"
)

// embedded returns an embedded store, which exports and imports.
func embedded(t *testing.T) store.Store {
	t.Helper()
	st, err := boltstore.Open(boltstore.Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// importForm posts an import of dump in mode, with csrf, as a browser
// sends the form: csrf, mode, file.
func (b *browser) importForm(csrf, mode, dump string) answer {
	b.t.Helper()
	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	mw.WriteField("csrf", csrf)
	mw.WriteField("mode", mode)
	fw, _ := mw.CreateFormFile("file", "dump.json")
	io.WriteString(fw, dump)
	mw.Close()
	req, _ := http.NewRequest("POST", b.e.srv.URL+"/dashboard/import", &body)
	req.Header.Set("Content-Type", mw.FormDataContentType())
	resp, err := b.c.Do(req)
	if err != nil {
		b.t.Fatal(err)
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	return answer{resp.StatusCode, resp.Header, string(out)}
}

// TestTokensAndBackups: the root makes a token (shown once) and
// revokes it, makes a backup token that sees only the export, downloads
// an export and imports it back, merging and replacing.
func TestTokensAndBackups(t *testing.T) {
	e := newEnv(t, embedded(t))
	ctx := t.Context()
	if _, err := e.st.Set(ctx, []byte("a"), 10); err != nil {
		t.Fatal(err)
	}
	b := e.browser(t)
	b.signIn(root)
	if a := b.get("/dashboard/tokens"); a.code != 200 || !strings.Contains(a.body, "merge") || !strings.Contains(a.body, "replace") {
		t.Fatalf("tokens page = %d", a.code)
	}

	a := b.post("/dashboard/tokens", url.Values{"name": {"ci"}, "prefix": {"a"}})
	secret := between(a.body, `id="new-token" value="`, `"`)
	if a.code != 200 || !strings.HasPrefix(secret, "vt_") {
		t.Fatalf("make a token = %d, secret %q", a.code, secret)
	}
	if code, _ := e.apiCall(t, "GET", "/api/v1/counters/a", secret, ""); code != 200 {
		t.Errorf("the new token on its key = %d", code)
	}
	if a := b.get("/dashboard/tokens"); strings.Contains(a.body, secret) || !strings.Contains(a.body, "ci") {
		t.Errorf("the token list shows the secret again, or not the token")
	}
	id := strings.TrimPrefix(strings.SplitN(secret, ".", 2)[0], "vt_")
	if a := b.post("/dashboard/tokens/revoke", url.Values{"id": {id}}); a.code != 200 {
		t.Errorf("revoke = %d %s", a.code, a.body)
	}
	if code, _ := e.apiCall(t, "GET", "/api/v1/counters/a", secret, ""); code != 401 {
		t.Errorf("the revoked token = %d, want 401", code)
	}
	if a := b.post("/dashboard/tokens", url.Values{"name": {"bad"}, "prefix": {""}}); a.code != 400 {
		t.Errorf("a token with the empty prefix = %d, want 400", a.code)
	}

	// A backup token sees the export alone.
	a = b.post("/dashboard/tokens", url.Values{"name": {"nightly"}, "scope": {"backup"}})
	backup := between(a.body, `id="new-token" value="`, `"`)
	bk := e.browser(t)
	bk.signIn(backup)
	if a := bk.get("/dashboard"); !strings.Contains(a.body, `id="export"`) || strings.Contains(a.body, `id="counters"`) {
		t.Errorf("a backup token's overview: %s", a.body)
	}
	if a := bk.get(dashboardCounter("a")); a.code != 403 {
		t.Errorf("a backup token on a counter = %d, want 403", a.code)
	}
	a = bk.get("/dashboard/export")
	if a.code != 200 || !strings.Contains(a.h.Get("Content-Disposition"), "attachment") || !strings.Contains(a.body, `"key":"a"`) {
		t.Fatalf("export = %d %q %s", a.code, a.h.Get("Content-Disposition"), a.body)
	}
	dump := a.body

	// Merge adds the dump's counts; replace makes the store the dump.
	if a := b.importForm("", "merge", dump); a.code != 403 || mustGet(t, e.st, "a").Total != 10 {
		t.Errorf("import without csrf = %d", a.code)
	}
	if a := b.importForm(b.csrf, "merge", dump); a.code != 200 || mustGet(t, e.st, "a").Total != 20 {
		t.Errorf("merge = %d, total %d: %s", a.code, mustGet(t, e.st, "a").Total, a.body)
	}
	if _, err := e.st.Set(ctx, []byte("b"), 3); err != nil {
		t.Fatal(err)
	}
	if a := b.importForm(b.csrf, "replace", dump); a.code != 200 || mustGet(t, e.st, "a").Total != 10 || mustGet(t, e.st, "b").Total != 0 {
		t.Errorf("replace = %d, a %d, b %d", a.code, mustGet(t, e.st, "a").Total, mustGet(t, e.st, "b").Total)
	}
	if a := b.importForm(b.csrf, "merge", `{"format":"nope"}`); a.code != 400 || !strings.Contains(a.body, "refused") {
		t.Errorf("a bad dump = %d %s", a.code, a.body)
	}
	for _, what := range []string{`"audit":"create token"`, `"audit":"revoke token"`, `"audit":"export"`, `"audit":"import"`} {
		if !strings.Contains(e.log.String(), what) {
			t.Errorf("no audit line %s", what)
		}
	}
}

func dashboardCounter(key string) string { return "/dashboard/counter/" + url.PathEscape(key) }
