package web

import (
	"context"
	"encoding/xml"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"visitors/internal/bots"
	"visitors/internal/camo"
	"visitors/internal/client"
	"visitors/internal/coarse"
	"visitors/internal/compat"
	"visitors/internal/flightrec"
	"visitors/internal/logsink"
	"visitors/internal/metrics"
	"visitors/internal/store"
	"visitors/internal/store/memstore"
	"visitors/internal/store/storetest"
)

// mustServer returns a Server over a fresh memory store whose visit log
// goes through a real logsink to out (io.Discard if nil).
func mustServer(tb testing.TB, out io.Writer) (*Server, *memstore.Store) {
	tb.Helper()
	return mustServerObserved(tb, out, true)
}

// mustServerObserved is [mustServer] with or without the metrics.
func mustServerObserved(tb testing.TB, out io.Writer, observed bool) (*Server, *memstore.Store) {
	tb.Helper()
	if out == nil {
		out = io.Discard
	}
	sink := logsink.New(out, logsink.Options{Poll: time.Millisecond})
	tb.Cleanup(func() {
		if err := sink.Close(); err != nil {
			tb.Errorf("close log sink: %v", err)
		}
	})
	st := memstore.New(memstore.Options{})
	tb.Cleanup(func() { st.Close() })
	c := Config{
		Store:    st,
		Log:      zerolog.New(sink).With().Timestamp().Logger(),
		Hostname: "testhost",
		Compat:   compat.New(compat.AllServices), // on, as the service runs by default: the budgets hold with it
	}
	if observed { // as the service runs by default
		clock := coarse.Start(time.Millisecond)
		tb.Cleanup(clock.Stop)
		c.Requests = metrics.NewRequests(metrics.RequestsOptions{Clock: clock, SlowRequest: 250 * time.Millisecond})
	}
	return New(c), st
}

// mustFlightRecorder runs the runtime's flight recorder, as the service
// does by default, until the test ends. Only one can run in a process.
func mustFlightRecorder(tb testing.TB) {
	tb.Helper()
	fr, err := flightrec.Start(flightrec.Options{Dir: tb.TempDir()})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { fr.Close() })
}

// answerWithin bounds a request [get] serves: well under the package
// timeout, and far above what a handler over a memory store takes.
const answerWithin = 10 * time.Second

// get serves one request to h and returns the recorded response. The
// request's context ends after answerWithin, so that a handler that
// streams where it should answer (a live stream's refusal, a HEAD) ends
// then and the test fails on what it recorded. A handler that does not
// return even then, a loop that never ends (mutant params.go:40:8: a
// query-less request spun in unknownCounterParam and hung the package
// until go test's timeout), fails tb a second later instead.
func get(tb testing.TB, h http.Handler, method, target string, hdr ...string) *httptest.ResponseRecorder {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), answerWithin)
	defer cancel()
	r := httptest.NewRequestWithContext(ctx, method, target, nil)
	for i := 0; i+1 < len(hdr); i += 2 {
		r.Header.Set(hdr[i], hdr[i+1])
	}
	w := httptest.NewRecorder()
	done := make(chan struct{})
	go func() {
		defer close(done)
		h.ServeHTTP(w, r)
	}()
	select {
	case <-done:
	case <-time.After(answerWithin + time.Second):
		tb.Fatalf("%s %s: the handler did not return within %v", method, target, answerWithin+time.Second)
	}
	return w
}

// setNow sets the clock of s and of its counting path.
func setNow(s *Server, now func() time.Time) { s.now, s.visits.Now = now, now }

// failingStore is a store.Counter whose every count fails, as a broken
// disk or an unreachable Redis would.
type failingStore struct{}

var errBroken = errors.New("disk on fire")

func (failingStore) Hit(context.Context) (uint64, error) { return 0, errBroken }
func (failingStore) Get(context.Context, []byte) (store.Counts, error) {
	return store.Counts{}, errBroken
}
func (failingStore) Days(context.Context, []byte, int) (store.Daily, error) {
	return store.Daily{}, errBroken
}
func (failingStore) Visit(context.Context, []byte, bool) (store.Counts, bool, error) {
	return store.Counts{}, false, errBroken
}

var _ store.Counter = failingStore{}

// mustHit takes the next global number from st.
func mustHit(tb testing.TB, st store.Store) uint64 {
	tb.Helper()
	n, err := st.Hit(context.Background())
	if err != nil {
		tb.Fatalf("Hit() = %v", err)
	}
	return n
}

// mustCount returns key's counts in st, without counting a visit.
func mustCount(tb testing.TB, st store.Store, key string) store.Counts {
	tb.Helper()
	c, err := st.Get(context.Background(), []byte(key))
	if err != nil {
		tb.Fatalf("Get(%q) = %v", key, err)
	}
	return c
}

// errorMessage returns the client's message of an error response: the
// body of a plain-text one, the Visitors-Error header of an error badge,
// which must be a well-formed SVG without markup of the request's.
func errorMessage(tb testing.TB, w *httptest.ResponseRecorder) string {
	tb.Helper()
	if !strings.HasPrefix(w.Header().Get("Content-Type"), "image/svg+xml") {
		return w.Body.String()
	}
	if err := xml.Unmarshal(w.Body.Bytes(), new(struct{})); err != nil {
		tb.Errorf("error badge is not well-formed: %v", err)
	}
	if strings.Contains(w.Body.String(), "<script") || w.Header().Get("Cache-Control") != noCache[0] {
		tb.Errorf("error badge reflects markup or may be cached: %v %q", w.Header(), w.Body)
	}
	return w.Header().Get("Visitors-Error")
}

// withDefaultRules gives s the service's default fairness rules (no
// trusted proxy, 10 visits/s with a burst of 20, 100 new keys/h, bots
// not counted, unique visitors) and a clock that moves 100ms on every
// reading, so that one client repeating a request refills its bucket as
// fast as it spends it: every request takes the whole counting path.
func withDefaultRules(tb testing.TB, s *Server) {
	tb.Helper()
	var t atomic.Int64
	t.Store(storetest.At(2, "00:00").UnixNano())
	setNow(s, func() time.Time { return time.Unix(0, t.Add(int64(100*time.Millisecond))).UTC() })
	visits, newKeys := client.Rate{Events: 10, Per: time.Second}, client.Rate{Events: 100, Per: time.Hour}
	s.visits.Rules = Rules{
		Trusted: &client.Proxies{},
		Limiter: client.NewLimiter(client.LimiterOptions{Visits: visits, Burst: 20, NewKeys: newKeys}),
		NewKeys: newKeys,
		Bots:    defaultBots(),
		Camo:    defaultCamo(),
	}
}

// defaultCamo is -camo-ranges' default.
var defaultCamo = sync.OnceValue(func() *client.Ranges {
	var r client.Ranges
	if err := r.Set(camo.DefaultRanges()); err != nil {
		panic(err)
	}
	return &r
})

// defaultBots is one detector for every test: building one takes 5ms.
var defaultBots = sync.OnceValue(bots.New)

// shows is a GET of target, in order, and a text its answer must hold.
type shows struct {
	target, want string
}

// checkShows GETs each target of tests from h, in order, and checks
// that the answer is a 200 holding its text.
func checkShows(t *testing.T, h http.Handler, tests []shows) {
	t.Helper()
	for _, tt := range tests {
		if w := get(t, h, "GET", tt.target); w.Code != 200 || !strings.Contains(w.Body.String(), tt.want) {
			t.Errorf("GET %s = %d %q, want 200 with %s", tt.target, w.Code, w.Body, tt.want)
		}
	}
}
