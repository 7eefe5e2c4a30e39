package api

import (
	"context"
	"encoding/json"
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
