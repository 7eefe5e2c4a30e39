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
	"visitors/internal/httperr"
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
	svgCSP       = []string{"default-src 'none'; style-src 'unsafe-inline'"}
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
// returning the client's error if it is bad. A request with no query,
// the load test's and a plain README badge's, takes the defaults parsed
// once: emptyQuery.
func parseCounterQuery(sc *scratch, q string) (cq counterQuery, herr *httperr.HTTPError) {
	if q == "" {
		return emptyQuery(), nil
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
	cq, herr := parseQuery(&sc, "")
	if herr != nil {
		panic("the empty query is refused: " + herr.Msg)
	}
	return cq
})

// The client errors of a bad /counter/ query. An error badge shows the
// parameter and what it takes, as the message does; a color's are made
// by [colorError].
var (
	errCount       = badRequest(msgCount, "count must be true or false")
	errAbbr        = badRequest(msgAbbr, "abbreviated must be true or false")
	errShow        = badRequest(msgShow, "show must be total, today or unique")
	errDays        = badRequest(msgDays, fmt.Sprintf("days must be 1 to %d", store.MaxDays))
	errLabel       = badRequest(msgLabel, fmt.Sprintf("label must be at most %d characters", MaxLabelRunes))
	errQueryEscape = badRequest(msgEscape, "query is not valid URL encoding")
	errStyle       = badRequest("Optional "+badge.ErrStyle.Error(), badge.ErrStyle.Error())
)

// colorError returns the client's error for the bad color parameter key
// (color, label_color, labelColor, logo_color or logoColor).
func colorError(key string) *httperr.HTTPError {
	return badRequest("Optional "+key+": "+badge.ErrColor.Error(), key+" must be a color name or 3 or 6 hex digits")
}

// parseQuery is parseCounterQuery without the shortcut.
func parseQuery(sc *scratch, q string) (cq counterQuery, herr *httperr.HTTPError) {
	var ok bool
	if cq.count, ok = boolParam(q, "count", true); !ok {
		return cq, errCount
	}
	if cq.abbreviated, ok = boolParam(q, "abbreviated", false); !ok {
		return cq, errAbbr
	}
	switch v, _ := queryValue(q, "show"); v {
	case "", "total":
	case "today":
		cq.today = true
	case "unique":
		cq.unique = true
	default:
		return cq, errShow
	}
	cq.days = defaultDays
	if v, found := queryValue(q, "days"); found {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > store.MaxDays {
			return cq, errDays
		}
		cq.days = n
	}

	label, found := queryValue(q, "label")
	if len(label) > 4*3*MaxLabelRunes {
		return cq, errLabel
	}
	var err error
	if sc.label, err = appendUnescape(sc.label[:0], label); err != nil {
		return cq, errQueryEscape
	}
	if !found {
		sc.label = append(sc.label[:0], defaultText...)
	}
	if !utf8.Valid(sc.label) || utf8.RuneCount(sc.label) > MaxLabelRunes {
		return cq, errLabel
	}
	cq.b.Label = sc.label

	cq.b.Color, herr = parseColorParam(&sc.color, q, "color", "", defaultColor)
	if herr != nil {
		return cq, herr
	}
	cq.b.LabelColor, herr = parseColorParam(&sc.labelColor, q, "label_color", "labelColor", defaultLabel)
	if herr != nil {
		return cq, herr
	}
	style, _ := queryValue(q, "style")
	if cq.b.Style, err = badge.ParseStyle([]byte(style)); err != nil {
		return cq, errStyle
	}
	return cq, parseLogo(sc, q, &cq.b)
}

// parseColorParam parses a badge color parameter into *buf: key, or, if
// it is absent, its shields.io spelling alias ("" for none).
func parseColorParam(buf *[]byte, q, key, alias string, def []byte) ([]byte, *httperr.HTTPError) {
	raw, found := queryValue(q, key)
	if !found && alias != "" {
		raw, found = queryValue(q, alias)
		key = alias
	}
	if !found || raw == "" {
		return def, nil
	}
	if len(raw) > 3*32 {
		return nil, colorError(key)
	}
	var tmp [96]byte
	name, err := appendUnescape(tmp[:0], raw)
	if err != nil {
		return nil, errQueryEscape
	}
	c, err := badge.AppendColor((*buf)[:0], name)
	*buf = c
	if err != nil {
		return nil, colorError(key)
	}
	return c, nil
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
	cq, herr := parseCounterQuery(sc, r.URL.RawQuery)
	if herr != nil {
		return s.fail(w, r, svg, herr)
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
// image proxy would otherwise cache a badge and its count. It forbids
// browsers to sniff it as anything else, and gives it a Content-Security-
// Policy that lets it load and run nothing (an SVG opened as a document
// could otherwise run script): its own inline style, the graph's dark
// theme, is all it needs.
func setImageHeaders(h http.Header) {
	h["Content-Type"] = ctSVG
	h["X-Content-Type-Options"] = nosniff
	h["Content-Security-Policy"] = svgCSP
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
	h["X-Content-Type-Options"] = nosniff
	h["Access-Control-Allow-Origin"] = anyOrigin
	setNoCache(h)
	if etagMatches(w, r, b.Bytes()) {
		return http.StatusNotModified
	}
	w.Write(b.Bytes())
	return http.StatusOK
}
