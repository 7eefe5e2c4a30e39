package dashboard

import (
	"encoding/json"
	"errors"
	"io"
	"mime/multipart"
	"net/http"
	"net/url"
	"strings"
	"time"
	"unicode/utf8"

	"visitors/internal/api"
	"visitors/internal/httperr"
)

// TokensPage is the tokens and backups page's own data.
type TokensPage struct {
	Tokens  []api.TokenInfo // made by the root: scoped and backup tokens, share links
	Counter int             // open creation's tokens, one per counter, not listed
	Made    *api.NewToken   // the token just made, its secret shown this once
	Done    string
}

// tokens serves GET /dashboard/tokens, root only.
func (h *Handler) tokens(rq *request) {
	h.tokensPage(rq, nil, "")
}

// tokensPage answers the tokens page with the token just made and what
// was done.
func (h *Handler) tokensPage(rq *request, made *api.NewToken, done string) {
	if !rq.who.Root {
		h.fail(rq.w, rq.r, rq, errRootOnly)
		return
	}
	a, err := h.callAPI(rq.r.Context(), rq, http.MethodGet, "/api/v1/tokens", nil)
	if err != nil {
		h.fail(rq.w, rq.r, rq, err)
		return
	}
	var list struct {
		Tokens []api.TokenInfo `json:"tokens"`
	}
	if err := json.Unmarshal(a.body.Bytes(), &list); err != nil {
		h.fail(rq.w, rq.r, rq, &httperr.HTTPError{Code: http.StatusServiceUnavailable, Msg: "the tokens could not be read", Err: err})
		return
	}
	tp := &TokensPage{Made: made, Done: done}
	for _, t := range list.Tokens {
		if t.Exact && !strings.HasPrefix(t.ID, shareIDPrefix) {
			tp.Counter++
			continue
		}
		tp.Tokens = append(tp.Tokens, t)
	}
	d := pageData{Title: "Tokens and backups", Body: tp}
	d.set(rq)
	h.render(rq.w, http.StatusOK, "tokens", d)
}

// createToken serves POST /dashboard/tokens: name, and a prefix or the
// scope backup, through POST /api/v1/tokens.
func (h *Handler) createToken(rq *request) {
	if !rq.who.Root {
		h.fail(rq.w, rq.r, rq, errRootOnly)
		return
	}
	f := rq.r.PostForm
	if !utf8.ValidString(f.Get("name")) || !utf8.ValidString(f.Get("prefix")) { // JSON would make them U+FFFD: another token than asked
		h.fail(rq.w, rq.r, rq, &httperr.HTTPError{Code: http.StatusBadRequest, Msg: "the name and the prefix must be valid UTF-8"})
		return
	}
	body := map[string]string{"name": f.Get("name")}
	if f.Get("scope") == api.ScopeBackup {
		body["scope"] = api.ScopeBackup
	} else {
		body["prefix"] = f.Get("prefix")
	}
	a, err := h.callAPI(rq.r.Context(), rq, http.MethodPost, "/api/v1/tokens", body)
	if err != nil {
		h.fail(rq.w, rq.r, rq, err)
		return
	}
	var nt api.NewToken
	if err := json.Unmarshal(a.body.Bytes(), &nt); err != nil {
		h.fail(rq.w, rq.r, rq, &httperr.HTTPError{Code: http.StatusServiceUnavailable, Msg: "the token could not be read", Err: err})
		return
	}
	h.tokensPage(rq, &nt, "")
}

// revokeToken serves POST /dashboard/tokens/revoke: id, through DELETE
// /api/v1/tokens/{id}.
func (h *Handler) revokeToken(rq *request) {
	if !rq.who.Root {
		h.fail(rq.w, rq.r, rq, errRootOnly)
		return
	}
	id := rq.r.PostForm.Get("id")
	if _, err := h.callAPI(rq.r.Context(), rq, http.MethodDelete, "/api/v1/tokens/"+url.PathEscape(id), nil); err != nil {
		h.fail(rq.w, rq.r, rq, err)
		return
	}
	h.tokensPage(rq, nil, "The token "+id+" is revoked: it is refused from now on.")
}

// streamAnswer hands the API's answer to w as it comes if its status is
// 200, and keeps any other, so that a refusal becomes a page.
type streamAnswer struct {
	w      http.ResponseWriter
	h      http.Header
	code   int
	refuse apiAnswer
}

