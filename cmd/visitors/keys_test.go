package main

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"visitors/internal/servertest"
)

// TestKeyNotARoute: no key is two things (issue 23, item 9). A key whose
// last segment is the name of a route below a key (ns/graph: the path
// /counter/ns/graph.svg is the graph of ns) is refused with a 400 that
// names the rule at every entry point: the badge and its JSON, /hello,
// the owner API, open creation and the import; and nothing is counted
// or created. Before the rule, open creation answered 201 for ns/graph
// and the badge counted ns/daily.
func TestKeyNotARoute(t *testing.T) {
	p := servertest.Start(t, bin, openEnv, "-data", t.TempDir())
	const rule = "last segment"
	for _, key := range []string{"ns/graph", "ns/daily", "ns/stream", "a/b/graph"} {
		tests := []struct {
			name, method, path, token, body string
		}{
			{"badge", "GET", "/counter/" + key + ".svg", "", ""},
			{"json", "GET", "/counter/" + key + ".json", "", ""},
			{"hello", "GET", "/hello?name=" + key, "", ""},
			{"owner set", "PUT", counterPath(key), apiRoot, `{"total":5}`},
			{"owner add", "POST", counterPath(key) + "/add", apiRoot, `{"n":5}`},
			{"owner set by parameter", "PUT", "/api/v1/counters/?key=" + key, apiRoot, `{"total":5}`},
			{"open creation", "POST", counterPath(key), "", ""},
			{"import", "POST", "/api/v1/import", apiRoot, `{"format":"visitors-export-1","hits":0,"keys":[{"key":"ok","total":1},{"key":"` + key + `","total":1}]}`},
		}
		for _, tt := range tests {
			if strings.HasSuffix(tt.path, "/graph.svg") || strings.HasSuffix(tt.path, "/daily.json") {
				continue // the route of ns: the reason for the rule
			}
			r := apiDo(t, p, tt.method, tt.path, tt.token, tt.body)
			want := rule
			if strings.HasSuffix(tt.path, ".svg") {
				want = "key ends in a route name" // a badge, short
			}
			if r.code != 400 || !strings.Contains(r.body, want) || !strings.Contains(r.body, "graph") && want == rule {
				t.Errorf("%s %q: %s %s = %d %q, want 400 naming the rule", tt.name, key, tt.method, tt.path, r.code, r.body)
			}
		}
		// A stream that is served never ends: its first bytes, or the
		// refusal, within a deadline.
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		req, err := http.NewRequestWithContext(ctx, "GET", p.URL("/counter/"+key+"/stream"), nil)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatalf("GET /counter/%s/stream: %v", key, err)
		}
		var first [512]byte
		n, _ := resp.Body.Read(first[:])
		resp.Body.Close()
		cancel()
		if resp.StatusCode != 400 || !strings.Contains(string(first[:n]), rule) {
			t.Errorf("stream %q = %d %q, want 400 naming the rule", key, resp.StatusCode, first[:n])
		}
	}
	if list := listAll(t, p, apiRoot); len(list) != 0 {
		t.Errorf("after the refusals the store holds %+v, want nothing", list)
	}
	// Keys that only look alike are keys: a route name not last, or
	// part of a segment.
	for _, key := range []string{"graph/ns", "ns/graphs", "ns/my-daily", "ns/stream.x"} {
		mustCreate(t, p, key)
		if code, _, body := mustGet(t, p.URL("/counter/"+key+".json")); code != 200 || !strings.Contains(body, `"total":1`) {
			t.Errorf("GET /counter/%s.json = %d %s, want 200 and a visit", key, code, body)
		}
	}
}
