package api

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"visitors/internal/client"
	"visitors/internal/store"
)

// TestCheckRoot: a root token is at least MinRootBytes bytes of
// printable ASCII without spaces, '!' to '~' both included; the refusal
// names the first bad byte and where it is.
func TestCheckRoot(t *testing.T) {
	ok := strings.Repeat("a", MinRootBytes)
	tests := []struct {
		name, secret string
		want         string // "" for accepted
	}{
		{"empty", "", "empty"},
		{"one byte short", ok[1:], "is 15 bytes; want at least 16"},
		{"the shortest", ok, ""},
		{"long", strings.Repeat("x", 100), ""},
		{"'!' and '~', the ends of the range", "!" + ok + "~", ""},
		{"a space", ok + " ", "byte 0x20 at 16"},
		{"a tab first", "\t" + ok, "byte 0x9 at 0"},
		{"DEL", ok + "\x7f", "byte 0x7f at 16"},
		{"UTF-8", ok + "é", "byte 0xc3 at 16"},
		{"a control character", "ab\x00" + ok, "byte 0x0 at 2"},
	}
	for _, tt := range tests {
		err := CheckRoot(tt.secret)
		switch {
		case tt.want == "" && err != nil:
			t.Errorf("%s: CheckRoot(%q) = %v, want it accepted", tt.name, tt.secret, err)
		case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
			t.Errorf("%s: CheckRoot(%q) = %v, want an error with %q", tt.name, tt.secret, err, tt.want)
		}
	}
}

// TestImportMaxBytesDefault: an ImportMaxBytes of 0 or less means
// DefaultImportMaxBytes, not a limit of nothing: a small dump is taken
// and a refusal names the default.
func TestImportMaxBytesDefault(t *testing.T) {
	for _, max := range []int64{0, -1} {
		e := newEnv(t, 0, func(c *Config) {
			c.Store, c.ImportMaxBytes = &backupDouble{Store: c.Store}, max
		})
		if w := e.do("POST", "/api/v1/import", "root", "ok"); w.Code != 200 {
			t.Errorf("ImportMaxBytes %d: an import of 2 bytes = %d %s, want 200", max, w.Code, w.Body)
		}
		if got := e.h.c.ImportMaxBytes; got != DefaultImportMaxBytes {
			t.Errorf("ImportMaxBytes %d: the handler's limit is %d, want %d", max, got, DefaultImportMaxBytes)
		}
	}
}

// TestFailuresConfigured: a Failures rate other than the zero one is
// the client's budget of failed attempts, not DefaultFailures'.
func TestFailuresConfigured(t *testing.T) {
	e := newEnv(t, 0, func(c *Config) { c.Failures = client.Rate{Events: 2, Per: time.Minute} })
	for i := range 2 {
		if w := e.do("GET", "/api/v1/counters", "wrong", ""); w.Code != 401 {
			t.Fatalf("failure %d of 2: %d, want 401", i+1, w.Code)
		}
	}
	if w := e.do("GET", "/api/v1/counters", "root", ""); w.Code != 429 || w.Header().Get("Retry-After") != "30" {
		t.Errorf("past 2 failures with a budget of 2 a minute: %d Retry-After %q, want 429, 30", w.Code, w.Header().Get("Retry-After"))
	}
}

// failingStore is the memory store whose Get fails with err: it proves
// how the handler answers a store's failure.
type failingStore struct {
	Store
	err error
}

func (f failingStore) Get(context.Context, []byte) (store.Counts, error) {
	return store.Counts{}, f.err
}

