package hello

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"

	"github.com/rs/zerolog"

	"visitors/internal/race"
	"visitors/internal/webtest"
	"visitors/lab/allocs"
)

// The TestWhyAllocs… tests check the cause docs/lab/hello.md gives for a
// step's change in allocations: the handler alone (the query parsed
// beforehand), counted exactly (allocs.PerRun), at the start and after
// 100,000 visits of one name, and with the line the write-up names
// removed or restored.

const steady = 100_000

// handlerAllocs returns the allocations of one request to h alone, with
// the query parsed beforehand and written to w (a
// webtest.NewServerResponseWriter if nil): at the start (visits 2 to 101)
// and after steady visits.
func handlerAllocs(tb testing.TB, h http.Handler, w *webtest.ResponseWriter) (start, atSteady float64) {
	tb.Helper()
	if race.Enabled {
		tb.Skip("allocation counts are checked without -race: sync.Pool drops items under it")
	}
	if w == nil {
		w = webtest.NewServerResponseWriter()
	}
	r := httptest.NewRequest("GET", request, nil)
	if err := r.ParseForm(); err != nil {
		tb.Fatal(err)
	}
	serve := func() { w.Reset(); h.ServeHTTP(w, r) }
	start = allocs.PerRun(100, serve)
	for range steady - 101 {
		serve()
	}
	return start, allocs.PerRun(100, serve)
}

func near(got, n float64) bool { return got >= n && got < n+0.1 }

// nearDiff reports whether a difference of two counts is about n: a
// stray runtime allocation in either count moves it by up to 0.1 either
// way (near, one-sided, failed one run in a few on a busy machine).
func nearDiff(d, n float64) bool { return d > n-0.1 && d < n+0.1 }

// step7WithSet is Step7 with step 6's Header().Set put back, and nothing
// else of step 6: the count still a []byte, no deferred Put.
func step7WithSet(log io.Writer) http.Handler {
	counter := map[string]int{}
	var mu sync.Mutex // mutex for counter
	pool := &sync.Pool{New: func() interface{} { return new(bytes.Buffer) }}
	logger := zerolog.New(log)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		name := r.FormValue("name")
		mu.Lock()
		counter[name]++
		cnt := []byte(strconv.Itoa(counter[name]))
		mu.Unlock()

		w.Header().Set("Content-Type", "text/html; charset=utf-8") // restored
		buf := pool.Get().(*bytes.Buffer)
		buf.Reset()
		buf.Write([]byte("<h1 style='color: "))
		buf.Write([]byte(r.FormValue("color")))
		buf.Write([]byte("'>Welcome!</h1> <p>Name: "))
		buf.Write([]byte(name))
		buf.Write([]byte("</p> <p>Count: "))
		buf.Write(cnt)
		w.Write(buf.Bytes())
		pool.Put(buf)

		logbuf := pool.Get().(*bytes.Buffer)
		logbuf.Reset()
		logbuf.Write([]byte("visited name="))
		logbuf.Write([]byte(name))
		logbuf.Write([]byte("count="))
		logbuf.Write(cnt)
		logger.Info().Msg(logbuf.String())
		pool.Put(logbuf)
	})
}

// TestWhyAllocsFinalVersion: of step 7's changes, only dropping
// Header().Set saves allocations, all 4 of them (1 for Set's value, 3
// for net/http's clone of the header map): Step7 with the Set restored
// allocates exactly as step 6, at the start and at steady state, so the
// count kept as []byte and the removed deferred Put save nothing. With a
// writer that does not clone, the Set costs 1.
func TestWhyAllocsFinalVersion(t *testing.T) {
	s6, st6 := handlerAllocs(t, newStep(t, 6, io.Discard), nil)
	s7, st7 := handlerAllocs(t, newStep(t, 7, io.Discard), nil)
	sSet, stSet := handlerAllocs(t, step7WithSet(io.Discard), nil)
	if !nearDiff(s6-s7, 4) || !nearDiff(st6-st7, 4) {
		t.Errorf("step 6 %.2f/%.2f, step 7 %.2f/%.2f allocs (start/steady); want 4 between them", s6, st6, s7, st7)
	}
	if sSet < s6-0.1 || sSet > s6+0.1 || stSet < st6-0.1 || stSet > st6+0.1 {
		t.Errorf("step 7 with Header().Set restored: %.2f/%.2f allocs, step 6 %.2f/%.2f; want equal", sSet, stSet, s6, st6)
	}
	_, plain7 := handlerAllocs(t, newStep(t, 7, io.Discard), webtest.NewResponseWriter())
	_, plainSet := handlerAllocs(t, step7WithSet(io.Discard), webtest.NewResponseWriter())
	if !nearDiff(plainSet-plain7, 1) {
		t.Errorf("without the header clone: step 7 %.2f, with Set %.2f allocs; want 1 between them", plain7, plainSet)
	}
}

