package dashboard_test

import (
	"crypto/sha256"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"visitors/internal/api"
	"visitors/internal/dashboard"
	"visitors/internal/store/memstore"
)

// BenchmarkOverview measures the overview's first page over 1,000,000
// keys in memory, sorted by name (one List of a page), by total and by
// today (every key read, the page's 50 kept in a heap), with a key-scoped
// token too: what a signed-in GET /dashboard costs, the session and token
// checks, the rows' sparklines and the page included. The scoped
// token's prefix, k05, holds a tenth of the keys. With -short
// (./scripts/test.sh's pass that runs every benchmark once, to see that
// it works) there are 10,000 keys.
func BenchmarkOverview(b *testing.B) {
	keys, name := 1_000_000, "k%07d"
	if testing.Short() {
		keys, name = 10_000, "k%05d"
	}
	st := memstore.New(memstore.Options{MaxKeys: keys})
	defer st.Close()
	ctx := b.Context()
	for i := range keys {
		if _, err := st.Set(ctx, fmt.Appendf(nil, name, i), uint64(i*7919%keys)); err != nil {
			b.Fatal(err)
		}
	}
	sum := sha256.Sum256([]byte(root))
	a := api.New(api.Config{Store: st, RootHash: sum, Log: zerolog.Nop(), NoFailureLimit: true})
	tok, secret, err := api.MakeToken(strings.NewReader(strings.Repeat("x", 64)), "bench", "k05", false, a.Now())
	if err != nil {
		b.Fatal(err)
	}
	if err := st.PutToken(ctx, tok); err != nil {
		b.Fatal(err)
	}
	for _, hc := range []struct {
		name string
		ttl  time.Duration
	}{{"rank=each", -1}, {"rank=cached", 0}} { // every request ranks anew; a ranking reused for DefaultRankTTL
		h := dashboard.New(dashboard.Config{API: a, Store: st, RankTTL: hc.ttl})
		rootCookie, scopedCookie := signIn(b, h, root), signIn(b, h, secret)
		for _, bc := range []struct{ name, target, cookie string }{
			{"sort=name", "/dashboard?sort=name", rootCookie},
			{"sort=total", "/dashboard?sort=total", rootCookie},
			{"sort=today", "/dashboard?sort=today", rootCookie},
			{"sort=total/scope=tenth", "/dashboard?sort=total", scopedCookie},
		} {
			if hc.ttl == 0 && bc.name == "sort=name" {
				continue // no ranking
			}
			b.Run(hc.name+"/"+bc.name, func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					get(b, h, bc.target, bc.cookie)
				}
			})
			b.Run(hc.name+"/"+bc.name+"/parallel", func(b *testing.B) {
				b.ReportAllocs()
				b.RunParallel(func(pb *testing.PB) {
					for pb.Next() {
						get(b, h, bc.target, bc.cookie)
					}
				})
			})
		}
	}
}

// signIn signs in to h with token and returns the session's cookie.
func signIn(b *testing.B, h *dashboard.Handler, token string) string {
	rec := httptest.NewRecorder()
	req := httptest.NewRequest("POST", "/dashboard/login", strings.NewReader(url.Values{"token": {token}}.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	h.ServeHTTP(rec, req)
	if rec.Code != http.StatusSeeOther {
		b.Fatalf("sign in = %d", rec.Code)
	}
	return strings.SplitN(rec.Header().Get("Set-Cookie"), ";", 2)[0]
}

// get answers GET target with the session cookie c, and fails b unless
// it is a 200.
func get(b *testing.B, h *dashboard.Handler, target, c string) {
	req := httptest.NewRequest("GET", target, nil)
	req.Header.Set("Cookie", c)
	w := &discard{h: make(http.Header)}
	h.ServeHTTP(w, req)
	if w.code != http.StatusOK {
		b.Errorf("GET %s = %d", target, w.code)
	}
}

// discard is a ResponseWriter that keeps the status alone.
type discard struct {
	h    http.Header
	code int
}

func (d *discard) Header() http.Header { return d.h }
func (d *discard) WriteHeader(code int) {
	if d.code == 0 {
		d.code = code
	}
}
func (d *discard) Write(p []byte) (int, error) {
	if d.code == 0 {
		d.code = http.StatusOK
	}
	return io.Discard.Write(p)
}
