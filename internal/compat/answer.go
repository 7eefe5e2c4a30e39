package compat

import (
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"unicode/utf8"

	"visitors/internal/badge"
	"visitors/internal/httperr"
	"visitors/internal/metrics"
	"visitors/internal/visit"
)

// Header values, shared and never mutated.
var (
	ctSVG     = []string{"image/svg+xml; charset=utf-8"}
	ctJSON    = []string{"application/json"}
	noCache   = []string{"no-cache, no-store, must-revalidate"}
	expires0  = []string{"0"}
	nosniff   = []string{"nosniff"}
	anyOrigin = []string{"*"}
	// svgCSP is /counter/{key}.svg's policy (internal/web): an SVG
	// opened as a document loads and runs nothing but its inline style.
	svgCSP = []string{"default-src 'none'; style-src 'unsafe-inline'"}
)

// errorColor is the value color of an error badge: shields.io's red.
var errorColor = []byte("#e05d44")

// setNoCache forbids every cache, GitHub's image proxy among them, to
// keep the answer: counts change with every visit.
func setNoCache(h http.Header) {
	h["Cache-Control"] = noCache
	h["Expires"] = expires0
	h["X-Content-Type-Options"] = nosniff
}

// writeBadge answers b with status code.
func writeBadge(w http.ResponseWriter, code int, b *badge.Badge) {
	h := w.Header()
	h["Content-Type"] = ctSVG
	h["Content-Security-Policy"] = svgCSP
	setNoCache(h)
	w.WriteHeader(code)
	w.Write(badge.AppendSVG(make([]byte, 0, 2048), b)) // one allocation: a badge is under 2 KiB without a logo
}

// failBadge answers e as a badge that says what went wrong, with the
// label and style of look (the request's, where they were valid), so
// that a README shows a readable image; the whole message is in the
// Visitors-Error header, as on /counter/. It returns e's status.
func failBadge(w http.ResponseWriter, e *httperr.HTTPError, look badge.Badge) int {
	e.SetHeader(w.Header())
	w.Header()["Visitors-Error"] = []string{e.Msg}
	b := badge.Badge{Label: look.Label, Value: []byte(e.Badge), Color: errorColor, LabelColor: look.LabelColor, Style: look.Style}
	writeBadge(w, e.Code, &b)
	return e.Code
}

// visited returns code with metrics.Visit added if o counted a visit.
func visited(code int, o *visit.Outcome) int {
	if o.Counted {
		return code | metrics.Visit
	}
	return code
}

// writeJSON answers v as JSON with status code, readable from any
// origin, as CountAPI's answers were.
func writeJSON(w http.ResponseWriter, code int, v any) int {
	h := w.Header()
	h["Content-Type"] = ctJSON
	h["Access-Control-Allow-Origin"] = anyOrigin
	setNoCache(h)
	b, _ := json.Marshal(v) // a map or struct of strings and numbers
	w.WriteHeader(code)
	w.Write(append(b, '\n'))
	return code
}

// ctJS is the content type of a JSONP answer.
var ctJS = []string{"application/javascript; charset=utf-8"}

// writeJSONP answers v as a call of callback, a name validCallback took,
// always with a 200, as JSONP must for a script tag to run it. The
// leading empty comment keeps the first bytes out of the caller's hands.
func writeJSONP(w http.ResponseWriter, callback string, v any) int {
	h := w.Header()
	h["Content-Type"] = ctJS
	setNoCache(h)
	b, _ := json.Marshal(v)
	out := make([]byte, 0, len(b)+len(callback)+10)
	out = append(out, "/**/"...)
	out = append(out, callback...)
	out = append(out, '(')
	out = append(out, b...)
	out = append(out, ");\n"...)
	w.WriteHeader(http.StatusOK)
	w.Write(out)
	return http.StatusOK
}

// looks names a service's badge parameters (the label, its color and
// the value's color) and their defaults; a parameter the service does
// not take has no name, and its default stands.
type looks struct {
	label, labelColor, color string
	defLabel                 string
	defLabelColor, defColor  []byte
}

// parse returns the badge q asks for through l's parameters, or the
// first refusal with the badge parsed so far (the defaults from the
// refused parameter on), which the error badge is drawn as; qerr is the
// query's own decoding error.
func (l *looks) parse(q map[string][]string, qerr error) (badge.Badge, *httperr.HTTPError) {
	b := badge.Badge{Label: []byte(l.defLabel), Color: l.defColor, LabelColor: l.defLabelColor}
	if qerr != nil {
		return b, errQuery
	}
	var e *httperr.HTTPError
	if b.Label, e = parseLabel(q, l.label, l.defLabel); e != nil {
		return b, e
	}
	if l.labelColor != "" {
		if b.LabelColor, e = parseColor(q, l.labelColor, l.defLabelColor); e != nil {
			return b, e
		}
	}
	if b.Color, e = parseColor(q, l.color, l.defColor); e != nil {
		return b, e
	}
	return b, nil
}

// parseLabel returns the label asked for by q's parameter name, or def
// if it is absent; a label that is not valid UTF-8 or is longer than
// badge.MaxLabelRunes is refused.
func parseLabel(q map[string][]string, name, def string) ([]byte, *httperr.HTTPError) {
	v, ok := first(q, name)
	if !ok {
		return []byte(def), nil
	}
	if !utf8.ValidString(v) || utf8.RuneCountInString(v) > badge.MaxLabelRunes {
		return []byte(def), badRequest("Optional "+name+" must be at most "+strconv.Itoa(badge.MaxLabelRunes)+" characters of valid UTF-8", "invalid "+name)
	}
	return []byte(v), nil
}

// parseColor returns the color asked for by q's parameter name, or def
// if it is absent or empty: a name badge.AppendColor takes, or 3 or 6
// hex digits with or without a leading '#' (the services wrote
// %23RRGGBB).
func parseColor(q map[string][]string, name string, def []byte) ([]byte, *httperr.HTTPError) {
	v, ok := first(q, name)
	if !ok || v == "" {
		return def, nil
	}
	c, err := badge.AppendColor(nil, []byte(strings.TrimPrefix(v, "#")))
	if err != nil {
		return def, badRequest("Optional "+name+": "+err.Error(), "invalid "+name)
	}
	return c, nil
}

// first returns the first value of q's parameter name, and whether
// there is one.
func first(q map[string][]string, name string) (string, bool) {
	if vs := q[name]; len(vs) > 0 {
		return vs[0], true
	}
	return "", false
}
