package web

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"visitors/internal/httperr"
)

// msgCounterParams lists the parameters of the /counter/ routes, for the
// message of an unknown one.
const msgCounterParams = "the counter routes take label, color, label_color (or labelColor), style, logo, logo_color (or logoColor), abbreviated, show, count and days (and shields.io's cacheSeconds and link, which change nothing here)"

// maxShownParam is the most bytes of an unknown parameter's name an error
// badge shows; the message quotes it whole.
const maxShownParam = 32

// counterParam reports whether name is a parameter of the /counter/
// routes. Every route under /counter/ takes them all, as it did before
// unknown ones were refused. shields.io's cacheSeconds and link are
// taken and change nothing, so that a badge URL copied from shields.io
// works: a counter's badge is never cached (Cache-Control: no-cache),
// and an image in a README follows no link of its own.
func counterParam(name string) bool {
	switch name {
	case "count", "abbreviated", "show", "days", "label", "color",
		"label_color", "labelColor", "style", "logo", "logo_color", "logoColor",
		"cacheSeconds", "link":
		return true
	}
	return false
}

// msgTopParams lists the parameters of /top.json, for the message of an
// unknown one.
const msgTopParams = "/top.json takes days and limit"

// topParam reports whether name is a parameter of /top.json.
func topParam(name string) bool { return name == "days" || name == "limit" }

// paramSet names the parameters a route takes.
type paramSet int

// The routes' parameter sets.
const (
	counterParams paramSet = iota // the /counter/ routes' ([counterParam])
	topParams                     // /top.json's ([topParam])
)

// has reports whether name is in p. It is a switch, not a func value, so
// that a name unescaped into a buffer on the stack stays there.
func (p paramSet) has(name string) bool {
	if p == topParams {
		return topParam(name)
	}
	return counterParam(name)
}

// unknownCounterParam returns the name, still escaped, of the first
// parameter of query q that the /counter/ routes do not take, and
// whether there is one. Empty pairs ("a=1&&b=2") are no parameter, as
// for url.ParseQuery. It allocates nothing.
func unknownCounterParam(q string) (string, bool) { return unknownParamIn(q, counterParams) }

// unknownParamIn returns the name, still escaped, of the first parameter
// of query q that known does not hold, and whether there is one, as
// [unknownCounterParam] does for the /counter/ routes. It allocates
// nothing.
func unknownParamIn(q string, known paramSet) (string, bool) {
	for q != "" {
		var pair string
		pair, q, _ = strings.Cut(q, "&")
		if pair == "" {
			continue
		}
		k := pair
		if i := strings.IndexByte(pair, '='); i >= 0 {
			k = pair[:i]
		}
		if known.has(k) {
			continue
		}
		if strings.IndexByte(k, '%') < 0 && strings.IndexByte(k, '+') < 0 {
			return k, true
		}
		var buf [64]byte // longer than any parameter's name, escaped
		if len(k) > len(buf) {
			return k, true
		}
		u, err := appendUnescape(buf[:0], k)
		if err != nil || !known.has(string(u)) {
			return k, true
		}
	}
	return "", false
}

// unknownParam returns the client's error for the unknown parameter
// whose escaped name is raw: its message quotes the name, in ASCII, and
// its badge shows at most [maxShownParam] bytes of it, which the badge
// escapes as any text.
func unknownParam(raw string) *httperr.HTTPError {
	return unknownParamOf(raw, msgCounterParams)
}

// unknownParamOf is [unknownParam] for a route whose parameters the
// message params lists.
func unknownParamOf(raw, params string) *httperr.HTTPError {
	name := raw
	if u, err := appendUnescape(nil, raw); err == nil {
		name = string(u)
	}
	shown := name
	if len(shown) > maxShownParam {
		cut := maxShownParam
		for cut > 0 && !utf8.RuneStart(shown[cut]) {
			cut--
		}
		shown = shown[:cut] + "…"
	}
	return badRequest(fmt.Sprintf("Unknown parameter %+q: %s", name, params), "unknown parameter "+shown)
}
