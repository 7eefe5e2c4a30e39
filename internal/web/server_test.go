package web

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"visitors/internal/race"
	"visitors/internal/servertest"
	"visitors/internal/store"
	"visitors/internal/store/memstore"
	"visitors/internal/store/storetest"
	"visitors/internal/webtest"
)

func TestHi(t *testing.T) {
	tests := []struct {
		name     string
		target   string
		wantCode int
		wantBody string // %d is this visit's number
	}{
		{"no color", "/hi", 200, "<h1 style='color: '>Welcome!</h1>You are visitor number %d!"},
		{"color", "/hi?color=red", 200, "<h1 style='color: red'>Welcome!</h1>You are visitor number %d!"},
		{"word chars", "/hi?color=Dark_Blue2", 200, "<h1 style='color: Dark_Blue2'>Welcome!</h1>You are visitor number %d!"},
		{"escaped word chars", "/hi?color=%72ed", 200, "<h1 style='color: red'>Welcome!</h1>You are visitor number %d!"},
		{"empty color", "/hi?color=", 200, "<h1 style='color: '>Welcome!</h1>You are visitor number %d!"},
		{"first color wins", "/hi?color=red&color=<b>", 200, "<h1 style='color: red'>Welcome!</h1>You are visitor number %d!"},
		{"other params ignored", "/hi?x=<b>&color=red", 200, "<h1 style='color: red'>Welcome!</h1>You are visitor number %d!"},
		{"64 bytes", "/hi?color=" + strings.Repeat("a", 64), 200, "<h1 style='color: " + strings.Repeat("a", 64) + "'>Welcome!</h1>You are visitor number %d!"},
		{"65 bytes", "/hi?color=" + strings.Repeat("a", 65), 400, msgColor},
		{"markup", "/hi?color=%3Cscript%3E", 400, msgColor},
		{"quote", "/hi?color=red'", 400, msgColor},
		{"unanchored trap", "/hi?color=x%3Cb%3Ered", 400, msgColor},
		{"space", "/hi?color=dark+blue", 400, msgColor},
		{"dash", "/hi?color=a-b", 400, msgColor},
		{"non-ascii", "/hi?color=%C3%A9", 400, msgColor},
		{"bad escape", "/hi?color=%zz", 400, msgColor},
		{"truncated escape", "/hi?color=ab%4", 400, msgColor},
	}
	s, st := mustServer(t, nil)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := mustHit(t, st) // takes one number itself
			w := get(t, s, "GET", tt.target)
			want := tt.wantBody
			if strings.Contains(want, "%d") {
				want = fmt.Sprintf(want, before+1)
			}
			if w.Code != tt.wantCode || w.Body.String() != want {
				t.Fatalf("GET %s = %d %q, want %d %q", tt.target, w.Code, w.Body, tt.wantCode, want)
			}
			wantCT := "text/html; charset=utf-8"
			if tt.wantCode != 200 {
				wantCT = "text/plain; charset=utf-8"
				if after := mustHit(t, st); after != before+1 {
					t.Errorf("a rejected /hi took a visitor number: %d then %d", before, after)
				}
			}
			if got := w.Header().Get("Content-Type"); got != wantCT {
				t.Errorf("Content-Type = %q, want %q", got, wantCT)
			}
		})
	}
}