// TestStoreFailure: a store that fails is a 503 that does not show the
// cause, which goes to the log with the call; a request canceled by its
// client is a 499, not a failure of the store.
func TestStoreFailure(t *testing.T) {
	tests := []struct {
		name, cause string
		err         error
		code        int
		msg         string
	}{
		{"failed", "disk on fire", errors.New("disk on fire"), 503, "the counter store is unavailable; try again"},
		{"canceled", "context canceled", fmt.Errorf("get: %w", context.Canceled), 499, "request canceled"},
	}
	for _, tt := range tests {
		e := newEnv(t, 0, func(c *Config) { c.Store = failingStore{c.Store, tt.err} })
		w := e.do("GET", "/api/v1/counters/a", "root", "")
		var v struct{ Error string }
		if err := json.Unmarshal(w.Body.Bytes(), &v); err != nil || w.Code != tt.code || v.Error != tt.msg {
			t.Errorf("%s: %d %s, want %d {\"error\":%q}", tt.name, w.Code, w.Body, tt.code, tt.msg)
		}
		if strings.Contains(w.Body.String(), tt.cause) && tt.code == 503 {
			t.Errorf("%s: the answer shows the cause: %s", tt.name, w.Body)
		}
		var line struct{ Level, Error, Method, Path, Message string }
		json.Unmarshal([]byte(e.log.String()), &line)
		if tt.code == 503 {
			want := "503 the counter store is unavailable; try again: get: disk on fire"
			if line.Level != "error" || line.Error != want || line.Method != "GET" || line.Path != "/api/v1/counters/a" {
				t.Errorf("%s: the log holds %q, want an error line with %q, the method and the path", tt.name, e.log, want)
			}
		}
	}
}