func (s *streamAnswer) Header() http.Header { return s.h }
func (s *streamAnswer) WriteHeader(code int) {
	if s.code != 0 {
		return
	}
	s.code = code
	if code == http.StatusOK {
		for _, k := range []string{"Content-Type", "Content-Disposition"} {
			if v := s.h.Get(k); v != "" {
				s.w.Header().Set(k, v)
			}
		}
		s.w.WriteHeader(code)
	}
}
func (s *streamAnswer) Write(p []byte) (int, error) {
	if s.code == 0 {
		s.WriteHeader(http.StatusOK)
	}
	if s.code != http.StatusOK {
		return s.refuse.body.Write(p)
	}
	return s.w.Write(p)
}

// Unwrap returns the connection's writer, for the API's longer write
// deadline of an export.
func (s *streamAnswer) Unwrap() http.ResponseWriter { return s.w }

// export serves GET /dashboard/export: the API's export (root or
// backup token), as a download.
func (h *Handler) export(rq *request) {
	sa := &streamAnswer{w: rq.w, h: make(http.Header)}
	req, err := http.NewRequestWithContext(rq.r.Context(), http.MethodGet, "/api/v1/export", nil)
	if err != nil {
		h.fail(rq.w, rq.r, rq, err)
		return
	}
	req.RemoteAddr = rq.r.RemoteAddr
	req.Header.Set("Authorization", "Bearer "+rq.s.secret)
	h.c.API.ServeHTTP(sa, req)
	if sa.code != 0 && sa.code != http.StatusOK {
		sa.refuse.code, sa.refuse.h = sa.code, sa.h
		h.fail(rq.w, rq.r, rq, sa.refuse.err())
	}
}

// importDump serves POST /dashboard/import, a multipart form: csrf
// first, then mode (merge or replace), then the file dump; the dump
// goes to the API's import as it is read.
func (h *Handler) importDump(rq *request) {
	if !rq.who.Root {
		h.fail(rq.w, rq.r, rq, errRootOnly)
		return
	}
	rc := http.NewResponseController(rq.w)
	rc.SetReadDeadline(time.Now().Add(30 * time.Minute)) // as the API's import: past the listener's 5 s
	mr, err := rq.r.MultipartReader()
	if err != nil {
		h.fail(rq.w, rq.r, rq, &httperr.HTTPError{Code: http.StatusBadRequest, Msg: "an import is a form with the fields csrf, mode and file"})
		return
	}
	field := func(name string) (string, error) {
		p, err := mr.NextPart()
		if err != nil || p.FormName() != name {
			return "", &httperr.HTTPError{Code: http.StatusBadRequest, Msg: "the form's fields must come in this order: csrf, mode, file; " + name + " is missing"}
		}
		b, err := io.ReadAll(io.LimitReader(p, 256))
		return string(b), err
	}
	csrf, err := field("csrf")
	if err != nil || !rq.s.validCSRF(csrf) {
		h.fail(rq.w, rq.r, rq, errCSRF)
		return
	}
	mode, err := field("mode")
	if err != nil || mode != "merge" && mode != "replace" {
		h.fail(rq.w, rq.r, rq, &httperr.HTTPError{Code: http.StatusBadRequest, Msg: "mode: want merge or replace"})
		return
	}
	var file *multipart.Part
	if file, err = mr.NextPart(); err != nil || file.FormName() != "file" {
		h.fail(rq.w, rq.r, rq, &httperr.HTTPError{Code: http.StatusBadRequest, Msg: "no file: choose a dump made by an export"})
		return
	}
	path := "/api/v1/import"
	if mode == "replace" {
		path += "?replace=true"
	}
	a, err := h.callAPI(rq.r.Context(), rq, http.MethodPost, path, io.Reader(file))
	if err != nil {
		var he *httperr.HTTPError
		if errors.As(err, &he) {
			he.Msg = "The import was refused: " + he.Msg
		}
		h.fail(rq.w, rq.r, rq, err)
		return
	}
	var res struct {
		Keys  int   `json:"keys"`
		Bytes int64 `json:"bytes"`
	}
	json.Unmarshal(a.body.Bytes(), &res)
	done := "Imported (merged: counts added to those here)."
	if mode == "replace" {
		done = "Imported (replaced: every counter is now as in the dump)."
	}
	h.tokensPage(rq, nil, done+" The store holds "+itoa(res.Keys)+" counters.")
}
