package dashboard

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"

	"visitors/internal/httperr"
)

// apiAnswer is the API's answer to one call: its status, headers and
// body.
type apiAnswer struct {
	code int
	h    http.Header
	body bytes.Buffer
}

func (a *apiAnswer) Header() http.Header { return a.h }
func (a *apiAnswer) Write(p []byte) (int, error) {
	if a.code == 0 {
		a.code = http.StatusOK
	}
	return a.body.Write(p)
}
func (a *apiAnswer) WriteHeader(code int) {
	if a.code == 0 {
		a.code = code
	}
}

// err returns the API's refusal as an HTTPError with its message, or
// nil for a 2xx.
func (a *apiAnswer) err() error {
	if a.code >= 200 && a.code < 300 {
		return nil
	}
	var e struct {
		Error string `json:"error"`
	}
	if json.Unmarshal(a.body.Bytes(), &e) != nil || e.Error == "" {
		e.Error = http.StatusText(a.code)
	}
	he := &httperr.HTTPError{Code: a.code, Msg: e.Error}
	if ra := a.h.Get("Retry-After"); ra != "" {
		he.Header = http.Header{"Retry-After": {ra}}
	}
	return he
}

// callAPI makes the API call method path (with its query) with the
// session's token and body (JSON if not an io.Reader, none if nil), as
// rq's client: the API's checks, scopes, limits and audit lines are the
// dashboard's. The answer is buffered; w, if set, gets it instead, as
// it streams (an export).
func (h *Handler) callAPI(ctx context.Context, rq *request, method, path string, body any) (*apiAnswer, error) {
	var r io.Reader
	switch b := body.(type) {
	case nil:
	case io.Reader:
		r = b
	default:
		j, err := json.Marshal(b)
		if err != nil {
			return nil, fmt.Errorf("encode the call: %w", err)
		}
		r = bytes.NewReader(j)
	}
	req, err := http.NewRequestWithContext(ctx, method, path, r)
	if err != nil {
		return nil, fmt.Errorf("make the call %s %s: %w", method, path, err)
	}
	req.RemoteAddr = rq.r.RemoteAddr
	for _, k := range []string{"X-Forwarded-For", "Forwarded", "X-Real-Ip"} { // the client, as the API's limit on failures names it
		if v, ok := rq.r.Header[k]; ok {
			req.Header[k] = v
		}
	}
	req.Header.Set("Authorization", "Bearer "+rq.s.secret)
	if r != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	a := &apiAnswer{h: make(http.Header)}
	h.c.API.ServeHTTP(a, req)
	if a.code == 0 {
		a.code = http.StatusOK
	}
	return a, a.err()
}

// counterPath is the API's path of key: any key, the empty one
// included, as the key parameter.
func counterPath(key, suffix string) string {
	return "/api/v1/counters/" + suffix + "?key=" + url.QueryEscape(key)
}
