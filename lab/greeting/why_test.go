package greeting

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"

	"visitors/internal/race"
	"visitors/internal/webtest"
	"visitors/lab/allocs"
)

// The TestWhyAllocs… tests check the cause docs/lab/greeting.md gives for each
// step's change in allocations: the handler alone (the query parsed
// beforehand, so r.FormValue allocates nothing), counted exactly
// (allocs.PerRun, not testing.AllocsPerRun, which rounds down), at the
// start and at steady state after 100,000 visitors, and with the line
// the write-up names removed or restored.

// steady is the number of visitors served before the steady-state count:
// from visitor 100,000 on the body passes 64 bytes with color=red.
const steady = 100_000

// handlerAllocs returns the allocations of one request to h alone, with
// color=red parsed beforehand and written to w (a
// webtest.NewServerResponseWriter if nil): at the start (visitors 2 to
// 101) and after steady visitors.
func handlerAllocs(tb testing.TB, h http.Handler, w *webtest.ResponseWriter) (start, atSteady float64) {
	tb.Helper()
	fresh, r := redRequest(tb)
	if w == nil {
		w = fresh
	}
	serve := func() { w.Reset(); h.ServeHTTP(w, r) }
	start = allocs.PerRun(100, serve) // visitors 1 (warm-up) to 101
	for range steady - 101 {
		serve()
	}
	return start, allocs.PerRun(100, serve)
}

// startAllocs is handlerAllocs at the start only.
func startAllocs(tb testing.TB, h http.Handler) float64 {
	tb.Helper()
	w, r := redRequest(tb)
	return allocs.PerRun(100, func() { w.Reset(); h.ServeHTTP(w, r) })
}

// redRequest skips tb under -race, and returns a
// webtest.NewServerResponseWriter and a request for /hi?color=red with
// its form parsed: what the allocation counts serve.
func redRequest(tb testing.TB) (*webtest.ResponseWriter, *http.Request) {
	tb.Helper()
	if race.Enabled {
		tb.Skip("allocation counts are checked without -race: sync.Pool drops items under it")
	}
	r := httptest.NewRequest("GET", "/hi?color=red", nil)
	if err := r.ParseForm(); err != nil {
		tb.Fatal(err)
	}
	return webtest.NewServerResponseWriter(), r
}

// near reports whether a measured average is n: a background goroutine
// (the test framework, the GC) may add one allocation now and then.
func near(got, n float64) bool { return got >= n && got < n+0.1 }

// nearDiff reports whether a difference of two counts is about n: a
// stray runtime allocation in either count moves it by up to 0.1 either
// way (near, one-sided, failed one run in a few on a busy machine).
func nearDiff(d, n float64) bool { return d > n-0.1 && d < n+0.1 }

func TestWhyAllocsPerStep(t *testing.T) {
	// The handler's own allocations by step; the write-up's reasons are
	// in the comments and each has its own test below.
	tests := []struct {
		step          int
		start, steady float64
	}{
		{0, 45.92, 47}, // the regexp compiled per request (TestWhyAllocsCompileOnce)
		{1, 5.92, 7},   // compiled once; Set (1), the header clone (3), []byte(a+b+c) (1), Sprint's string (1, none for 1 to 9), its boxed count (1 from 256 on)
		{2, 1.92, 3},   // no Set, no clone
		{3, 1, 2},      // Fprintf: the boxed color (1), the boxed count (1 from 256 on)
		{4, 1, 2},      // the mutex allocates nothing
		{5, 0, 1},      // the pooled buffer: 0, until the body outgrows it (TestMuseumPooledBufferAllocatesFromVisitor100000)
		{6, 17, 18},    // the regexp compiled again: Get without Put (TestWhyAllocsColorRxPoolPut)
		{9, 0, 0},      // the service
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("step=%d", tt.step), func(t *testing.T) {
			start, st := handlerAllocs(t, newStep(t, tt.step), nil)
			if !near(start, tt.start) || !near(st, tt.steady) {
				t.Errorf("step %d alone: %.2f allocs at the start, %.2f after %d visitors; want %.2f and %.0f", tt.step, start, st, steady, tt.start, tt.steady)
			}
		})
	}
}

// TestWhyAllocsCompileOnce: step 0 compiles the regexp on every request,
// step 1 once; the compilation is tens of allocations.
func TestWhyAllocsCompileOnce(t *testing.T) {
	s0 := startAllocs(t, newStep(t, 0))
	s1 := startAllocs(t, newStep(t, 1))
	if s0-s1 < 30 {
		t.Errorf("step 0 %.2f, step 1 %.2f allocs: want the regexp's compilation, 30 or more, between them", s0, s1)
	}
}