// TestQuoteInRefusal: a prefix named in a 403 is quoted as JSON would:
// a quote, a backslash and a control character escaped, a space and
// other text as they are.
func TestQuoteInRefusal(t *testing.T) {
	tests := []struct{ in, want string }{
		{"a/", `"a/"`},
		{`q"b\`, `"q\"b\\"`},
		{"a b~é", `"a b~é"`},
		{"t\tn\n\x1f", `"t\u0009n\u000a\u001f"`},
	}
	for _, tt := range tests {
		if got := quote(tt.in); got != tt.want {
			t.Errorf("quote(%q) = %s, want %s", tt.in, got, tt.want)
		}
	}
	e := newEnv(t, 0, nil)
	e.st.PutToken(context.Background(), store.Token{ID: "q", Name: "q", Prefix: "a \"", Hash: sha256.Sum256([]byte("q-secret"))})
	w := e.do("GET", "/api/v1/counters/b", "q-secret", "")
	var v struct{ Error string }
	if err := json.Unmarshal(w.Body.Bytes(), &v); err != nil || w.Code != 403 || v.Error != `the key is outside this token's prefix "a \""` {
		t.Errorf("a key outside the prefix a \": %d %s", w.Code, w.Body)
	}
}

// TestLimits: each bound is inclusive: a total of exactly MaxTotal, a
// page of exactly MaxLimit, a token name of exactly MaxNameBytes, the
// MaxTokens-th token and an import of exactly ImportMaxBytes are taken;
// one more is refused.
func TestLimits(t *testing.T) {
	e := newEnv(t, 0, nil)
	max := fmt.Sprint(uint64(MaxTotal))
	if w := e.do("PUT", "/api/v1/counters/a", "root", `{"total":`+max+`}`); w.Code != 200 || !strings.Contains(w.Body.String(), `"total": `+max) {
		t.Errorf("a total of MaxTotal: %d %s, want 200", w.Code, w.Body)
	}
	if w := e.do("GET", fmt.Sprintf("/api/v1/counters?limit=%d", MaxLimit), "root", ""); w.Code != 200 {
		t.Errorf("limit=%d: %d %s, want 200", MaxLimit, w.Code, w.Body)
	}
	name := strings.Repeat("n", MaxNameBytes)
	if w := e.do("POST", "/api/v1/tokens", "root", `{"name":"`+name+`","prefix":"a"}`); w.Code != 201 {
		t.Errorf("a name of %d bytes: %d %s, want 201", MaxNameBytes, w.Code, w.Body)
	}
	ctx := context.Background()
	for i := 1; i < MaxTokens-1; i++ { // one made above, one more below
		e.st.PutToken(ctx, store.Token{ID: fmt.Sprintf("t%04d", i), Name: "n", Prefix: "a"})
	}
	if w := e.do("POST", "/api/v1/tokens", "root", `{"name":"last","prefix":"a"}`); w.Code != 201 {
		t.Errorf("the %dth token: %d %s, want 201", MaxTokens, w.Code, w.Body)
	}
	if w := e.do("POST", "/api/v1/tokens", "root", `{"name":"more","prefix":"a"}`); w.Code != 409 || !strings.Contains(w.Body.String(), "the most tokens") {
		t.Errorf("token %d: %d %s, want 409", MaxTokens+1, w.Code, w.Body)
	}
	if ts, _ := e.st.Tokens(ctx); len(ts) != MaxTokens {
		t.Errorf("the store holds %d tokens, want %d", len(ts), MaxTokens)
	}

	b := newEnv(t, 0, func(c *Config) { c.Store, c.ImportMaxBytes = &backupDouble{Store: c.Store}, 2 })
	if w := b.do("POST", "/api/v1/import", "root", "ok"); w.Code != 200 {
		t.Errorf("an import of exactly ImportMaxBytes: %d %s, want 200", w.Code, w.Body)
	}
}

// TestUnknownParameterNamesWhatIsTaken: a refused parameter's message
// names the parameters the call takes, or says it takes none.
func TestUnknownParameterNamesWhatIsTaken(t *testing.T) {
	e := newEnv(t, 0, nil)
	tests := []struct{ target, want string }{
		{"/api/v1/counters/a?x=1", `unknown parameter "x": this call takes key`},
		{"/api/v1/counters?x=1", `unknown parameter "x": this call takes prefix, after, limit`},
		{"/api/v1/tokens?x=1", `unknown parameter "x": this call takes none`},
	}
	for _, tt := range tests {
		w := e.do("GET", tt.target, "root", "")
		var v struct{ Error string }
		if err := json.Unmarshal(w.Body.Bytes(), &v); err != nil || w.Code != 400 || v.Error != tt.want {
			t.Errorf("GET %s = %d %s, want 400 %q", tt.target, w.Code, w.Body, tt.want)
		}
	}
}

// TestLastFullPageHasNoNext: a page that ends with the last key has a
// null next, even when it is full: a client never asks for an empty
// page.
func TestLastFullPageHasNoNext(t *testing.T) {
	e := newEnv(t, 0, nil)
	for _, k := range []string{"a", "b", "c"} {
		e.do("PUT", "/api/v1/counters/"+k, "root", `{"total":1}`)
	}
	for _, tt := range []struct {
		target string
		next   *string
	}{
		{"/api/v1/counters?limit=2", ptr("b")},
		{"/api/v1/counters?limit=3", nil},
		{"/api/v1/counters?limit=2&after=a", nil},
		{"/api/v1/counters?limit=1&after=b", nil},
	} {
		w := e.do("GET", tt.target, "root", "")
		var p Page
		if err := json.Unmarshal(w.Body.Bytes(), &p); err != nil || w.Code != 200 {
			t.Fatalf("GET %s = %d %s", tt.target, w.Code, w.Body)
		}
		if (p.Next == nil) != (tt.next == nil) || p.Next != nil && *p.Next != *tt.next {
			t.Errorf("GET %s: next %s, want %s", tt.target, show(p.Next), show(tt.next))
		}
	}
}

func ptr(s string) *string { return &s }

func show(s *string) string {
	if s == nil {
		return "null"
	}
	return fmt.Sprintf("%q", *s)
}

// failingExport is a store.Backup whose Export fails before it writes
// anything.
type failingExport struct{ backupDouble }

func (failingExport) Export(context.Context, io.Writer) error { return errors.New("disk on fire") }

// TestExportFailsBeforeItsFirstByte: an export that fails before it
// writes anything is a plain 503 with a JSON error, not an attachment.
func TestExportFailsBeforeItsFirstByte(t *testing.T) {
	e := newEnv(t, 0, func(c *Config) { c.Store = &failingExport{backupDouble{Store: c.Store}} })
	w := e.do("GET", "/api/v1/export", "root", "")
	if w.Code != 503 || w.Header().Get("Content-Disposition") != "" || !json.Valid(w.Body.Bytes()) {
		t.Errorf("export failing at once: %d %v %s; want a 503 JSON error, no attachment", w.Code, w.Header(), w.Body)
	}
}
