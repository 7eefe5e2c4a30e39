package api

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"visitors/internal/compat"
	"visitors/internal/httperr"
	"visitors/internal/store"
	"visitors/internal/store/dump"
)

var errNoBackup = &httperr.HTTPError{Code: http.StatusNotImplemented, Msg: "this store cannot export or import while it serves (-store memory); use the embedded or the Redis store"}

// countingWriter counts what passes through it to w.
type countingWriter struct {
	w io.Writer
	n int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

// export serves GET /api/v1/export, root or backup token only: every counter in the
// format of "visitors export", streamed. A failure after the first byte
// aborts the connection, so that a client never takes a cut dump for a
// whole one.
func (h *Handler) export(c *call) error {
	if !c.who.root && !c.who.backup {
		return errRootOnly
	}
	if err := c.only(); err != nil {
		return err
	}
	if h.backup == nil {
		return errNoBackup
	}
	rc := http.NewResponseController(c.w)
	rc.SetWriteDeadline(time.Now().Add(transferTimeout)) // past the public listener's 10 s; ignored if unsupported
	hd := c.w.Header()
	hd["Content-Type"] = []string{"application/json"}
	hd["Content-Disposition"] = []string{`attachment; filename="visitors-export.json"`}
	cw := &countingWriter{w: c.w}
	start := h.c.Now()
	if err := h.backup.Export(c.r.Context(), cw); err != nil {
		if cw.n == 0 {
			delete(hd, "Content-Disposition")
			return h.storeError(err, "export")
		}
		h.c.Log.Error().Err(err).Int64("bytes", cw.n).Msg("api export failed after it began; the connection is cut")
		panic(http.ErrAbortHandler)
	}
	h.audit(c, "export", "").Int64("bytes", cw.n).Dur("took", h.c.Now().Sub(start)).Msg("api read")
	return nil
}

// importDump serves POST /api/v1/import[?replace=true][&format=csv],
// root only: a dump of "visitors export", or with format=csv rows of
// key,total and key,date,count (dump.FromCSV; added, never replacing),
// checked whole before anything changes (a refused dump is 400 and
// changes nothing), of at most ImportMaxBytes (413); one that would
// take the store past -max-keys is 409 and changes nothing. Any
// Content-Type is taken.
func (h *Handler) importDump(c *call) error {
	if err := c.rootOnly("replace", "format"); err != nil {
		return err
	}
	replace, err := c.boolParam("replace")
	if err != nil {
		return err
	}
	format, _ := c.param1("format")
	switch format {
	case "", "json":
	case "csv":
		if replace {
			return badRequest("format=csv adds counts and cannot replace: a CSV holds no /hi counter and only the keys it names")
		}
	default:
		return badRequest("parameter format: want json or csv")
	}
	if h.backup == nil {
		return errNoBackup
	}
	tooLarge := &httperr.HTTPError{Code: http.StatusRequestEntityTooLarge, Msg: fmt.Sprintf("the dump is larger than -import-max-bytes (%d bytes)", h.c.ImportMaxBytes)}
	if c.r.ContentLength > h.c.ImportMaxBytes {
		return tooLarge
	}
	rc := http.NewResponseController(c.w)
	rc.SetReadDeadline(time.Now().Add(transferTimeout)) // past the public listener's 5 s
	rc.SetWriteDeadline(time.Now().Add(transferTimeout))
	ctx := c.r.Context()
	keysBefore := h.c.Store.Keys()
	body := &countingReader{r: http.MaxBytesReader(c.w, c.r.Body, h.c.ImportMaxBytes)}
	start := h.c.Now()
	var in io.Reader = body
	if format == "csv" {
		var d bytes.Buffer
		if err := dump.FromCSVChecked(dump.ContextReader(ctx, body), &d, compat.CheckKey); err != nil {
			var mbe *http.MaxBytesError
			if body.tooLarge || errors.As(err, &mbe) {
				return tooLarge
			}
			if ctx.Err() != nil {
				return h.storeError(ctx.Err(), "import")
			}
			return badRequest("the CSV was refused, nothing changed: %v", err)
		}
		in = &d
	}
	err = h.backup.Import(ctx, in, replace)
	var mbe *http.MaxBytesError
	switch {
	case body.tooLarge || errors.As(err, &mbe): // however the store wrapped the read's error
		return tooLarge
	case errors.Is(err, store.ErrInvalidDump):
		return badRequest("the dump was refused, nothing changed: %v", err)
	case errors.Is(err, store.ErrTooManyKeys):
		return &httperr.HTTPError{Code: http.StatusConflict, Msg: fmt.Sprintf("the import was refused, nothing changed: %v", err)}
	case err != nil:
		return h.storeError(err, "import")
	}
	e := h.audit(c, "import", "").Bool("replace", replace).Int64("bytes", body.n).Int("keys_before", keysBefore).Int("keys_after", h.c.Store.Keys()).
		Dur("took", h.c.Now().Sub(start))
	if replace {
		e = e.Int("tokens_revoked", h.revokeOrphans(ctx))
		h.forgetDropped(ctx)
	}
	e.Msg("api change")
	writeJSON(c.w, http.StatusOK, struct {
		Imported bool  `json:"imported"`
		Replace  bool  `json:"replace"`
		Bytes    int64 `json:"bytes"`
		Keys     int   `json:"keys"`
	}{true, replace, body.n, h.c.Store.Keys()})
	return nil
}

// countingReader counts what is read through it from r, and notes a
// read past http.MaxBytesReader's limit.
type countingReader struct {
	r        io.Reader
	n        int64
	tooLarge bool
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	var mbe *http.MaxBytesError
	if errors.As(err, &mbe) {
		c.tooLarge = true
	}
	return n, err
}

// revokeOrphans revokes the open-creation tokens and the share links
// whose key is gone, as an import that replaces leaves them (deleting a
// counter through the API revokes its own), so that no one keeps a hold
// on a key someone may create anew, nor a view of it. It returns how many it revoked; a failure is logged.
func (h *Handler) revokeOrphans(ctx context.Context) int {
	tokens, err := h.c.Store.Tokens(ctx)
	if err != nil {
		h.c.Log.Error().Err(err).Msg("after an import: read the tokens to revoke those of deleted counters")
		return 0
	}
	n := 0
	for _, t := range tokens {
		if !t.Exact || t.ID != exactID(t.Prefix) && t.ID != ShareID(t.Prefix) { // open creation's, or a share link
			continue
		}
		es, err := h.c.Store.List(ctx, []byte(t.Prefix), nil, 1)
		if err == nil && len(es) > 0 && string(es[0].Key) == t.Prefix {
			continue
		}
		revoked := false
		if err == nil {
			revoked, err = h.c.Store.DeleteTokenIf(ctx, t.ID, t.Hash) // not one made anew since
		}
		if err != nil {
			h.c.Log.Error().Err(err).Str("token_id", t.ID).Msg("after an import: revoke the token of a deleted counter")
			continue
		}
		if revoked {
			n++
		}
	}
	return n
}

// forget drops today's unique visitors of keys the store deleted, so
// that a counter made anew starts with none. A failure is logged: the
// counts are deleted all the same.
func (h *Handler) forget(ctx context.Context, keys [][]byte) {
	if h.c.Uniques == nil || len(keys) == 0 {
		return
	}
	if err := h.c.Uniques.Forget(keys); err != nil {
		h.c.Log.Error().Err(err).Int("keys", len(keys)).Msg("the deleted counters' unique visitors of today are still held")
	}
}

// forgetDropped forgets the unique visitors held for keys that a
// replacing import deleted: those the store no longer holds.
func (h *Handler) forgetDropped(ctx context.Context) {
	if h.c.Uniques == nil {
		return
	}
	var gone [][]byte
	for _, k := range h.c.Uniques.Held() {
		e, err := h.c.Store.List(ctx, k, nil, 1)
		if err != nil {
			h.c.Log.Error().Err(err).Msg("after the import, the dropped counters' unique visitors of today are still held")
			return
		}
		if len(e) == 0 || string(e[0].Key) != string(k) {
			gone = append(gone, k)
		}
	}
	h.forget(ctx, gone)
}
