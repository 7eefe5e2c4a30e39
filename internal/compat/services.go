package compat

import (
	"net/http"
	"strconv"
	"strings"

	"visitors/internal/badge"
	"visitors/internal/httperr"
	"visitors/internal/store"
)

// HITS's defaults, as its badge generator wrote them.
var (
	hitsLabel      = "hits"
	hitsColor      = []byte("#79C83D")
	hitsLabelColor = []byte("#555555")
	hitsLogoColor  = []byte("#E7E7E7")
)

// serveHITS answers /api/count/incr/badge.svg?url=U (a visit) and
// /api/count/keep/badge.svg?url=U (no visit) with HITS's badge: its
// title, then today's visits and the total, "3 / 120". Its parameters
// map to the badge's: title to the label, title_bg to the label's color,
// count_bg to the value's, icon (a Simple Icons name, "github.svg" or
// "github") to the logo, icon_color to the logo's color, and edge_flat
// true to the flat-square style.
func serveHITS(c Counter, w http.ResponseWriter, r *http.Request, q map[string][]string, qerr error) int {
	look := badge.Badge{Label: []byte(hitsLabel), Color: hitsColor, LabelColor: hitsLabelColor}
	if qerr != nil {
		return failBadge(w, errQuery, look)
	}
	var e *httperr.HTTPError
	if look.Label, e = parseLabel(q, "title", hitsLabel); e != nil {
		return failBadge(w, e, look)
	}
	if look.LabelColor, e = parseColor(q, "title_bg", hitsLabelColor); e != nil {
		return failBadge(w, e, look)
	}
	if look.Color, e = parseColor(q, "count_bg", hitsColor); e != nil {
		return failBadge(w, e, look)
	}
	switch v, _ := first(q, "edge_flat"); v {
	case "", "false":
	case "true":
		look.Style = badge.FlatSquare
	default:
		return failBadge(w, badRequest("Optional edge_flat must be true or false", "invalid edge_flat"), look)
	}
	if icon, _ := first(q, "icon"); icon != "" {
		l, err := badge.LookupLogo([]byte(strings.TrimSuffix(icon, ".svg")))
		if err != nil {
			return failBadge(w, badRequest("Optional icon: unknown; it must be the name of a Simple Icons logo, such as github.svg", "unknown icon"), look)
		}
		look.Logo = l
		if look.LogoColor, e = parseColor(q, "icon_color", hitsLogoColor); e != nil {
			return failBadge(w, e, look)
		}
	}
	u, _ := first(q, "url")
	if u == "" {
		return failBadge(w, errMissing("url"), look)
	}
	key, ok := Key(HITS, u)
	if !ok {
		return failBadge(w, errKeyTooLong, look)
	}
	count := r.URL.Path == pathHITSIncr && r.Method != http.MethodHead
	o, e := c.Count(w, r, key, count)
	if e != nil {
		return failBadge(w, e, look)
	}
	v := strconv.AppendUint(nil, o.Counts.Today, 10)
	v = append(v, " / "...)
	look.Value = strconv.AppendUint(v, o.Counts.Total, 10)
	writeBadge(w, http.StatusOK, &look)
	return visited(http.StatusOK, &o)
}

// countAPIDefault is CountAPI's namespace of a key given alone:
// /hit/KEY is /hit/default/KEY.
const countAPIDefault = "default"

// serveCountAPI answers CountAPI's and Abacus's /hit/{namespace}/{key}
// (a visit) and /get/{namespace}/{key} (no visit), and /hit/{key} and
// /get/{key} in the namespace "default", with {"value":N} as JSON. /get
// of a key never counted is CountAPI's 404 {"value":null}. An error is
// CountAPI's {"error":"…"}, with its status.
func serveCountAPI(c Counter, w http.ResponseWriter, r *http.Request) int {
	hit := strings.HasPrefix(r.URL.Path, pathHit)
	rest := r.URL.Path[len(pathHit):] // pathGet is as long
	ns, name, two := strings.Cut(rest, "/")
	if !two {
		ns, name = countAPIDefault, rest
	}
	if ns == "" || name == "" || strings.Contains(name, "/") {
		return writeJSON(w, http.StatusNotFound, jsonError{"not found: the paths are /hit/{namespace}/{key}, /get/{namespace}/{key}, /hit/{key} and /get/{key}"})
	}
	key, ok := Key(CountAPI, ns, name)
	if !ok {
		return writeJSON(w, http.StatusBadRequest, jsonError{msgKeyTooLong})
	}
	o, e := c.Count(w, r, key, hit && r.Method != http.MethodHead)
	if e != nil {
		e.SetHeader(w.Header())
		return writeJSON(w, e.Code, jsonError{e.Msg})
	}
	if !hit && o.Counts.Total == 0 {
		return writeJSON(w, http.StatusNotFound, struct {
			Value *uint64 `json:"value"`
		}{})
	}
	return visited(writeJSON(w, http.StatusOK, jsonValue{o.Counts.Total}), &o)
}

