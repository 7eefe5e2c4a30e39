package dashboard_test

import (
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"visitors/internal/api"
	"visitors/internal/dashboard"
	"visitors/internal/store"
	"visitors/internal/store/boltstore"
	"visitors/internal/store/memstore"
	"visitors/internal/store/redisstore"
	"visitors/internal/store/redisstore/redistest"
)

const root = "root-token-for-the-dashboard-tests"

// lockedBuffer is a log both the server and the test read.
type lockedBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// clock is a manual clock.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) Add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// env is a dashboard and its API on one store, served by httptest.
type env struct {
	st    store.Store
	api   *api.Handler
	srv   *httptest.Server
	log   *lockedBuffer
	clock *clock

	closeOnce sync.Once
}

// backend opens a store for a test: open(t, where) opens the store in
// where (a directory, or a Redis prefix made from it) anew, so that a
// second open of the same where is a restart; durable says whether the
// counts come back after one.
type backend struct {
	name    string
	durable bool
	open    func(t *testing.T, where string) store.Store
}

var (
	redisOnce    sync.Once
	redisServer  *redistest.Server
	redisCluster *redistest.Cluster
	redisErr     error
)

// backends are every store the dashboard must act alike on: memory,
// embedded, Redis standalone and cluster (real redis-servers of the
// test's own).
func backends(t *testing.T) []backend {
	t.Helper()
	redisOnce.Do(func() {
		if redisServer, redisErr = redistest.Start(tempDir()); redisErr != nil {
			return
		}
		redisCluster, redisErr = redistest.StartCluster(tempDir(), 3)
	})
	if redisErr != nil {
		t.Fatalf("start redis: %v", redisErr)
	}
	prefix := func(where string) string {
		h := sha256.Sum256([]byte(where))
		return fmt.Sprintf("dash%x:", h[:6])
	}
	return []backend{
		{"memory", false, func(t *testing.T, _ string) store.Store { return memstore.New(memstore.Options{}) }},
		{"embedded", true, func(t *testing.T, where string) store.Store {
			st, err := boltstore.Open(boltstore.Options{Dir: where})
			if err != nil {
				t.Fatal(err)
			}
			return st
		}},
		{"redis", true, func(t *testing.T, where string) store.Store {
			st, err := redisstore.Open(redisstore.Options{URL: "redis://" + redisServer.Addr, Prefix: prefix(where), FlushInterval: 5 * time.Millisecond})
			if err != nil {
				t.Fatal(err)
			}
			return st
		}},
		{"cluster", true, func(t *testing.T, where string) store.Store {
			st, err := redisstore.Open(redisstore.Options{Cluster: redisCluster.Addrs(), Prefix: prefix(where), FlushInterval: 5 * time.Millisecond})
			if err != nil {
				t.Fatal(err)
			}
			return st
		}},
	}
}

// memory returns an in-memory store, for the tests of what no backend
// changes.
func memory(t *testing.T) store.Store { return memstore.New(memstore.Options{}) }

func newEnv(t *testing.T, st store.Store) *env {
	t.Helper()
	e := &env{st: st, log: new(lockedBuffer), clock: &clock{t: time.Now()}}
	sum := sha256.Sum256([]byte(root))
	e.api = api.New(api.Config{Store: st, RootHash: sum, Log: zerolog.New(e.log), Now: e.clock.Now})
	d := dashboard.New(dashboard.Config{API: e.api, Store: st})
	mux := http.NewServeMux()
	mux.Handle("/dashboard", d)
	mux.Handle("/dashboard/", d)
	mux.Handle("/api/", e.api)
	e.srv = httptest.NewServer(mux)
	t.Cleanup(e.close)
	return e
}

// close stops e's server and closes its store, once.
func (e *env) close() {
	e.closeOnce.Do(func() {
		e.srv.Close()
		e.st.Close()
	})
}

// browser is one client with its own cookies, which does not follow
// redirects.
type browser struct {
	t    *testing.T
	e    *env
	c    *http.Client
	csrf string
}

func (e *env) browser(t *testing.T) *browser {
	t.Helper()
	jar, _ := cookiejar.New(nil)
	return &browser{t: t, e: e, c: &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
}

type answer struct {
	code int
	h    http.Header
	body string
}

var csrfRE = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

func (b *browser) do(method, path string, form url.Values) answer {
	b.t.Helper()
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req, err := http.NewRequest(method, b.e.srv.URL+path, body)
	if err != nil {
		b.t.Fatal(err)
	}
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	resp, err := b.c.Do(req)
	if err != nil {
		b.t.Fatal(err)
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	a := answer{resp.StatusCode, resp.Header, string(out)}
	if m := csrfRE.FindStringSubmatch(a.body); m != nil {
		b.csrf = m[1]
	}
	return a
}

func (b *browser) get(path string) answer { b.t.Helper(); return b.do("GET", path, nil) }

// post posts form with the CSRF token of the last page seen.
func (b *browser) post(path string, form url.Values) answer {
	b.t.Helper()
	f := url.Values{"csrf": {b.csrf}}
	for k, v := range form {
		f[k] = v
	}
	return b.do("POST", path, f)
}

// signIn signs b in with token, and fails the test if it is refused.
func (b *browser) signIn(token string) {
	b.t.Helper()
	a := b.do("POST", "/dashboard/login", url.Values{"token": {token}})
	if a.code != http.StatusSeeOther {
		b.t.Fatalf("sign in = %d %s", a.code, a.body)
	}
	if a := b.get("/dashboard"); a.code != 200 {
		b.t.Fatalf("GET /dashboard after sign-in = %d %s", a.code, a.body)
	}
}

// apiCall calls the API with token.
func (e *env) apiCall(t *testing.T, method, path, token, body string) (int, map[string]any) {
	t.Helper()
	req, _ := http.NewRequest(method, e.srv.URL+path, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var m map[string]any
	json.NewDecoder(resp.Body).Decode(&m)
	return resp.StatusCode, m
}

// makeToken makes a token for prefix through the API, as root.
func (e *env) makeToken(t *testing.T, prefix string) (secret, id string) {
	t.Helper()
	code, m := e.apiCall(t, "POST", "/api/v1/tokens", root, `{"name":"t","prefix":`+jsonString(prefix)+`}`)
	if code != 201 {
		t.Fatalf("make a token = %d %v", code, m)
	}
	return m["token"].(string), m["id"].(string)
}

func jsonString(s string) string { b, _ := json.Marshal(s); return string(b) }

func mustGet(t *testing.T, st store.Store, key string) store.Counts {
	t.Helper()
	c, err := st.Get(t.Context(), []byte(key))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func tempDir() string {
	d, err := osMkdirTemp()
	if err != nil {
		panic(err)
	}
	return d
}
