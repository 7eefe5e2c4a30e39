package web

import (
	_ "embed"
	"net/http"
)

// landingPage is the page at /: usage, a live badge, and a form that
// builds the Markdown and HTML snippets for a key. Plain HTML, CSS and a
// few lines of script; no build step, nothing loaded from elsewhere.
//
//go:embed landing.html
var landingPage []byte

func (s *Server) handleLanding(w http.ResponseWriter, r *http.Request) int {
	h := w.Header()
	h["Content-Type"] = ctHTML
	h["Content-Security-Policy"] = landingCSP
	w.Write(landingPage)
	return http.StatusOK
}

// landingCSP allows only what the page itself holds.
var landingCSP = []string{"default-src 'self'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src 'self'"}
