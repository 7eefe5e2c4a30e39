package api

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"visitors/internal/store"
)

// backupDouble is the memory store with a store.Backup whose answers the
// test chooses: it proves how the handler maps them, not a dump format
// (cmd/visitors proves export and import on the embedded store).
type backupDouble struct {
	Store
	exportErr error // after writing "{"
	imported  []byte
}

func (b *backupDouble) Export(_ context.Context, w io.Writer) error {
	io.WriteString(w, "{")
	return b.exportErr
}

// Import reads all of r and refuses anything but "ok", wrapping a read
// error with %v, as a store that loses its type might.
func (b *backupDouble) Import(_ context.Context, r io.Reader, _ bool) error {
	data, err := io.ReadAll(r)
	if err != nil {
		return fmt.Errorf("line 1: %v: %w", err, store.ErrInvalidDump)
	}
	if string(data) != "ok" {
		return fmt.Errorf("not ok: %w", store.ErrInvalidDump)
	}
	b.imported = data
	return nil
}

func TestBackupAnswers(t *testing.T) {
	var bd *backupDouble
	e := newEnv(t, 0, func(c *Config) {
		bd = &backupDouble{Store: c.Store}
		c.Store, c.ImportMaxBytes = bd, 10
	})
	tests := []struct {
		name, body string
		chunked    bool
		code       int
		want       string
	}{
		{"ok", "ok", false, 200, `"imported": true`},
		{"refused", "bad", false, 400, "the dump was refused, nothing changed: not ok"},
		{"too large, by Content-Length", strings.Repeat("x", 11), false, 413, "-import-max-bytes (10 bytes)"},
		{"too large, chunked", strings.Repeat("x", 11), true, 413, "-import-max-bytes (10 bytes)"},
	}
	for _, tt := range tests {
		var rd io.Reader = strings.NewReader(tt.body)
		if tt.chunked {
			rd = io.MultiReader(rd) // no length known: sent chunked
		}
		r := httptest.NewRequest("POST", "/api/v1/import", rd)
		r.RemoteAddr = "192.0.2.1:1"
		r.Header.Set("Authorization", "Bearer "+rootSecret)
		if tt.chunked {
			r.ContentLength = -1
		}
		w := httptest.NewRecorder()
		e.h.ServeHTTP(w, r)
		if w.Code != tt.code || !strings.Contains(w.Body.String(), tt.want) {
			t.Errorf("%s: %d %s, want %d with %s", tt.name, w.Code, w.Body, tt.code, tt.want)
		}
	}
	if w := e.do("GET", "/api/v1/export", "root", ""); w.Code != 200 || w.Body.String() != "{" || w.Header().Get("Content-Type") != "application/json" {
		t.Errorf("export = %d %q %v", w.Code, w.Body, w.Header())
	}
	// A failure after the first byte cuts the connection: never a 200
	// that looks whole.
	bd.exportErr = errors.New("disk on fire")
	defer func() {
		if p := recover(); p != http.ErrAbortHandler {
			t.Errorf("a failed export after its first byte: panic %v, want http.ErrAbortHandler", p)
		}
	}()
	e.do("GET", "/api/v1/export", "root", "")
}
