package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"visitors/internal/httperr"
	"visitors/internal/store"
)

// badRequest is a 400 with the message format makes.
func badRequest(format string, args ...any) *httperr.HTTPError {
	return &httperr.HTTPError{Code: http.StatusBadRequest, Msg: fmt.Sprintf(format, args...)}
}

var errNotFound = &httperr.HTTPError{Code: http.StatusNotFound, Msg: "no such API path; see docs/api.md, the owner API"}

// fail answers err as JSON. An error that is not an *httperr.HTTPError is a 503
// whose cause goes to the log.
func (h *Handler) fail(w http.ResponseWriter, r *http.Request, err error) {
	var e *httperr.HTTPError
	if !errors.As(err, &e) {
		e = &httperr.HTTPError{Code: http.StatusServiceUnavailable, Msg: "the counter store is unavailable; try again", Err: err}
	}
	if e.Code >= 500 {
		h.c.Log.Error().Err(e).Str("method", r.Method).Str("path", r.URL.Path).Msg("api call failed")
	}
	e.SetHeader(w.Header())
	writeJSON(w, e.Code, struct {
		Error string `json:"error"`
	}{e.Msg})
}

// writeJSON answers v as indented JSON with status code.
func writeJSON(w http.ResponseWriter, code int, v any) {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil { // only our own types are written: a bug
		panic(fmt.Sprintf("api: marshal %T: %v", v, err))
	}
	w.Header()["Content-Type"] = []string{"application/json"}
	w.WriteHeader(code)
	w.Write(append(b, '\n'))
}

// unescape decodes a percent-encoded path segment.
func unescape(s string) (string, error) {
	v, err := url.PathUnescape(s)
	if err != nil {
		return "", badRequest("the path is not valid percent-encoding")
	}
	return v, nil
}

// unescapeKey decodes the key of /api/v1/counters/{key}: the rest of
// the path, '/' included, percent-decoded. The empty key is addressed
// with the key parameter instead (see getKey).
func unescapeKey(s string) (string, error) {
	k, err := unescape(s)
	if err != nil {
		return "", err
	}
	if !store.ValidKey([]byte(k)) {
		return "", errKey
	}
	return k, nil
}

var errKey = badRequest("a key must be at most %d bytes of valid UTF-8", store.MaxKeyBytes)

// parseQuery parses a raw query strictly: valid encoding, no parameter
// twice.
func parseQuery(raw string) (map[string][]string, error) {
	q, err := url.ParseQuery(raw)
	if err != nil {
		return nil, badRequest("the query is not valid URL encoding")
	}
	for k, v := range q {
		if len(v) > 1 {
			return nil, badRequest("parameter %q given %d times", k, len(v))
		}
	}
	return q, nil
}

// rootOnly refuses a call not made by the root token, then a query
// parameter not in names.
func (c *call) rootOnly(names ...string) error {
	if !c.who.root {
		return errRootOnly
	}
	return c.only(names...)
}

// only refuses a query parameter not in names.
func (c *call) only(names ...string) error {
	for k := range c.query {
		if !slices.Contains(names, k) {
			if len(names) == 0 {
				return badRequest("unknown parameter %q: this call takes none", k)
			}
			return badRequest("unknown parameter %q: this call takes %s", k, strings.Join(names, ", "))
		}
	}
	return nil
}

// param1 returns query parameter name and whether it was given.
func (c *call) param1(name string) (string, bool) {
	v, ok := c.query[name]
	if !ok {
		return "", false
	}
	return v[0], true
}

// keyParam returns the value of parameter name, which must be a valid
// key.
func (c *call) keyParam(name string) (string, bool, error) {
	v, ok := c.param1(name)
	if ok && !store.ValidKey([]byte(v)) {
		return "", false, badRequest("parameter %s: a key must be at most %d bytes of valid UTF-8", name, store.MaxKeyBytes)
	}
	return v, ok, nil
}

