package web

import (
	"net/http/httptest"
	"testing"
)

// TestCompatBadgesHaveTheImagePolicy: every SVG the closed services'
// URLs answer, a badge or an error badge, carries the headers of
// /counter/{key}.svg: nosniff, and the Content-Security-Policy that lets
// an SVG opened as a document load and run nothing. Before the fix the
// compat badges had nosniff alone: a label is drawn from the URL, so the
// policy is their defence in depth as it is the native badges'.
func TestCompatBadgesHaveTheImagePolicy(t *testing.T) {
	s, _ := mustServer(t, nil)
	want := svgCSP[0]
	for _, target := range []string{
		"/counter/csp.svg", // the reference
		"/api/count/incr/badge.svg?url=u&title=%3Cscript%3E",
		"/api/count/keep/badge.svg?url=u",
		"/api/count/incr/badge.svg", // 400: url missing
		"/badge?page_id=p&left_text=%3Cscript%3E",
		"/badge?page_id=p&left_color=nope", // 400
		"/ghpvc/?username=g&label=%3Cscript%3E",
		"/ghpvc/?username=g&base=-1", // 400
	} {
		r := httptest.NewRequest("GET", target, nil)
		r.Header.Set("User-Agent", "Mozilla/5.0")
		w := httptest.NewRecorder()
		s.ServeHTTP(w, r)
		h := w.Result().Header
		if ct := h.Get("Content-Type"); ct != "image/svg+xml; charset=utf-8" {
			t.Errorf("GET %s: Content-Type %q, want an SVG", target, ct)
		}
		if got := h.Get("Content-Security-Policy"); got != want {
			t.Errorf("GET %s (%d): Content-Security-Policy %q, want %q", target, w.Code, got, want)
		}
		if got := h.Get("X-Content-Type-Options"); got != "nosniff" {
			t.Errorf("GET %s: X-Content-Type-Options %q, want nosniff", target, got)
		}
	}
}