// TestWhyAllocsPerStep pins the handler's own allocations of every step,
// the numbers the write-up's per-step reasons add up to.
func TestWhyAllocsPerStep(t *testing.T) {
	want := []struct{ start, steady float64 }{
		{20.92, 23}, {20, 22}, {19, 20}, {19, 20}, {16, 17}, {7, 8}, {5, 6}, {1, 2}, {0, 0},
	}
	for i := range Steps {
		t.Run(fmt.Sprintf("step=%d", i), func(t *testing.T) {
			start, st := handlerAllocs(t, newStep(t, i, io.Discard), nil)
			if !near(start, want[i].start) || !near(st, want[i].steady) {
				t.Errorf("step %d alone: %.2f allocs at the start, %.2f after %d visits; want %.2f and %.2f", i, start, st, steady, want[i].start, want[i].steady)
			}
		})
	}
}

// step7WithSetDeferredPut is step7WithSet with step 6's deferred Put of
// the body's buffer, and nothing else of step 6.
func step7WithSetDeferredPut(log io.Writer) http.Handler {
	counter := map[string]int{}
	var mu sync.Mutex // mutex for counter
	pool := &sync.Pool{New: func() interface{} { return new(bytes.Buffer) }}
	logger := zerolog.New(log)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		name := r.FormValue("name")
		mu.Lock()
		counter[name]++
		cnt := []byte(strconv.Itoa(counter[name]))
		mu.Unlock()

		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		buf := pool.Get().(*bytes.Buffer)
		defer pool.Put(buf) // restored
		buf.Reset()
		buf.Write([]byte("<h1 style='color: "))
		buf.Write([]byte(r.FormValue("color")))
		buf.Write([]byte("'>Welcome!</h1> <p>Name: "))
		buf.Write([]byte(name))
		buf.Write([]byte("</p> <p>Count: "))
		buf.Write(cnt)
		w.Write(buf.Bytes())

		logbuf := pool.Get().(*bytes.Buffer)
		logbuf.Reset()
		logbuf.Write([]byte("visited name="))
		logbuf.Write([]byte(name))
		logbuf.Write([]byte("count="))
		logbuf.Write(cnt)
		logger.Info().Msg(logbuf.String())
		pool.Put(logbuf)
	})
}

// step7WithSetItoaTwice is step7WithSet with the count formatted twice,
// as step 6 does (strconv.Itoa for the log, AppendInt into the body),
// instead of kept as one []byte, and nothing else of step 6.
func step7WithSetItoaTwice(log io.Writer) http.Handler {
	counter := map[string]int{}
	var mu sync.Mutex // mutex for counter
	pool := &sync.Pool{New: func() interface{} { return new(bytes.Buffer) }}
	logger := zerolog.New(log)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		name := r.FormValue("name")
		mu.Lock()
		counter[name]++
		n := counter[name]
		mu.Unlock()

		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		buf := pool.Get().(*bytes.Buffer)
		buf.Reset()
		buf.Write([]byte("<h1 style='color: "))
		buf.Write([]byte(r.FormValue("color")))
		buf.Write([]byte("'>Welcome!</h1> <p>Name: "))
		buf.Write([]byte(name))
		buf.Write([]byte("</p> <p>Count: "))
		buf.Write(strconv.AppendInt(buf.AvailableBuffer(), int64(n), 10))
		w.Write(buf.Bytes())
		pool.Put(buf)

		logbuf := pool.Get().(*bytes.Buffer)
		logbuf.Reset()
		logbuf.Write([]byte("visited name="))
		logbuf.Write([]byte(name))
		logbuf.Write([]byte("count="))
		logbuf.Write([]byte(strconv.Itoa(n)))
		logger.Info().Msg(logbuf.String())
		pool.Put(logbuf)
	})
}

// TestWhyAllocsFinalVersionEach: TestWhyAllocsFinalVersion shows that
// step 7's other changes save nothing together; each, undone alone on
// step 7 with the Set restored, saves nothing either (they do not offset
// each other): the deferred Put of the body's buffer (a deferred call
// does not allocate) and the count kept as one []byte (formatted twice
// instead, as step 6 does, it allocates as often: the small []byte
// conversion stays on the stack).
func TestWhyAllocsFinalVersionEach(t *testing.T) {
	s6, st6 := handlerAllocs(t, newStep(t, 6, io.Discard), nil)
	for _, tt := range []struct {
		name string
		h    http.Handler
	}{
		{"the deferred Put restored", step7WithSetDeferredPut(io.Discard)},
		{"the count formatted twice", step7WithSetItoaTwice(io.Discard)},
	} {
		s, st := handlerAllocs(t, tt.h, nil)
		if s < s6-0.1 || s > s6+0.1 || st < st6-0.1 || st > st6+0.1 {
			t.Errorf("step 7 with Header().Set and %s: %.2f/%.2f allocs, step 6 %.2f/%.2f (start/steady); want equal", tt.name, s, st, s6, st6)
		}
	}
}