// intParam returns parameter name as a whole number from 1 to hi, or def.
func (c *call) intParam(name string, def, hi int) (int, error) {
	v, ok := c.param1(name)
	if !ok {
		return def, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 || n > hi {
		return 0, badRequest("parameter %s: want a whole number from 1 to %d", name, hi)
	}
	return n, nil
}

// boolParam returns parameter name as true or false; absent is false.
func (c *call) boolParam(name string) (bool, error) {
	switch v, _ := c.param1(name); v {
	case "", "false":
		return false, nil
	case "true":
		return true, nil
	}
	return false, badRequest("parameter %s: want true or false", name)
}

// body reads a JSON object of at most MaxBodyBytes into fields: each
// name of the object must be one of fields', spelled exactly, given
// once, and its value not null; dst[name] is set to the raw value. It
// refuses a Content-Type other than application/json (415), a longer
// body (413), anything after the object, and invalid JSON.
func (c *call) body(fields ...string) (map[string]json.RawMessage, error) {
	mt, _, err := mime.ParseMediaType(c.r.Header.Get("Content-Type"))
	if err != nil || mt != "application/json" {
		return nil, &httperr.HTTPError{Code: http.StatusUnsupportedMediaType, Msg: "send the body as JSON, with Content-Type: application/json"}
	}
	b, err := io.ReadAll(http.MaxBytesReader(c.w, c.r.Body, MaxBodyBytes))
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return nil, &httperr.HTTPError{Code: http.StatusRequestEntityTooLarge, Msg: fmt.Sprintf("the body is larger than %d bytes", MaxBodyBytes)}
		}
		return nil, badRequest("the body could not be read")
	}
	if !utf8.Valid(b) {
		return nil, badRequest("the body is not valid UTF-8")
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	var m map[string]json.RawMessage
	if err := dec.Decode(&m); err != nil {
		return nil, badRequest("the body is not a JSON object: %s", jsonProblem(err))
	}
	if m == nil {
		return nil, badRequest("the body is not a JSON object")
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, badRequest("the body holds more than one JSON value")
	}
	if name, ok := twice(b); ok { // the map kept the last: refuse, not guess
		return nil, badRequest("field %q given twice", name)
	}
	for k, v := range m {
		if !slices.Contains(fields, k) {
			return nil, badRequest("unknown field %q: want %s", k, strings.Join(fields, ", "))
		}
		if string(v) == "null" {
			return nil, badRequest("field %q is null", k)
		}
	}
	return m, nil
}

// twice returns the first name that JSON object b, already decoded
// without error, gives twice.
func twice(b []byte) (string, bool) {
	dec := json.NewDecoder(bytes.NewReader(b))
	if _, err := dec.Token(); err != nil { // {
		return "", false
	}
	seen := map[string]bool{}
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return "", false
		}
		name, _ := t.(string)
		if seen[name] {
			return name, true
		}
		seen[name] = true
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			return "", false
		}
	}
	return "", false
}

// jsonProblem describes a JSON decoding error without Go's type names.
func jsonProblem(err error) string {
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &se):
		return fmt.Sprintf("invalid JSON at byte %d", se.Offset)
	case errors.As(err, &te):
		return fmt.Sprintf("a JSON %s where an object is wanted", te.Value)
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return "it ends early"
	}
	return "invalid JSON"
}

// field decodes raw into dst, or answers 400 naming field and want.
func field(raw json.RawMessage, name, want string, dst any) error {
	if err := json.Unmarshal(raw, dst); err != nil {
		return badRequest("field %q: want %s", name, want)
	}
	return nil
}

// checkName refuses a token name that is empty, too long, not UTF-8 or
// holds a control character.
func checkName(name string) error {
	if name == "" || len(name) > MaxNameBytes || !utf8.ValidString(name) {
		return badRequest("field \"name\": want 1 to %d bytes of UTF-8", MaxNameBytes)
	}
	for _, r := range name {
		if unicode.IsControl(r) {
			return badRequest("field \"name\": no control characters")
		}
	}
	return nil
}
