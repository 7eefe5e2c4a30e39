package api

import (
	"encoding/json"
	"strings"
	"testing"
)

// mustBackupToken makes a backup token through e with the root token
// and keeps its secret in e.tokens under name.
func (e *env) mustBackupToken(t *testing.T, name string) NewToken {
	t.Helper()
	w := e.do("POST", "/api/v1/tokens", "root", `{"name":"`+name+`","scope":"backup"}`)
	if w.Code != 201 {
		t.Fatalf("root makes a backup token: %d %s", w.Code, w.Body)
	}
	var nt NewToken
	if err := json.Unmarshal(w.Body.Bytes(), &nt); err != nil {
		t.Fatalf("the new token: %v in %s", err, w.Body)
	}
	if nt.Scope != "backup" || nt.Prefix != "" {
		t.Fatalf("the new token: scope %q prefix %q, want scope \"backup\" and no prefix", nt.Scope, nt.Prefix)
	}
	e.tokens[name] = nt.Token
	return nt
}

// TestBackupTokenOnlyExports calls every route with a backup token: it
// may export, and every other call is a 403 that changes nothing.
func TestBackupTokenOnlyExports(t *testing.T) {
	e := newEnv(t, 0, func(c *Config) {
		c.Store = &backupDouble{Store: c.Store}
		c.OpenCreate = true
	})
	if w := e.do("PUT", "/api/v1/counters/a", "root", `{"total":3}`); w.Code != 200 {
		t.Fatalf("setup: %d %s", w.Code, w.Body)
	}
	nt := e.mustBackupToken(t, "nightly")
	other := e.do("POST", "/api/v1/tokens", "root", `{"name":"ci","prefix":"a"}`)
	if other.Code != 201 {
		t.Fatalf("setup: %d %s", other.Code, other.Body)
	}
	var ci NewToken
	json.Unmarshal(other.Body.Bytes(), &ci)
	before := snapshot(t, e.st)
	tests := []struct {
		method, target, body string
		code                 int
		want                 string
	}{
		{"GET", "/api/v1/export", "", 200, "{"},
		{"POST", "/api/v1/import", "ok", 403, "a backup token may only export"},
		{"POST", "/api/v1/import?replace=true", "ok", 403, "a backup token may only export"},
		{"GET", "/api/v1/counters", "", 403, "a backup token may only export"},
		{"GET", "/api/v1/counters?prefix=a", "", 403, "a backup token may only export"},
		{"GET", "/api/v1/counters/a", "", 403, "a backup token may only export"},
		{"PUT", "/api/v1/counters/a", `{"total":1}`, 403, "a backup token may only export"},
		{"PUT", "/api/v1/counters/a", `{"locked":true}`, 403, "a backup token may only export"},
		{"DELETE", "/api/v1/counters/a", "", 403, "a backup token may only export"},
		{"POST", "/api/v1/counters/a/add", `{"n":1}`, 403, "a backup token may only export"},
		{"GET", "/api/v1/tokens", "", 403, "a backup token may only export"},
		{"POST", "/api/v1/tokens", `{"name":"x","prefix":"a"}`, 403, "a backup token may only export"},
		{"POST", "/api/v1/tokens", `{"name":"x","scope":"backup"}`, 403, "a backup token may only export"},
		{"DELETE", "/api/v1/tokens/" + ci.ID, "", 403, "a backup token may only export"},
		{"DELETE", "/api/v1/tokens/" + nt.ID, "", 403, "a backup token may only export"},
	}
	for _, tt := range tests {
		w := e.do(tt.method, tt.target, "nightly", tt.body)
		if w.Code != tt.code || !strings.Contains(w.Body.String(), tt.want) {
			t.Errorf("%s %s as a backup token = %d %s, want %d with %q", tt.method, tt.target, w.Code, w.Body, tt.code, tt.want)
		}
	}
	if got := snapshot(t, e.st); got != before {
		t.Errorf("the backup token's calls changed the store:\n%s\nwant\n%s", got, before)
	}
	// Root lists it with its scope and revokes it like any token.
	if w := e.do("GET", "/api/v1/tokens", "root", ""); !strings.Contains(w.Body.String(), `"scope": "backup"`) {
		t.Errorf("root lists the tokens = %s, want the backup token's scope", w.Body)
	}
	if w := e.do("DELETE", "/api/v1/tokens/"+nt.ID, "root", ""); w.Code != 200 {
		t.Errorf("root revokes the backup token = %d %s, want 200", w.Code, w.Body)
	}
	if w := e.do("GET", "/api/v1/export", "nightly", ""); w.Code != 401 {
		t.Errorf("export with the revoked backup token = %d %s, want 401", w.Code, w.Body)
	}
}

// TestBackupTokenRefusals makes tokens with a wrong scope.
func TestBackupTokenRefusals(t *testing.T) {
	e := newEnv(t, 0, nil)
	tests := []struct {
		name, body string
		want       string
	}{
		{"a prefix too", `{"name":"n","scope":"backup","prefix":"a"}`, `a backup token acts on no key; send no \"prefix\"`},
		{"an empty prefix too", `{"name":"n","scope":"backup","prefix":""}`, `a backup token acts on no key; send no \"prefix\"`},
		{"another scope", `{"name":"n","scope":"admin","prefix":"a"}`, `field \"scope\": want \"backup\", or no scope`},
		{"a scope not a string", `{"name":"n","scope":1}`, `field \"scope\": want \"backup\", or no scope`},
		{"no name", `{"scope":"backup"}`, `field \"name\"`},
		{"an unknown field", `{"name":"n","scope":"backup","keys":"all"}`, `unknown field \"keys\": want name, prefix, scope`},
	}
	for _, tt := range tests {
		before := snapshot(t, e.st)
		w := e.do("POST", "/api/v1/tokens", "root", tt.body)
		if w.Code != 400 || !strings.Contains(w.Body.String(), tt.want) {
			t.Errorf("%s: %d %s, want 400 with %s", tt.name, w.Code, w.Body, tt.want)
		}
		if got := snapshot(t, e.st); got != before {
			t.Errorf("%s: a refused token changed the store", tt.name)
		}
	}
}
