package api

import (
	"bytes"
	"context"
	"testing"

	"visitors/internal/golden"
	"visitors/internal/store/storetest"
)

// TestRoutingAsWritten sends the paths a router is tempted to read
// otherwise, with and without open creation, and compares every answer
// with testdata/routing.golden: a path is routed as it is written,
// never cleaned or redirected (a key may hold "//", "." and ".."
// segments; "counters//add" adds to the empty key), a percent-encoded
// letter or slash is not the path's own (c%6Funters is no path,
// a%2Fadd a key), HEAD is refused as every method a path does not
// take, with the path's own Allow, and every answer is JSON.
func TestRoutingAsWritten(t *testing.T) {
	targets := []string{
		"/api/v1", "/api/v1/", "/api/v1//counters", "/api/v1/./counters", "/api/v1/x/../counters", "/api/v1/c%6Funters",
		"/api/v1/counters", "/api/v1/counters/", "/api/v1/counters?key=a", "/api/v1/counters/?key=a//b",
		"/api/v1/counters/a//b", "/api/v1/counters/a/./b", "/api/v1/counters/a/../b", "/api/v1/counters/..", "/api/v1/counters/.",
		"/api/v1/counters//", "/api/v1/counters/a/", "/api/v1/counters/%2E%2E", "/api/v1/counters/a%2Fb",
		"/api/v1/counters/%FF", "/api/v1/counters/add", "/api/v1/counters//add?key=", "/api/v1/counters/a%2Fadd",
		"/api/v1/counters/a/add", "/api/v1/counters/a/add/", "/api/v1/counters/a//add", "/api/v1/counters/a/%61dd",
		"/api/v1/tokens", "/api/v1/tokens/", "/api/v1/tokens/.", "/api/v1/tokens/..", "/api/v1/tokens/a/b", "/api/v1/tokens//",
		"/api/v1/tokens/%2F", "/api/v1/tokens/x/", "/api/v1/export", "/api/v1/export/", "/api/v1/import", "/api/v1/imp%6Frt",
	}
	for _, open := range []bool{false, true} {
		e := newEnv(t, 0, func(c *Config) { c.OpenCreate, c.NoFailureLimit = open, true })
		// Keys no badge shows are made as /hello makes them: the API
		// makes only keys a badge can show, and changes any that exists.
		for _, k := range []string{"a//b", "a/./b", "a/../b", "..", ".", "/", "a/", "a/b", "a", "add", "a/add", "a//add"} {
			if _, err := e.st.Set(context.Background(), []byte(k), 1); err != nil {
				t.Fatalf("set %q: %v", k, err)
			}
		}
		if _, err := e.st.Set(context.Background(), nil, 0); err != nil { // the empty key, which /hello makes
			t.Fatal(err)
		}
		var out bytes.Buffer
		for _, target := range targets {
			for _, m := range []string{"GET", "HEAD", "POST", "PATCH"} {
				token, body := "root", ""
				if m == "POST" && open {
					token = ""
				}
				if m == "POST" && !open {
					body = `{"n":1}`
				}
				s := step{title: map[bool]string{false: "closed", true: "open"}[open], method: m, target: target, token: token, body: body}
				transcribe(t, &out, s, e.do(s.method, s.target, s.token, s.body))
			}
		}
		name := map[bool]string{false: "testdata/routing.golden", true: "testdata/routing-open.golden"}[open]
		golden.Check(t, name, []byte(storetest.Undated(out.String())))
	}
}