// jsonValue is CountAPI's answer.
type jsonValue struct {
	Value uint64 `json:"value"`
}

// jsonError is CountAPI's answer to an error.
type jsonError struct {
	Error string `json:"error"`
}

// visitor-badge's defaults.
var (
	vbLabel      = "visitors"
	vbLabelColor = []byte("#595959")
	vbColor      = []byte("#1283c3")
)

// serveVisitorBadge answers visitor-badge's /badge?page_id=ID, a visit,
// with its badge of the total: left_text is the label, left_color and
// right_color the label's and the value's colors.
func serveVisitorBadge(c Counter, w http.ResponseWriter, r *http.Request, q map[string][]string, qerr error) int {
	look := badge.Badge{Label: []byte(vbLabel), Color: vbColor, LabelColor: vbLabelColor}
	if qerr != nil {
		return failBadge(w, errQuery, look)
	}
	var e *httperr.HTTPError
	if look.Label, e = parseLabel(q, "left_text", vbLabel); e != nil {
		return failBadge(w, e, look)
	}
	if look.LabelColor, e = parseColor(q, "left_color", vbLabelColor); e != nil {
		return failBadge(w, e, look)
	}
	if look.Color, e = parseColor(q, "right_color", vbColor); e != nil {
		return failBadge(w, e, look)
	}
	id, _ := first(q, "page_id")
	if id == "" {
		return failBadge(w, errMissing("page_id"), look)
	}
	key, ok := Key(VisitorBadge, id)
	if !ok {
		return failBadge(w, errKeyTooLong, look)
	}
	o, e := c.Count(w, r, key, r.Method != http.MethodHead)
	if e != nil {
		return failBadge(w, e, look)
	}
	look.Value = strconv.AppendUint(nil, o.Counts.Total, 10)
	writeBadge(w, http.StatusOK, &look)
	return visited(http.StatusOK, &o)
}

// The profile views counter's defaults.
var (
	ghpvcLabel = "Profile views"
	ghpvcColor = []byte("#007ec6") // shields.io's blue, its default
)

// serveGHPVC answers the GitHub profile views counter's
// /ghpvc/?username=NAME, a visit, with its badge: label, color, style
// (flat, flat-square, plastic, for-the-badge; its pixel is drawn
// flat-square), abbreviated (true: 1.2k) and base, a number added to the
// total shown and never stored.
func serveGHPVC(c Counter, w http.ResponseWriter, r *http.Request, q map[string][]string, qerr error) int {
	look := badge.Badge{Label: []byte(ghpvcLabel), Color: ghpvcColor, LabelColor: []byte("#555")}
	if qerr != nil {
		return failBadge(w, errQuery, look)
	}
	var e *httperr.HTTPError
	if look.Label, e = parseLabel(q, "label", ghpvcLabel); e != nil {
		return failBadge(w, e, look)
	}
	if look.Color, e = parseColor(q, "color", ghpvcColor); e != nil {
		return failBadge(w, e, look)
	}
	switch st, _ := first(q, "style"); st {
	case "pixel":
		look.Style = badge.FlatSquare
	default:
		s, err := badge.ParseStyle([]byte(st))
		if err != nil {
			return failBadge(w, badRequest("Optional style must be flat, flat-square, plastic, for-the-badge or pixel", "invalid style"), look)
		}
		look.Style = s
	}
	var abbreviated bool
	switch v, _ := first(q, "abbreviated"); v {
	case "", "false":
	case "true":
		abbreviated = true
	default:
		return failBadge(w, badRequest("Optional abbreviated must be true or false", "invalid abbreviated"), look)
	}
	var base uint64
	if v, ok := first(q, "base"); ok && v != "" {
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil || n > store.MaxTotal {
			return failBadge(w, badRequest("Optional base must be a whole number from 0 to "+strconv.FormatUint(store.MaxTotal, 10), "invalid base"), look)
		}
		base = n
	}
	name, _ := first(q, "username")
	if name == "" {
		return failBadge(w, errMissing("username"), look)
	}
	key, ok := Key(GHPVC, name)
	if !ok {
		return failBadge(w, errKeyTooLong, look)
	}
	o, e := c.Count(w, r, key, r.Method != http.MethodHead)
	if e != nil {
		return failBadge(w, e, look)
	}
	look.Value = badge.AppendCount(nil, o.Counts.Total+base, abbreviated) // both at most 2^62: no overflow
	writeBadge(w, http.StatusOK, &look)
	return visited(http.StatusOK, &o)
}
