package web

import (
	"encoding/json"
	"io"
	"strings"
	"testing"

	"net/http/httptest"

	"github.com/rs/zerolog"

	"visitors/internal/race"
	"visitors/internal/store/memstore"
	"visitors/internal/webtest"
)

func mustTopServer(t testing.TB) (*Server, *memstore.Store) {
	t.Helper()
	st := memstore.New(memstore.Options{})
	t.Cleanup(func() { st.Close() })
	s := New(Config{Store: st, Log: zerolog.Nop(), PublicTop: true})
	t.Cleanup(s.Shutdown)
	return s, st
}

type topList struct {
	Days int
	Top  []struct {
		Key   string
		Count uint64
	}
}

func TestTop(t *testing.T) {
	s, _ := mustTopServer(t)
	for i, key := range []string{"a", "b/c", "d"} {
		for range 3 - i {
			get(t, s, "GET", "/counter/"+key+".svg")
		}
	}
	get(t, s, "GET", "/counter/d.json?count=false") // reads count nothing
	get(t, s, "GET", "/hello?name=secret")          // names are not counters
	w := get(t, s, "GET", "/top.json?days=7&limit=2")
	if w.Code != 200 || w.Header().Get("Content-Type") != "application/json" || w.Header().Get("Access-Control-Allow-Origin") != "*" {
		t.Fatalf("GET /top.json = %d %q", w.Code, w.Header())
	}
	if got, want := w.Body.String(), `{"days":7,"top":[{"key":"a","count":3},{"key":"b/c","count":2}]}`+"\n"; got != want {
		t.Errorf("GET /top.json?days=7&limit=2 = %s, want %s", got, want)
	}
	var l topList
	if err := json.Unmarshal(get(t, s, "GET", "/top.json").Body.Bytes(), &l); err != nil || l.Days != 7 || len(l.Top) != 3 {
		t.Errorf("GET /top.json = %+v, %v; want 7 days and the 3 counters", l, err)
	}
	for _, tt := range []struct{ q, msg string }{
		{"days=0", msgTopDays}, {"days=31", msgTopDays}, {"days=x", msgTopDays}, {"days=", msgTopDays}, {"days=0007", msgTopDays},
		{"limit=0", msgTopLimit}, {"limit=101", msgTopLimit}, {"limit=-1", msgTopLimit}, {"limit=1e2", msgTopLimit},
	} {
		if w := get(t, s, "GET", "/top.json?"+tt.q); w.Code != 400 || w.Body.String() != tt.msg {
			t.Errorf("GET /top.json?%s = %d %q, want 400 %q", tt.q, w.Code, w.Body, tt.msg)
		}
	}
	for _, q := range []string{"days=1", "days=30", "limit=1", "limit=100", "days=30&limit=100"} {
		if w := get(t, s, "GET", "/top.json?"+q); w.Code != 200 {
			t.Errorf("GET /top.json?%s = %d", q, w.Code)
		}
	}
}

// TestTopUnknownParam: /top.json refuses a parameter it does not take
// with 400 naming it, as the counter routes do; before, it ignored it
// with a 200.
func TestTopUnknownParam(t *testing.T) {
	s, _ := mustTopServer(t)
	for _, tt := range []struct{ q, name string }{
		{"limt=5", `"limt"`}, {"days=7&day=3", `"day"`}, {"callback=x", `"callback"`}, {"%3Cb%3E=1", `"<b>"`}, {"=1", `""`},
	} {
		w := get(t, s, "GET", "/top.json?"+tt.q)
		if b := w.Body.String(); w.Code != 400 || !strings.HasPrefix(b, "Unknown parameter "+tt.name) || !strings.Contains(b, msgTopParams) {
			t.Errorf("GET /top.json?%s = %d %q, want 400 naming %s and what it takes", tt.q, w.Code, b, tt.name)
		}
	}
	for _, q := range []string{"days=7&limit=5", "%64ays=3", "&&limit=2&"} {
		if w := get(t, s, "GET", "/top.json?"+q); w.Code != 200 {
			t.Errorf("GET /top.json?%s = %d %q, want 200", q, w.Code, w.Body)
		}
	}
}

// TestTopOff: without PublicTop, /top.json is a 404 and visits feed no
// board.
func TestTopOff(t *testing.T) {
	s, _ := mustServer(t, nil)
	get(t, s, "GET", "/counter/a.svg")
	w := get(t, s, "GET", "/top.json")
	b, _ := io.ReadAll(w.Body)
	if w.Code != 404 || !strings.Contains(string(b), "-public-top") {
		t.Errorf("GET /top.json without -public-top = %d %q, want 404", w.Code, b)
	}
	if s.top != nil {
		t.Error("a board is kept without PublicTop")
	}
}

// TestTopCounterAllocs: with the board on, a counted visit still
// allocates at most once.
func TestTopCounterAllocs(t *testing.T) {
	s, _ := mustTopServer(t)
	for range 3 {
		get(t, s, "GET", "/counter/k.svg")
	}
	if race.Enabled {
		t.Skip("allocation budgets are checked without -race")
	}
	r := httptest.NewRequest("GET", "/counter/k.svg", nil)
	w := webtest.NewResponseWriter()
	if got := testing.AllocsPerRun(500, func() { w.Reset(); s.ServeHTTP(w, r) }); got > 1 {
		t.Errorf("GET /counter/k.svg with the board on allocs = %v, want at most 1", got)
	}
}

// FuzzTopQuery: whatever the query, /top.json answers 200 with a list
// of at most limit keys, or 400 with one of its messages; never a 5xx.
func FuzzTopQuery(f *testing.F) {
	for _, q := range []string{"", "days=1", "days=30&limit=100", "days=0", "limit=%31", "days=7&days=8", "limit=+1", "days=%zz"} {
		f.Add(q)
	}
	s, _ := mustTopServer(f)
	for range 3 {
		get(f, s, "GET", "/counter/a.svg")
		get(f, s, "GET", "/counter/b.svg")
	}
	f.Fuzz(func(t *testing.T, q string) {
		w := serveQuery(s, "/top.json", q)
		switch w.Code {
		case 200:
			var l topList
			if err := json.Unmarshal(w.Body.Bytes(), &l); err != nil || l.Days < 1 || l.Days > 30 || len(l.Top) > 100 {
				t.Fatalf("query %q: 200 with %q (%v)", q, w.Body, err)
			}
		case 400:
			if b := w.Body.String(); b != msgTopDays && b != msgTopLimit && !(strings.HasPrefix(b, "Unknown parameter ") && strings.HasSuffix(b, msgTopParams)) {
				t.Fatalf("query %q: 400 with %q", q, b)
			}
		default:
			t.Fatalf("query %q: status %d", q, w.Code)
		}
	})
}
