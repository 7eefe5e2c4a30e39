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

// landingScript is the page's script, at /landing.js: a file of its own,
// so that the page's policy runs no inline script.
//
//go:embed landing.js
var landingScript []byte

// handleLanding serves the landing page at / and its script at
// /landing.js.
func (s *Server) handleLanding(w http.ResponseWriter, r *http.Request) int {
	h := w.Header()
	if r.URL.Path == "/landing.js" {
		h["Content-Type"] = ctJS
		w.Write(landingScript)
		return http.StatusOK
	}
	h["Content-Type"] = ctHTML
	h["Content-Security-Policy"] = landingCSP
	w.Write(landingPage)
	return http.StatusOK
}

// landingCSP allows only what the page itself holds: its own script,
// images and requests, and its inline style; no inline script.
var landingCSP = []string{"default-src 'self'; style-src 'unsafe-inline'; script-src 'self'; img-src 'self'"}