func TestHello(t *testing.T) {
	tests := []struct {
		name     string
		target   string
		wantCode int
		wantBody string
	}{
		{"plain", "/hello?name=gopher", 200, "<h1 style='color: '>Welcome!</h1> <p>Name: gopher</p> <p>Count: 1</p>"},
		{"again", "/hello?name=gopher&color=blue", 200, "<h1 style='color: blue'>Welcome!</h1> <p>Name: gopher</p> <p>Count: 2</p>"},
		{"missing name", "/hello", 200, "<h1 style='color: '>Welcome!</h1> <p>Name: </p> <p>Count: 1</p>"},
		{"empty is missing", "/hello?name=", 200, "<h1 style='color: '>Welcome!</h1> <p>Name: </p> <p>Count: 2</p>"},
		{"script escaped", "/hello?name=%3Cscript%3Ealert(1)%3C/script%3E", 200,
			"<h1 style='color: '>Welcome!</h1> <p>Name: &lt;script&gt;alert(1)&lt;/script&gt;</p> <p>Count: 1</p>"},
		{"quotes escaped", "/hello?name=a'b%22c%26d", 200, "<h1 style='color: '>Welcome!</h1> <p>Name: a&#39;b&#34;c&amp;d</p> <p>Count: 1</p>"},
		{"plus is space", "/hello?name=Ada+Lovelace", 200, "<h1 style='color: '>Welcome!</h1> <p>Name: Ada Lovelace</p> <p>Count: 1</p>"},
		{"utf-8", "/hello?name=%E4%B8%96%E7%95%8C", 200, "<h1 style='color: '>Welcome!</h1> <p>Name: 世界</p> <p>Count: 1</p>"},
		{"128 bytes", "/hello?name=" + strings.Repeat("n", 128), 200, "<h1 style='color: '>Welcome!</h1> <p>Name: " + strings.Repeat("n", 128) + "</p> <p>Count: 1</p>"},
		{"129 bytes", "/hello?name=" + strings.Repeat("n", 129), 400, msgName},
		{"invalid utf-8", "/hello?name=%FF", 400, msgName},
		{"bad escape", "/hello?name=%G1", 400, msgNameEscape},
		{"bad color", "/hello?name=x&color=%3C", 400, msgColor},
	}
	s, st := mustServer(t, nil)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			keys := st.Keys()
			w := get(t, s, "GET", tt.target)
			if w.Code != tt.wantCode || w.Body.String() != tt.wantBody {
				t.Fatalf("GET %s = %d %q, want %d %q", tt.target, w.Code, w.Body, tt.wantCode, tt.wantBody)
			}
			if tt.wantCode != 200 && st.Keys() != keys {
				t.Errorf("a rejected /hello added a key: %d then %d", keys, st.Keys())
			}
		})
	}
}

func TestHelloLogsEachVisit(t *testing.T) {
	var out servertest.Buffer
	s, _ := mustServer(t, &out)
	get(t, s, "GET", "/hello?name=%22quoted%22")
	get(t, s, "GET", "/hello?name=%22quoted%22")
	deadline := time.Now().Add(5 * time.Second)
	for strings.Count(out.String(), "\n") < 2 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 2 {
		t.Fatalf("got %d log lines, want 2:\n%s", len(lines), out.String())
	}
	for i, l := range lines {
		var got struct {
			Level, Name, Message, Time string
			Count                      uint64
		}
		if err := json.Unmarshal([]byte(l), &got); err != nil {
			t.Fatalf("log line %q is not JSON: %v", l, err)
		}
		if got.Level != "info" || got.Name != `"quoted"` || got.Count != uint64(i+1) || got.Message != "visited" || got.Time == "" {
			t.Errorf("log line %d = %+v, want level info, name \"quoted\", count %d, message visited, a time", i, got, i+1)
		}
	}
}

func TestHeadCountsNothing(t *testing.T) {
	s, st := mustServer(t, nil)
	for _, target := range []string{"/hi", "/hello?name=h"} {
		if w := get(t, s, "HEAD", target); w.Code != 200 || w.Header().Get("Content-Type") != "text/html; charset=utf-8" {
			t.Errorf("HEAD %s = %d %q, want 200 text/html", target, w.Code, w.Header().Get("Content-Type"))
		}
	}
	if n := mustHit(t, st); n != 1 {
		t.Errorf("after HEAD /hi the next number is %d, want 1", n)
	}
	if c := mustCount(t, st, "h"); c.Total != 0 {
		t.Errorf("after HEAD /hello the count is %d, want 0", c.Total)
	}
}

func TestRouting(t *testing.T) {
	tests := []struct {
		method, target string
		wantCode       int
		wantAllow      string
	}{
		{"GET", "/nope", 404, ""},
		{"POST", "/", 405, "GET, HEAD"},
		{"GET", "/hi/", 404, ""},
		{"GET", "/HI", 404, ""},
		{"GET", "/debug/pprof/", 404, ""},
		{"POST", "/hi", 405, "GET, HEAD"},
		{"PUT", "/hello", 405, "GET, HEAD"},
		{"DELETE", "/whoami", 405, "GET, HEAD"},
		{"POST", "/nowhere", 404, ""},
	}
	s, st := mustServer(t, nil)
	for _, tt := range tests {
		w := get(t, s, tt.method, tt.target)
		if w.Code != tt.wantCode || w.Header().Get("Allow") != tt.wantAllow {
			t.Errorf("%s %s = %d Allow %q, want %d Allow %q", tt.method, tt.target, w.Code, w.Header().Get("Allow"), tt.wantCode, tt.wantAllow)
		}
	}
	if n := mustHit(t, st); n != 1 {
		t.Errorf("rejected methods counted visits: next number is %d, want 1", n)
	}
}

