package main

import (
	"encoding/json"
	"strings"
	"testing"

	"visitors/internal/servertest"
)

// TestAPIBackupToken: on the real binary, the root token makes a backup
// token; it exports what the root token exports, and is refused the
// import (403) and every token call; revoked, it is refused the export.
func TestAPIBackupToken(t *testing.T) {
	p := servertest.Start(t, bin, apiEnv, "-data", t.TempDir())
	mustGet(t, p.URL("/counter/backed/up.svg"))
	mustGet(t, p.URL("/hi"))
	r := apiDo(t, p, "POST", "/api/v1/tokens", apiRoot, `{"name":"nightly backup","scope":"backup"}`)
	var nt struct{ ID, Token, Scope string }
	r.decode(t, &nt)
	if r.code != 201 || nt.Scope != "backup" || !strings.HasPrefix(nt.Token, "vt_") {
		t.Fatalf("POST /api/v1/tokens with scope backup = %d %s", r.code, r.body)
	}
	dump := apiDo(t, p, "GET", "/api/v1/export", nt.Token, "")
	if dump.code != 200 || !json.Valid([]byte(dump.body)) || !strings.Contains(dump.body, `"backed/up"`) {
		t.Fatalf("GET /api/v1/export with the backup token = %d %.300s", dump.code, dump.body)
	}
	if root := apiDo(t, p, "GET", "/api/v1/export", apiRoot, ""); root.body != dump.body {
		t.Errorf("the backup token's export differs from the root's:\n%s\n%s", dump.body, root.body)
	}
	for _, c := range []struct{ method, path, body string }{
		{"POST", "/api/v1/import?replace=true", dump.body},
		{"POST", "/api/v1/import", dump.body},
		{"GET", "/api/v1/tokens", ""},
		{"DELETE", "/api/v1/tokens/" + nt.ID, ""},
		{"PUT", "/api/v1/counters/backed/up", `{"total":0}`},
	} {
		if r := apiDo(t, p, c.method, c.path, nt.Token, c.body); r.code != 403 || !strings.Contains(r.body, "a backup token may only export") {
			t.Errorf("%s %s with the backup token = %d %s, want 403", c.method, c.path, r.code, r.body)
		}
	}
	if r := apiDo(t, p, "DELETE", "/api/v1/tokens/"+nt.ID, apiRoot, ""); r.code != 200 {
		t.Fatalf("the root revokes the backup token: %d %s", r.code, r.body)
	}
	if r := apiDo(t, p, "GET", "/api/v1/export", nt.Token, ""); r.code != 401 {
		t.Errorf("GET /api/v1/export with the revoked backup token = %d %s, want 401", r.code, r.body)
	}
}