// TestWhyAllocsContentType: removing Header().Set (1 → 2) saves 4
// allocations, 1 for Set's value slice and 3 for the clone of the header
// map that net/http makes when a handler called Header(); with a writer
// that does not clone, only Set's 1.
func TestWhyAllocsContentType(t *testing.T) {
	for _, tt := range []struct {
		w    func() *webtest.ResponseWriter
		want float64
	}{{webtest.NewServerResponseWriter, 4}, {webtest.NewResponseWriter, 1}} {
		_, a := handlerAllocs(t, newStep(t, 1), tt.w())
		_, b := handlerAllocs(t, newStep(t, 2), tt.w())
		if d := a - b; d < tt.want-0.1 || d > tt.want+0.1 {
			t.Errorf("clone charged %v: step 1 %.2f, step 2 %.2f allocs; want %v between them", tt.w().CloneHeader, a, b, tt.want)
		}
	}
}

// TestWhyAllocsConcatIsOneAllocation: step 2's
// []byte("…" + color + "…" + fmt.Sprint(n) + "!") is built by
// runtime.concatbytes straight into the []byte: one allocation, not a
// string and a copy of it.
func TestWhyAllocsConcatIsOneAllocation(t *testing.T) {
	if race.Enabled {
		t.Skip("allocation counts are checked without -race")
	}
	color, num := "red", "100000"
	got := allocs.PerRun(100, func() {
		io.Discard.Write([]byte("<h1 style='color: " + color + "'>Welcome!</h1>You are visitor number " + num + "!"))
	})
	if got != 1 {
		t.Errorf("[]byte(a + b + …) = %.2f allocs, want 1", got)
	}
}

// TestWhyAllocsFprintf: Fprintf (2 → 3) saves fmt.Sprint's string and the
// concatenation, 2 allocations, and adds 1 to box the color: net −1, at
// the start and at steady state. The count is boxed in both steps from
// visitor 256 on (fmt.Sprint's argument is an interface too).
func TestWhyAllocsFprintf(t *testing.T) {
	s2, st2 := handlerAllocs(t, newStep(t, 2), nil)
	s3, st3 := handlerAllocs(t, newStep(t, 3), nil)
	if !nearDiff(st2-st3, 1) || !near(st2, 3) {
		t.Errorf("after %d visitors: step 2 %.2f, step 3 %.2f allocs; want 3 and 2", steady, st2, st3)
	}
	if !near(s3, 1) || s2 < 1.9 {
		t.Errorf("at the start: step 2 %.2f, step 3 %.2f; want about 2 and 1", s2, s3)
	}
	// The color's boxing: step 3 with a constant color boxes only the count.
	constColor := func() http.Handler {
		var visitors int
		colorRx := regexp.MustCompile(`\w*$`)
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if !colorRx.MatchString(r.FormValue("color")) {
				http.Error(w, "Optional color is invalid", http.StatusBadRequest)
				return
			}
			visitors++
			fmt.Fprintf(w, "<h1 style='color: %s'>Welcome!</h1>You are visitor number %d!", "red", visitors)
		})
	}
	if sc, _ := handlerAllocs(t, constColor(), nil); !nearDiff(s3-sc, 1) {
		t.Errorf("step 3 %.2f, with a constant color %.2f allocs; want the color's boxing, 1, between them", s3, sc)
	}
}

// fixedBuffer is step 8 with the pooled-buffer fix: the number and the
// '!' are written through the buffer (AvailableBuffer), so the buffer
// that grows is the one put back in the pool.
func fixedBuffer() http.Handler {
	var atomicVisitors int64
	colorRx := regexp.MustCompile(`\w*$`)
	bufPool := &sync.Pool{New: func() any { return new(bytes.Buffer) }}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !colorRx.MatchString(r.FormValue("color")) {
			http.Error(w, "Optional color is invalid", http.StatusBadRequest)
			return
		}
		num := int(atomic.AddInt64(&atomicVisitors, 1))
		buf := bufPool.Get().(*bytes.Buffer)
		defer bufPool.Put(buf)
		buf.Reset()
		buf.WriteString("<h1 style='color: ")
		buf.WriteString(r.FormValue("color"))
		buf.WriteString(">Welcome!</h1>You are visitor number ")
		buf.Write(strconv.AppendInt(buf.AvailableBuffer(), int64(num), 10))
		buf.WriteByte('!')
		w.Write(buf.Bytes())
	})
}

// TestMuseumPooledBufferAllocatesFromVisitor100000 shows the talk's buffer version (steps 5
// to 8): it appends the number to buf.Bytes(), so when the body outgrows
// the pooled buffer's 64 bytes (with color=red, from the 6-digit visitor
// 100,000 on) append grows a copy and the pool keeps the small buffer:
// every request from then on allocates once. Writing through the buffer
// (fixedBuffer) keeps the grown buffer in the pool: 0 at steady state, as
// the service.
func TestMuseumPooledBufferAllocatesFromVisitor100000(t *testing.T) {
	for _, i := range []int{5, 6, 7, 8} {
		t.Run(fmt.Sprintf("step=%d", i), func(t *testing.T) {
			start, st := handlerAllocs(t, newStep(t, i), nil)
			if d := st - start; !near(d, 1) {
				t.Errorf("step %d: %.2f allocs at the start, %.2f after %d visitors; want 1 more", i, start, st, steady)
			}
		})
	}
	t.Run("fixed", func(t *testing.T) {
		start, st := handlerAllocs(t, fixedBuffer(), nil)
		if start != 0 || st != 0 {
			t.Errorf("fixed: %.2f allocs at the start, %.2f after %d visitors; want 0 and 0", start, st, steady)
		}
	})
	t.Run("service", func(t *testing.T) {
		if _, st := handlerAllocs(t, newStep(t, 9), nil); st != 0 {
			t.Errorf("service: %.2f allocs after %d visitors, want 0", st, steady)
		}
	})
}