func TestWhoami(t *testing.T) {
	clock := storetest.At(0, "00:00")
	s := New(Config{
		Store:    memstore.New(memstore.Options{}),
		Hostname: "box-1",
		Now: func() time.Time { // each call 1.5µs after the last
			clock = clock.Add(1500 * time.Nanosecond)
			return clock
		},
	})
	tests := []struct {
		name, target, accept string
		wantCode             int
		wantCT, wantBody     string
	}{
		{"text", "/whoami", "", 200, "text/plain; charset=utf-8", "User-Agent: test/1.0\nHostname: box-1\nLatency: 1.5µs\n"},
		{"format json", "/whoami?format=json", "", 200, "application/json", `{"user_agent":"test/1.0","hostname":"box-1","client":"192.0.2.1","latency":"1.5µs","latency_ns":1500}` + "\n"},
		{"accept json", "/whoami", "text/html, application/json;q=0.9", 200, "application/json", `{"user_agent":"test/1.0","hostname":"box-1","client":"192.0.2.1","latency":"1.5µs","latency_ns":1500}` + "\n"},
		{"format text wins", "/whoami?format=text", "application/json", 200, "text/plain; charset=utf-8", "User-Agent: test/1.0\nHostname: box-1\nLatency: 1.5µs\n"},
		{"bad format", "/whoami?format=xml", "", 400, "text/plain; charset=utf-8", msgFormat},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := get(t, s, "GET", tt.target, "User-Agent", "test/1.0", "Accept", tt.accept)
			if w.Code != tt.wantCode || w.Body.String() != tt.wantBody || w.Header().Get("Content-Type") != tt.wantCT {
				t.Errorf("GET %s = %d %q %q, want %d %q %q", tt.target, w.Code, w.Header().Get("Content-Type"), w.Body, tt.wantCode, tt.wantCT, tt.wantBody)
			}
		})
	}
}

func TestWhoamiEscapesJSON(t *testing.T) {
	s := New(Config{Store: memstore.New(memstore.Options{}), Hostname: "h"})
	ua := "evil\"</script>\\ \x01 \xff ü"
	w := get(t, s, "GET", "/whoami?format=json", "User-Agent", ua)
	var got struct {
		UserAgent string `json:"user_agent"`
		LatencyNS int64  `json:"latency_ns"`
	}
	if err := json.Unmarshal(w.Body.Bytes(), &got); err != nil {
		t.Fatalf("body %q is not JSON: %v", w.Body, err)
	}
	if want := strings.ToValidUTF8(ua, "\ufffd"); got.UserAgent != want {
		t.Errorf("user_agent = %q, want %q", got.UserAgent, want)
	}
	if strings.ContainsAny(w.Body.String(), "<>") {
		t.Errorf("JSON body has raw markup: %s", w.Body)
	}
}

func TestTooManyNames(t *testing.T) {
	var logs servertest.Buffer
	s, _ := mustServer(t, &logs)
	st := memstore.New(memstore.Options{MaxKeys: 2})
	s.visits.Store = st
	for _, n := range []string{"a", "b"} {
		if w := get(t, s, "GET", "/hello?name="+n); w.Code != 200 {
			t.Fatalf("GET /hello?name=%s = %d, want 200", n, w.Code)
		}
	}
	w := get(t, s, "GET", "/hello?name=c")
	if w.Code != 503 || w.Body.String() != msgTooManyKeys {
		t.Errorf("new name past the limit = %d %q, want 503 %q", w.Code, w.Body, msgTooManyKeys)
	}
	if w := get(t, s, "GET", "/hello?name=a"); w.Code != 200 || !strings.HasSuffix(w.Body.String(), "<p>Count: 2</p>") {
		t.Errorf("known name past the limit = %d %q, want 200 with count 2", w.Code, w.Body)
	}
	if got := st.Keys(); got != 2 {
		t.Errorf("Keys() = %d, want 2", got)
	}
}

func TestStoreFailureIs503AndLogged(t *testing.T) {
	var logs servertest.Buffer
	s := New(Config{Store: failingStore{}, Log: zerolog.New(&logs)})
	for _, target := range []string{"/hi", "/hello?name=x"} {
		w := get(t, s, "GET", target)
		if w.Code != 503 || w.Body.String() != msgStore {
			t.Errorf("GET %s with a failing store = %d %q, want 503 %q", target, w.Code, w.Body, msgStore)
		}
		if strings.Contains(w.Body.String(), errBroken.Error()) {
			t.Errorf("GET %s leaked the cause to the client: %q", target, w.Body)
		}
	}
	if got := strings.Count(logs.String(), errBroken.Error()); got != 2 {
		t.Errorf("log has the cause %d times, want 2:\n%s", got, logs.String())
	}
}

