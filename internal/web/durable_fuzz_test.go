package web

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"visitors/internal/store/boltstore"
)

// FuzzVisitsReachDisk feeds names and counter keys through the web layer
// into a real embedded store: every visit the handler acknowledged (200)
// must be on disk after Close and a reopen, exactly, and nothing it
// refused may be. CI runs it for a short -fuzztime; its seeds run with
// every go test.
func FuzzVisitsReachDisk(f *testing.F) {
	for _, seed := range [][2]string{
		{"", "a"},
		{"%00", "a/b"},
		{"%C3%A9t%C3%A9", "octocat/hello-world"},
		{strings.Repeat("n", MaxNameBytes), strings.Repeat("k", MaxKeyBytes)},
		{"%FF", "../x"},
		{"a+b%2Fc", "a//b"},
		{"%e2%80%ae", "."},
	} {
		f.Add(seed[0], seed[1])
	}
	f.Fuzz(func(t *testing.T, name, key string) {
		dir := t.TempDir()
		open := func() *boltstore.Store {
			st, err := boltstore.Open(boltstore.Options{Dir: dir, FlushInterval: time.Hour})
			if err != nil {
				t.Fatal(err)
			}
			return st
		}
		st := open()
		s := New(Config{Store: st})
		want := map[string]uint64{}
		visit := func(target string, keyOf func(r *http.Request) string) {
			r, err := http.NewRequest("GET", target, nil)
			if err != nil {
				return // not a request a client could send
			}
			w := httptest.NewRecorder()
			s.ServeHTTP(w, r)
			switch {
			case w.Code == 200:
				want[keyOf(r)]++
			case w.Code >= 500:
				t.Fatalf("GET %q = %d %q", target, w.Code, w.Body)
			}
		}
		for range 2 {
			visit("/hello?name="+name, func(r *http.Request) string {
				n, _ := appendUnescape(nil, queryValueOf(r, "name"))
				return string(n)
			})
			visit("/counter/"+key+".json", func(r *http.Request) string {
				return strings.TrimSuffix(strings.TrimPrefix(r.URL.Path, "/counter/"), ".json")
			})
		}
		if err := st.Close(); err != nil {
			t.Fatalf("Close: %v", err)
		}
		st = open()
		defer st.Close()
		for k, n := range want {
			c, err := st.Get(context.Background(), []byte(k))
			if err != nil || c.Total != n {
				t.Errorf("after reopening, key %q = %d (%v), want %d acknowledged visits", k, c.Total, err, n)
			}
		}
		if st.Keys() != len(want) {
			t.Errorf("after reopening, %d keys, want %d: a refused visit was counted", st.Keys(), len(want))
		}
	})
}

// queryValueOf is queryValue on r's raw query.
func queryValueOf(r *http.Request, key string) string {
	v, _ := queryValue(r.URL.RawQuery, key)
	return v
}
