package api

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// FuzzAPI sends any method, path under /api/v1/, query, body and
// Content-Type, as the root token, a scoped token, an exact one (open
// creation's, on), a wrong one or none:
// the answer is never a 5xx (but the 501 of export and import on the
// memory store), never a panic, always JSON, and a refused call changes
// nothing the store holds.
func FuzzAPI(f *testing.F) {
	seeds := []struct {
		method, path, body string
		who, ct            uint8
	}{
		{"GET", "counters", "", 0, 0},
		{"GET", "counters?prefix=a/&after=&limit=2", "", 1, 0},
		{"PUT", "counters/a/b", `{"total":5,"locked":true}`, 1, 0},
		{"PUT", "counters/?key=", `{"total":5}`, 0, 0},
		{"PUT", "counters/a%2Fc", `{"total":18446744073709551615}`, 1, 0},
		{"PUT", "counters/a/d", `{"locked":false,"x":1}`, 1, 1},
		{"DELETE", "counters/a/b", "", 1, 0},
		{"DELETE", "counters/z", "", 1, 0},
		{"POST", "tokens", `{"name":"n","prefix":"p"}`, 0, 0},
		{"POST", "tokens", `{"name":"n","prefix":""}`, 0, 0},
		{"DELETE", "tokens/0cd87274d67084ca", "", 0, 0},
		{"GET", "tokens", "", 2, 0},
		{"POST", "import?replace=true", `{"format":"visitors-export-1","hits":1,"keys":[]}`, 0, 2},
		{"GET", "export", "", 0, 0},
		{"PUT", "counters/%C3%A9%00", "{\"total\":1}\n", 0, 0},
		{"PUT", "counters/a/e", `{"total":1}{}`, 1, 0},
		{"POST", "counters/new/key", "", 4, 2},
		{"POST", "counters/o", "", 4, 2},
		{"POST", "counters/new%2Fadd", "", 4, 2},
		{"POST", "counters/o?key=o", "", 4, 2},
		{"POST", "counters/o", "", 0, 2},
		{"POST", "counters/o/add", `{"n":-3}`, 2, 0},
		{"POST", "counters/o/add", `{"n":9223372036854775807}`, 2, 0},
		{"POST", "counters/o/add", `{"n":-9223372036854775808}`, 0, 0},
		{"POST", "counters/ob/add", `{"n":1}`, 2, 0},
		{"POST", "counters//add?key=", `{"n":1}`, 0, 0},
		{"POST", "counters/a/b/add", `{"n":1e3}`, 1, 0},
		{"POST", "counters/a/b/add", `{"n":1,"n":2}`, 1, 0},
		{"POST", "counters/add", `{"n":1}`, 1, 0},
	}
	for _, s := range seeds {
		f.Add(s.method, s.path, []byte(s.body), s.who, s.ct)
	}
	e := newEnv(f, 50, func(c *Config) { c.NoFailureLimit, c.OpenCreate = true, true })
	w := e.do("POST", "/api/v1/tokens", "root", `{"name":"a","prefix":"a/"}`)
	var nt NewToken
	if err := json.Unmarshal(w.Body.Bytes(), &nt); err != nil {
		f.Fatalf("make a token: %d %s", w.Code, w.Body)
	}
	w = e.do("POST", "/api/v1/counters/o", "", "")
	var oc Created
	if err := json.Unmarshal(w.Body.Bytes(), &oc); err != nil {
		f.Fatalf("create o: %d %s", w.Code, w.Body)
	}
	o := "o"
	auths := []string{"Bearer " + rootSecret, "Bearer " + nt.Token, "Bearer " + oc.Token.Token, "Bearer vt_wrong", "", "Bearer vt_" + oc.Token.ID + ".wrong"}
	cts := []string{"application/json", "text/plain", "", "application/json; charset=utf-8"}
	f.Fuzz(func(t *testing.T, method, path string, body []byte, who, ct uint8) {
		var raw bytes.Buffer
		fmt.Fprintf(&raw, "%s /api/v1/%s HTTP/1.1\r\nHost: visitors\r\nContent-Length: %d\r\n", method, path, len(body))
		if a := auths[int(who)%len(auths)]; a != "" {
			fmt.Fprintf(&raw, "Authorization: %s\r\n", a)
		}
		if c := cts[int(ct)%len(cts)]; c != "" {
			fmt.Fprintf(&raw, "Content-Type: %s\r\n", c)
		}
		raw.WriteString("\r\n")
		raw.Write(body)
		r, err := http.ReadRequest(bufio.NewReader(&raw))
		if err != nil || r.Method != method || !strings.HasPrefix(r.URL.Path, Prefix) {
			return // net/http answers 400 itself, or it is another request
		}
		r.RemoteAddr = "192.0.2.1:1"
		before, beforeButO := snapshot(t, e.st), snapshotBut(t, e.st, &o)
		w := httptest.NewRecorder()
		e.h.ServeHTTP(w, r)
		backup := strings.HasPrefix(r.URL.Path, "/api/v1/export") || strings.HasPrefix(r.URL.Path, "/api/v1/import")
		if w.Code >= 500 && !(w.Code == http.StatusNotImplemented && backup) {
			t.Fatalf("%s %s %q = %d %s", method, path, body, w.Code, w.Body)
		}
		if !json.Valid(w.Body.Bytes()) || w.Header().Get("Content-Type") != "application/json" {
			t.Fatalf("%s %s %q = %d, not JSON: %q", method, path, body, w.Code, w.Body)
		}
		if w.Code >= 400 {
			if after := snapshot(t, e.st); after != before {
				t.Fatalf("%s %s %q = %d changed the store:\nbefore %s\nafter  %s", method, path, body, w.Code, before, after)
			}
		}
		// The exact token changes o alone.
		if int(who)%len(auths) == 2 {
			if after := snapshotBut(t, e.st, &o); after != beforeButO {
				t.Fatalf("%s %s %q as o's token = %d changed more than o:\nbefore %s\nafter  %s", method, path, body, w.Code, beforeButO, after)
			}
		}
	})
}