// TestConcurrentVisitors drives the handler over real HTTP from 64
// goroutines and checks that /hi hands out every number 1..N exactly once
// and that /hello counts each name exactly.
func TestConcurrentVisitors(t *testing.T) {
	s, st := mustServer(t, nil)
	ts := httptest.NewServer(s)
	defer ts.Close()
	const goroutines, per, names = 64, 50, 8
	seen := make([]int, goroutines*per+1)
	var mu sync.Mutex
	var wg sync.WaitGroup
	errs := make(chan error, goroutines)
	for g := range goroutines {
		wg.Go(func() {
			var nums []int
			for range per {
				body, err := fetch(ts.URL + "/hi")
				if err != nil {
					errs <- err
					return
				}
				var n int
				if _, err := fmt.Sscanf(body[strings.LastIndex(body, " ")+1:], "%d!", &n); err != nil {
					errs <- fmt.Errorf("parse %q: %v", body, err)
					return
				}
				nums = append(nums, n)
				if _, err := fetch(fmt.Sprintf("%s/hello?name=n%d", ts.URL, g%names)); err != nil {
					errs <- err
					return
				}
			}
			mu.Lock()
			defer mu.Unlock()
			for _, n := range nums {
				if n < 1 || n >= len(seen) {
					errs <- fmt.Errorf("visitor number %d out of 1..%d", n, len(seen)-1)
					return
				}
				seen[n]++
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	for n := 1; n < len(seen); n++ {
		if seen[n] != 1 {
			t.Fatalf("visitor number %d handed out %d times, want once", n, seen[n])
		}
	}
	for i := range names {
		c := mustCount(t, st, fmt.Sprintf("n%d", i))
		if got, want := c.Total, uint64(goroutines/names*per); got != want {
			t.Errorf("count of n%d = %d, want %d", i, got, want)
		}
	}
}

func fetch(url string) (string, error) {
	resp, err := webtest.Client.Get(url)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	var b bytes.Buffer
	if _, err := b.ReadFrom(resp.Body); err != nil {
		return "", err
	}
	if resp.StatusCode != 200 {
		return "", fmt.Errorf("GET %s = %d %q", url, resp.StatusCode, b.String())
	}
	return b.String(), nil
}

// TestAllocs is the allocation budget of the hot path: serving /hi and
// /hello, query parsing, rendering and the visit log included, allocates
// nothing once the name is known.
func TestAllocs(t *testing.T) {
	if race.Enabled {
		t.Skip("allocation budgets are checked without -race: sync.Pool drops items under it")
	}
	s, _ := mustServer(t, nil)
	mustFlightRecorder(t)
	tests := []string{
		"/hi",
		"/hi?color=red",
		"/hello?name=gopher&color=blue",
		"/hello?name=%3Cscript%3E+x",
		"/whoami",
		"/whoami?format=json",
	}
	for _, target := range tests {
		r := httptest.NewRequest("GET", target, nil)
		r.Header.Set("User-Agent", "bench/1.0")
		w := webtest.NewResponseWriter()
		s.ServeHTTP(w, r) // first visit of a name inserts it
		if got := testing.AllocsPerRun(1000, func() {
			w.Reset()
			s.ServeHTTP(w, r)
		}); got != 0 {
			t.Errorf("GET %s allocs = %v, want 0", target, got)
		}
		if w.Code != 200 {
			t.Errorf("GET %s = %d, want 200", target, w.Code)
		}
	}
}

// unknownStore is a store whose counts end without an answer: the
// visit may have counted (a shared store that stopped answering).
type unknownStore struct{ failingStore }

func (unknownStore) Hit(context.Context) (uint64, error) {
	return 0, fmt.Errorf("round: %w", store.ErrOutcomeUnknown)
}
func (unknownStore) Visit(context.Context, []byte, bool) (store.Counts, bool, error) {
	return store.Counts{}, false, fmt.Errorf("round: %w", store.ErrOutcomeUnknown)
}
func (unknownStore) Get(context.Context, []byte) (store.Counts, error) { return store.Counts{}, nil }

// TestOutcomeUnknownIsNotNotCounted: a store that cannot tell whether a
// visit counted gets a 503 that says so, never "the visit was not
// counted".
func TestOutcomeUnknownIsNotNotCounted(t *testing.T) {
	s := New(Config{Store: unknownStore{}, Log: zerolog.Nop()})
	for _, target := range []string{"/hi", "/hello?name=x"} {
		w := get(t, s, "GET", target)
		if w.Code != 503 || w.Body.String() != msgStoreUnknown {
			t.Errorf("GET %s with an unknown outcome = %d %q, want 503 %q", target, w.Code, w.Body, msgStoreUnknown)
		}
	}
}