// TestWhyAllocsColorRxPoolPut: steps 6 to 8 allocate a compiled regexp's
// worth per request because the pool is never given one back; putting
// the Put back restores step 5's count.
func TestWhyAllocsColorRxPoolPut(t *testing.T) {
	withPut := func() http.Handler {
		var visitors struct {
			sync.Mutex
			n int
		}
		colorRxPool := &sync.Pool{New: func() any { return regexp.MustCompile(`\w*$`) }}
		bufPool := &sync.Pool{New: func() any { return new(bytes.Buffer) }}
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			rx := colorRxPool.Get().(*regexp.Regexp)
			defer colorRxPool.Put(rx)
			if !rx.MatchString(r.FormValue("color")) {
				http.Error(w, "Optional color is invalid", http.StatusBadRequest)
				return
			}
			visitors.Lock()
			visitors.n++
			num := visitors.n
			visitors.Unlock()
			buf := bufPool.Get().(*bytes.Buffer)
			defer bufPool.Put(buf)
			buf.Reset()
			buf.WriteString("<h1 style='color: ")
			buf.WriteString(r.FormValue("color"))
			buf.WriteString(">Welcome!</h1>You are visitor number ")
			b := strconv.AppendInt(buf.Bytes(), int64(num), 10)
			b = append(b, '!')
			w.Write(b)
		})
	}
	s5 := startAllocs(t, newStep(t, 5))
	s6 := startAllocs(t, newStep(t, 6))
	sp := startAllocs(t, withPut())
	if s6-s5 < 10 || !nearDiff(sp-s5, 0) {
		t.Errorf("step 5 %.2f, step 6 %.2f, step 6 with Put %.2f allocs; want 6 ten or more above 5, and 6 with Put equal to 5", s5, s6, sp)
	}
	s7 := startAllocs(t, newStep(t, 7))
	s8 := startAllocs(t, newStep(t, 8))
	if !nearDiff(s7-s6, 0) || !nearDiff(s8-s6, 0) {
		t.Errorf("steps 6, 7, 8: %.2f, %.2f, %.2f allocs; want the counter's changes to allocate nothing", s6, s7, s8)
	}
}

// TestWhyAllocsBoxedFrom256: the count passed to fmt as an interface
// allocates only from visitor 256 on (smaller values use the runtime's
// static table), the reason the write-up gives for each of steps 1 to 4
// allocating one more after 100,000 visitors than at the start. Step 3
// over visitors 156 to 255, then 257 to 356.
func TestWhyAllocsBoxedFrom256(t *testing.T) {
	w, r := redRequest(t)
	h := newStep(t, 3)
	serve := func() { w.Reset(); h.ServeHTTP(w, r) }
	for range 154 {
		serve()
	}
	below := allocs.PerRun(100, serve) // visitor 155 warms up; 156 to 255 counted
	from := allocs.PerRun(100, serve)  // visitor 256 warms up; 257 to 356 counted
	if !near(below, 1) || !near(from, 2) {
		t.Errorf("step 3: %.2f allocs for visitors 156 to 255, %.2f for 257 to 356; want 1 (the color) and 2 (and the count)", below, from)
	}
}

// TestWhyAllocsFormParse: the write-up says the main benchmark adds 3
// allocations to every step before the service, r.FormValue parsing the
// query on each request. Step 5, which allocates nothing of its own at
// the start, with r.Form cleared before each request as the benchmark
// clears it: 3. A fresh request has r.PostForm nil too, and ParseForm
// makes it an empty map: 4, one more than the benchmark charges.
func TestWhyAllocsFormParse(t *testing.T) {
	w, r := redRequest(t) // its form cleared before each request below
	h := newStep(t, 5)
	asBenchmark := allocs.PerRun(100, func() { w.Reset(); r.Form = nil; h.ServeHTTP(w, r) })
	fresh := allocs.PerRun(100, func() { w.Reset(); r.Form, r.PostForm = nil, nil; h.ServeHTTP(w, r) })
	if !near(asBenchmark, 3) || !near(fresh, 4) {
		t.Errorf("step 5 parsing the query on each request: %.2f allocs with r.Form cleared, %.2f with r.PostForm too; want 3 and 4", asBenchmark, fresh)
	}
}
