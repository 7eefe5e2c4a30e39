package web

import (
	"bytes"
	"fmt"
	"hash/fnv"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"visitors/internal/badge"
	"visitors/internal/metrics"
	"visitors/internal/store"
	"visitors/internal/visit"
)

// Limits of the counter API.
const (
	MaxKeyBytes   = store.MaxKeyBytes   // a counter key
	MaxLabelRunes = badge.MaxLabelRunes // a badge label, in characters
	defaultDays   = 30
)

// Client messages of the counter API that quote a limit, from its
// constant.
var (
	msgLabel = fmt.Sprintf("Optional label must be at most %d characters of valid UTF-8", MaxLabelRunes)
	msgDays  = fmt.Sprintf("Optional days must be a whole number from 1 to %d", store.MaxDays) // daily.json and graph.svg
)

// Client messages of the counter API.
const (
	msgCount    = "Optional count must be true or false"
	msgAbbr     = "Optional abbreviated must be true or false"
	msgShow     = "Optional show must be total, today or unique"
	msgEscape   = "Query string is not valid URL encoding"
	defaultText = "visitors"
)

// Header values of the counter API, shared and never mutated.
var (
	ctSVG        = []string{"image/svg+xml; charset=utf-8"}
	noCache      = []string{"no-cache, no-store, must-revalidate"}
	expiresZero  = []string{"0"}
	anyOrigin    = []string{"*"}
	defaultColor = []byte("#4c1")
	defaultLabel = []byte("#555")
)

// counterKind is what a /counter/ path asks for.
type counterKind int

const (
	kindBadge counterKind = iota
	kindJSON
	kindDaily
	kindGraph
)

// counterRoute returns the route of a path under /counter/.
func counterRoute(path string) metrics.Route {
	_, kind, ok := splitCounterPath(path[len("/counter/"):])
	switch {
	case !ok:
		return metrics.Other
	case kind == kindBadge:
		return metrics.CounterSVG
	case kind == kindJSON:
		return metrics.CounterJSON
	case kind == kindDaily:
		return metrics.Daily
	}
	return metrics.Graph
}

// splitCounterPath splits the part of a path after /counter/ into the
// key and what is asked of it.
func splitCounterPath(p string) (key string, kind counterKind, ok bool) {
	switch {
	case strings.HasSuffix(p, "/daily.json"):
		return p[:len(p)-len("/daily.json")], kindDaily, true
	case strings.HasSuffix(p, "/graph.svg"):
		return p[:len(p)-len("/graph.svg")], kindGraph, true
	case strings.HasSuffix(p, ".svg"):
		return p[:len(p)-len(".svg")], kindBadge, true
	case strings.HasSuffix(p, ".json"):
		return p[:len(p)-len(".json")], kindJSON, true
	}
	return "", 0, false
}

// counterQuery is a /counter/ request's parsed query; its byte slices
// point into the request's scratch buffers.
type counterQuery struct {
	count       bool
	abbreviated bool
	today       bool
	unique      bool // show=unique: today's unique visitors
	days        int
	b           badge.Badge
}

// boolParam parses an optional true/false parameter.
func boolParam(q, key string, def bool) (bool, bool) {
	switch v, _ := queryValue(q, key); v {
	case "":
		return def, true
	case "true", "1":
		return true, true
	case "false", "0":
		return false, true
	}
	return def, false
}

// parseCounterQuery parses and checks the query of a /counter/ request,
// returning the client's message if it is bad. A request with no query,
// the load test's and a plain README badge's, takes the defaults parsed
// once: emptyQuery.
func parseCounterQuery(sc *scratch, q string) (cq counterQuery, msg string) {
	if q == "" {
		return emptyQuery(), ""
	}
	return parseQuery(sc, q)
}

// emptyQuery returns what parseQuery makes of an empty query, parsed
// once (TestEmptyQueryIsParsed holds them equal). Its byte slices are in
// a scratch of its own, which nothing writes to again: a badge's fields
// are only read. It is parsed at the first request without a query, not
// at the package's init: a parser that never returned there (mutation
// query.go:16:8) hung every program importing web, its tests before go
// test's timeout starts, so that the test binary ran on after the go
// command was stopped.
var emptyQuery = sync.OnceValue(func() counterQuery {
	var sc scratch
	cq, msg := parseQuery(&sc, "")
	if msg != "" {
		panic("the empty query is refused: " + msg)
	}
	return cq
})

