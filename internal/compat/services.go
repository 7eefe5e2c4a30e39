package compat

import (
	"encoding/json"
	"net/http"
	"strconv"
	"strings"

	"visitors/internal/badge"
	"visitors/internal/store"
)

// HITS's badge parameters and defaults, as its badge generator wrote
// them.
var (
	hitsLooks = looks{label: "title", labelColor: "title_bg", color: "count_bg",
		defLabel: "hits", defLabelColor: []byte("#555555"), defColor: []byte("#79C83D")}
	hitsLogoColor = []byte("#E7E7E7")
)

// serveHITS answers /api/count/incr/badge.svg?url=U (a visit) and
// /api/count/keep/badge.svg?url=U (no visit) with HITS's badge: its
// title, then today's visits and the total, "3 / 120". Its parameters
// map to the badge's: title to the label, title_bg to the label's color,
// count_bg to the value's, icon (a Simple Icons name, "github.svg" or
// "github") to the logo, icon_color to the logo's color, and edge_flat
// true to the flat-square style.
func serveHITS(c Counter, w http.ResponseWriter, r *http.Request, q map[string][]string, qerr error) int {
	look, e := hitsLooks.parse(q, qerr)
	if e != nil {
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
// CountAPI's {"error":"…"}, with its status. With ?callback=NAME the
// answer is JSONP, as CountAPI's script tags asked for it: always a
// 200, NAME({"value":N}), with the status of an answer that is not a
// 200 in the object, "status".
func serveCountAPI(c Counter, w http.ResponseWriter, r *http.Request, q map[string][]string, qerr error) int {
	callback, jsonp := first(q, "callback")
	if qerr != nil {
		return writeJSON(w, http.StatusBadRequest, jsonError{Error: errQuery.Msg})
	}
	if jsonp && !validCallback(callback) {
		return writeJSON(w, http.StatusBadRequest, jsonError{Error: msgCallback})
	}
	answer := func(code int, v countAPIAnswer) int {
		if !jsonp {
			return writeJSON(w, code, v)
		}
		if code != http.StatusOK {
			v.Status = code
		}
		return writeJSONP(w, callback, v)
	}
	hit := strings.HasPrefix(r.URL.Path, pathHit)
	rest := r.URL.Path[len(pathHit):] // pathGet is as long
	ns, name, two := strings.Cut(rest, "/")
	if !two {
		ns, name = countAPIDefault, rest
	}
	if ns == "" || name == "" || strings.Contains(name, "/") {
		return answer(http.StatusNotFound, countAPIAnswer{Error: "not found: the paths are /hit/{namespace}/{key}, /get/{namespace}/{key}, /hit/{key} and /get/{key}"})
	}
	key, ok := Key(CountAPI, ns, name)
	if !ok {
		return answer(http.StatusBadRequest, countAPIAnswer{Error: msgKeyTooLong})
	}
	o, e := c.Count(w, r, key, hit && r.Method != http.MethodHead)
	if e != nil {
		e.SetHeader(w.Header())
		return answer(e.Code, countAPIAnswer{Error: e.Msg})
	}
	if !hit && o.Counts.Total == 0 {
		return answer(http.StatusNotFound, countAPIAnswer{Value: nil})
	}
	n := o.Counts.Total
	return visited(answer(http.StatusOK, countAPIAnswer{Value: &n}), &o)
}

// countAPIAnswer is CountAPI's answer: {"value":N}, {"value":null}, or
// {"error":"…"}; Status only in JSONP.
type countAPIAnswer struct {
	Status int     `json:"status,omitempty"`
	Value  *uint64 `json:"value"`
	Error  string  `json:"error,omitempty"`
}

// MarshalJSON writes an error without its value, as CountAPI did.
func (a countAPIAnswer) MarshalJSON() ([]byte, error) {
	if a.Error != "" {
		return json.Marshal(struct {
			Status int    `json:"status,omitempty"`
			Error  string `json:"error"`
		}{a.Status, a.Error})
	}
	type plain countAPIAnswer
	return json.Marshal(plain(a))
}

// jsonError is an error's answer outside CountAPI's shapes.
type jsonError struct {
	Error string `json:"error"`
}

// msgCallback refuses a JSONP callback that is not a plain name.
const msgCallback = "callback must be a JavaScript name: 1-64 of A-Z a-z 0-9 _ $ and ., not starting with a digit or ."

// validCallback reports whether name is one JSONP may call: 1-64 bytes
// of A-Z a-z 0-9 _ $ and '.', starting with a letter, _ or $; nothing
// else is written into the script.
func validCallback(name string) bool {
	if name == "" || len(name) > 64 {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		letter := 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || c == '_' || c == '$'
		if !letter && (i == 0 || !('0' <= c && c <= '9' || c == '.')) {
			return false
		}
	}
	return true
}

// visitor-badge's badge parameters and defaults.
var vbLooks = looks{label: "left_text", labelColor: "left_color", color: "right_color",
	defLabel: "visitors", defLabelColor: []byte("#595959"), defColor: []byte("#1283c3")}

// serveVisitorBadge answers visitor-badge's /badge?page_id=ID, a visit,
// with its badge of the total: left_text is the label, left_color and
// right_color the label's and the value's colors.
func serveVisitorBadge(c Counter, w http.ResponseWriter, r *http.Request, q map[string][]string, qerr error) int {
	look, e := vbLooks.parse(q, qerr)
	if e != nil {
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

// The profile views counter's badge parameters and defaults: its color
// is shields.io's blue, its default; its label's color takes no
// parameter.
var ghpvcLooks = looks{label: "label", color: "color",
	defLabel: "Profile views", defLabelColor: []byte("#555"), defColor: []byte("#007ec6")}

// serveGHPVC answers the GitHub profile views counter's
// /ghpvc/?username=NAME, a visit, with its badge: label, color, style
// (flat, flat-square, plastic, for-the-badge; its pixel is drawn
// flat-square), abbreviated (true: 1.2k) and base, a number added to the
// total shown and never stored.
func serveGHPVC(c Counter, w http.ResponseWriter, r *http.Request, q map[string][]string, qerr error) int {
	look, e := ghpvcLooks.parse(q, qerr)
	if e != nil {
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
