package app

import (
	"bytes"
	"crypto/rand"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"visitors/internal/servertest"
)

// TestFirstTokenIsWrittenOnce: a fresh start of the embedded store
// without a root token writes one, 0600, to -data's root-token and
// names the file in the log, never the token; the dashboard takes it;
// the next start reads it and says nothing.
func TestFirstTokenIsWrittenOnce(t *testing.T) {
	data := t.TempDir()
	cfg := testConfig()
	cfg.Store, cfg.Data = StoreEmbedded, data
	var out servertest.Buffer
	r := mustStart(t, cfg, DefaultTimeouts, &out)
	path := filepath.Join(data, RootTokenFile)
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatalf("no %s after a fresh start: %v", path, err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("%s has mode %v, want 0600", path, fi.Mode().Perm())
	}
	b, _ := os.ReadFile(path)
	secret := strings.TrimSpace(string(b))
	if len(secret) != 64 {
		t.Fatalf("the root token is %d bytes, want 64 hex digits", len(secret))
	}
	jar, _ := cookiejar.New(nil)
	resp, err := (&http.Client{Jar: jar}).PostForm("http://"+r.addr+"/dashboard/login", url.Values{"token": {secret}})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.Request.URL.Path != "/dashboard" || resp.StatusCode != 200 {
		t.Errorf("sign-in with the written token ended at %s %d, want /dashboard 200", resp.Request.URL.Path, resp.StatusCode)
	}
	if err := r.stop(); err != nil {
		t.Fatal(err)
	}
	log := out.String()
	if !strings.Contains(log, path) || strings.Count(log, "root_token_file") != 1 {
		t.Errorf("the log does not name %s once: %s", path, log)
	}
	if strings.Contains(log, secret) {
		t.Errorf("the log holds the root token")
	}

	var again servertest.Buffer
	r = mustStart(t, cfg, DefaultTimeouts, &again)
	if err := r.stop(); err != nil {
		t.Fatal(err)
	}
	if b2, _ := os.ReadFile(path); !bytes.Equal(b, b2) {
		t.Errorf("a second start changed the root token")
	}
	if strings.Contains(again.String(), "root_token_file") {
		t.Errorf("a second start named the file again: %s", again.String())
	}
}

// TestRootTokenFileRefusesABadOne: a root-token file that holds no
// valid root token stops the start, naming the file.
func TestRootTokenFileRefusesABadOne(t *testing.T) {
	path := filepath.Join(t.TempDir(), RootTokenFile)
	if err := os.WriteFile(path, []byte("short\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, _, err := rootTokenFile(path, rand.Reader); err == nil || !strings.Contains(err.Error(), path) {
		t.Errorf("rootTokenFile(short) = %v, want an error naming %s", err, path)
	}
}

// TestTokenCommand: "visitors token" makes a token the dashboard takes,
// scoped to its prefix, and refuses an empty prefix.
func TestTokenCommand(t *testing.T) {
	data := t.TempDir()
	getenv := func(string) string { return "" }
	var out bytes.Buffer
	if err := Main(t.Context(), []string{"token", "-data", data, "-name", "ci", "-prefix", "octo/"}, getenv, nil, &out); err != nil {
		t.Fatalf("token: %v", err)
	}
	secret, _, _ := strings.Cut(out.String(), "\n")
	if !strings.HasPrefix(secret, "vt_") || !strings.Contains(out.String(), `prefix "octo/"`) {
		t.Fatalf("token printed %q", out.String())
	}
	if err := Main(t.Context(), []string{"token", "-data", data, "-name", "ci"}, getenv, nil, io.Discard); err == nil || !strings.Contains(err.Error(), "prefix") {
		t.Errorf("token without a prefix = %v, want a refusal naming the prefix", err)
	}

	cfg := testConfig()
	cfg.Store, cfg.Data = StoreEmbedded, data
	r := mustStart(t, cfg, DefaultTimeouts, io.Discard)
	if err := Main(t.Context(), []string{"token", "-data", data, "-name", "ci", "-prefix", "x"}, getenv, nil, io.Discard); err == nil || !strings.Contains(err.Error(), "stop it first") {
		t.Errorf("token while the service holds the store = %v, want a refusal that says to stop it", err)
	}
	jarless := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := jarless.PostForm("http://"+r.addr+"/dashboard/login", url.Values{"token": {secret}})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusSeeOther {
		t.Errorf("sign-in with the command's token = %d, want 303", resp.StatusCode)
	}
	req, _ := http.NewRequest("PUT", "http://"+r.addr+"/api/v1/counters/other", strings.NewReader(`{"total":1}`))
	req.Header.Set("Authorization", "Bearer "+secret)
	req.Header.Set("Content-Type", "application/json")
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != 403 {
		t.Errorf("the command's token outside its prefix = %v %v, want 403", resp.StatusCode, err)
	}
}