// parseQuery is parseCounterQuery without the shortcut.
func parseQuery(sc *scratch, q string) (cq counterQuery, msg string) {
	var ok bool
	if cq.count, ok = boolParam(q, "count", true); !ok {
		return cq, msgCount
	}
	if cq.abbreviated, ok = boolParam(q, "abbreviated", false); !ok {
		return cq, msgAbbr
	}
	switch v, _ := queryValue(q, "show"); v {
	case "", "total":
	case "today":
		cq.today = true
	case "unique":
		cq.unique = true
	default:
		return cq, msgShow
	}
	cq.days = defaultDays
	if v, found := queryValue(q, "days"); found {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > store.MaxDays {
			return cq, msgDays
		}
		cq.days = n
	}

	label, found := queryValue(q, "label")
	if len(label) > 4*3*MaxLabelRunes {
		return cq, msgLabel
	}
	var err error
	if sc.label, err = appendUnescape(sc.label[:0], label); err != nil {
		return cq, msgEscape
	}
	if !found {
		sc.label = append(sc.label[:0], defaultText...)
	}
	if !utf8.Valid(sc.label) || utf8.RuneCount(sc.label) > MaxLabelRunes {
		return cq, msgLabel
	}
	cq.b.Label = sc.label

	cq.b.Color, msg = parseColorParam(&sc.color, q, "color", "", defaultColor)
	if msg != "" {
		return cq, msg
	}
	cq.b.LabelColor, msg = parseColorParam(&sc.labelColor, q, "label_color", "labelColor", defaultLabel)
	if msg != "" {
		return cq, msg
	}
	style, _ := queryValue(q, "style")
	if cq.b.Style, err = badge.ParseStyle([]byte(style)); err != nil {
		return cq, "Optional " + err.Error()
	}
	return cq, parseLogo(sc, q, &cq.b)
}

// parseColorParam parses a badge color parameter into *buf: key, or, if
// it is absent, its shields.io spelling alias ("" for none).
func parseColorParam(buf *[]byte, q, key, alias string, def []byte) ([]byte, string) {
	raw, found := queryValue(q, key)
	if !found && alias != "" {
		raw, found = queryValue(q, alias)
		key = alias
	}
	if !found || raw == "" {
		return def, ""
	}
	if len(raw) > 3*32 {
		return nil, "Optional " + key + ": " + badge.ErrColor.Error()
	}
	var tmp [96]byte
	name, err := appendUnescape(tmp[:0], raw)
	if err != nil {
		return nil, msgEscape
	}
	c, err := badge.AppendColor((*buf)[:0], name)
	*buf = c
	if err != nil {
		return nil, "Optional " + key + ": " + err.Error()
	}
	return c, ""
}

// handleCounter serves /counter/{key}.svg, .json, /daily.json and
// /graph.svg.
func (s *Server) handleCounter(w http.ResponseWriter, r *http.Request) int {
	key, kind, ok := splitCounterPath(r.URL.Path[len("/counter/"):])
	svg := kind == kindBadge || kind == kindGraph
	if !ok {
		return s.fail(w, r, svg, errNotFound)
	}
	if !store.ValidPublicKey(key) {
		if store.KeyIsRoute(key) {
			return s.fail(w, r, svg, errKeyRoute)
		}
		return s.fail(w, r, svg, errKey)
	}
	if name, found := unknownCounterParam(r.URL.RawQuery); found {
		return s.fail(w, r, svg, unknownParam(name))
	}
	sc := s.scratch.Get().(*scratch)
	defer s.scratch.Put(sc)
	cq, msg := parseCounterQuery(sc, r.URL.RawQuery)
	switch msg {
	case "":
	case msgLogo:
		return s.fail(w, r, svg, badRequest(msg, msgLogoBadge))
	default:
		return s.fail(w, r, svg, badRequest(msg, "invalid query"))
	}
	sc.name = append(sc.name[:0], key...)
	switch kind {
	case kindDaily, kindGraph:
		d, err := s.visits.Store.Days(r.Context(), sc.name, cq.days)
		if err != nil {
			return s.fail(w, r, svg, s.storeError(err))
		}
		if kind == kindDaily {
			u, err := s.visits.Uniques.Days(sc.name, s.now(), cq.days)
			if err != nil {
				return s.fail(w, r, svg, s.storeError(err))
			}
			return s.writeDaily(w, r, key, d, u)
		}
		return s.writeGraph(w, r, key, d)
	}

	v := countReq{Visit: visit.Visit{Key: sc.name, Count: cq.count && r.Method != http.MethodHead, Unique: cq.unique || kind == kindJSON, Listed: true}, r: r}
	o, herr := s.record(&v)
	if herr != nil {
		return s.fail(w, r, svg, herr)
	}
	c := o.Counts
	n := c.Total
	switch {
	case cq.today:
		n = c.Today
	case cq.unique:
		n = o.Unique
	}
	b := sc.body[:0]
	h := w.Header()
	if o.Refused {
		markRefused(h)
	}
	if kind == kindJSON {
		b = append(b, `{"key":`...)
		b = appendJSON(b, key)
		b = append(b, `,"total":`...)
		b = strconv.AppendUint(b, c.Total, 10)
		b = append(b, `,"today":`...)
		b = strconv.AppendUint(b, c.Today, 10)
		b = append(b, `,"unique_today":`...)
		b = strconv.AppendUint(b, o.Unique, 10)
		b = append(b, "}\n"...)
		h["Content-Type"] = ctJSON
		h["Access-Control-Allow-Origin"] = anyOrigin
		setNoCache(h) // a count must not be cached, as JSON either
	} else {
		sc.value = badge.AppendCount(sc.value[:0], n, cq.abbreviated)
		cq.b.Value = sc.value
		b = sc.memo.appendBadge(b, r.URL.RawQuery, &cq.b)
		setImageHeaders(h)
	}
	sc.body = b
	h["X-Content-Type-Options"] = nosniff
	if !cq.count && etagMatches(w, r, b) {
		return http.StatusNotModified
	}
	w.Write(b)
	return http.StatusOK | counted(&o)
}

// setImageHeaders marks an SVG image that no proxy may keep: GitHub's
// image proxy would otherwise cache a badge and its count.
func setImageHeaders(h http.Header) {
	h["Content-Type"] = ctSVG
	setNoCache(h)
}

// setNoCache forbids every cache to keep the response: counts change
// with every visit.
func setNoCache(h http.Header) {
	h["Cache-Control"] = noCache
	h["Expires"] = expiresZero
}

// etagMatches sets a strong ETag for body and, if the request already
// holds it, answers 304 Not Modified and reports true.
func etagMatches(w http.ResponseWriter, r *http.Request, body []byte) bool {
	f := fnv.New64a()
	f.Write(body)
	var tag [20]byte
	t := append(tag[:0], '"')
	t = strconv.AppendUint(t, f.Sum64(), 36)
	t = append(t, '"')
	etag := string(t)
	w.Header()["Etag"] = []string{etag}
	if inm := headerValue(r.Header, "If-None-Match"); inm != "" && strings.Contains(inm, etag) {
		w.WriteHeader(http.StatusNotModified)
		return true
	}
	return false
}

// writeDaily writes d and the unique visitors u of the same days as
// JSON: {"key":…,"days":[{"date":…,"count":N,"unique":U},…]}.
func (s *Server) writeDaily(w http.ResponseWriter, r *http.Request, key string, d store.Daily, u []uint64) int {
	var b bytes.Buffer
	b.WriteString(`{"key":`)
	b.Write(appendJSON(nil, key))
	b.WriteString(`,"days":[`)
	first := d.Last.AddDate(0, 0, -(len(d.Counts) - 1))
	for i, n := range d.Counts {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(`{"date":"`)
		b.WriteString(first.AddDate(0, 0, i).Format("2006-01-02"))
		b.WriteString(`","count":`)
		b.WriteString(strconv.FormatUint(n, 10))
		b.WriteString(`,"unique":`)
		b.WriteString(strconv.FormatUint(u[i], 10))
		b.WriteByte('}')
	}
	b.WriteString("]}\n")
	h := w.Header()
	h["Content-Type"] = ctJSON
	h["Access-Control-Allow-Origin"] = anyOrigin
	setNoCache(h)
	if etagMatches(w, r, b.Bytes()) {
		return http.StatusNotModified
	}
	w.Write(b.Bytes())
	return http.StatusOK
}
