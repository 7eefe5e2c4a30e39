// Package greeting rebuilds, step by step, the /hi handler optimised in
// Brad Fitzpatrick's "Profiling & Optimizing in Go" talk (YAPC::Asia
// 2015). Steps 0 to 8 are the talk's code, one published change each, and
// keep the talk's behaviour, bugs included; step 9 is the service's own
// handler. The bugs are shown by the package's TestMuseum tests.
//
// Where the lab must differ from the talk, it is said here once:
//
//   - The talk kept the counter and the pools in package variables; each
//     step here declares them in its constructor, so that every call
//     returns a handler whose counter starts at zero and the diff of a
//     step shows everything it changed. The regexp is compiled once per
//     handler, as the talk's package variable was compiled once per
//     process.
//   - Steps 0 to 3 count with a plain int, as the talk's code did until
//     its mutex appeared (the listing after the recorder fix): a data
//     race under concurrent requests. They are benchmarked from one
//     goroutine only.
package greeting

import (
	"bytes"
	"fmt"
	"net/http"
	"regexp"
	"strconv"
	"sync"
	"sync/atomic"

	"visitors/internal/web"
	"visitors/lab/service"
)

// Steps are the constructors of every step, in order. Each call returns a
// fresh handler whose counter starts at zero. The last one returns a
// [*service.Handler], which the caller must close.
var Steps = []func() http.Handler{Step0, Step1, Step2, Step3, Step4, Step5, Step6, Step7, Step8, Step9}

// Racy reports whether step i counts visitors with a data race.
func Racy(i int) bool { return i <= 3 }

// Step0 is the handler as the talk began: regexp.MatchString compiles
// `^\w*$` on every request, the counter is a plain int (a data race),
// Content-Type is set explicitly and the body is built by string
// concatenation with fmt.Sprint.
func Step0() http.Handler {
	var visitors int
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if match, _ := regexp.MatchString(`^\w*$`, r.FormValue("color")); !match {
			http.Error(w, "Optional color is invalid", http.StatusBadRequest)
			return
		}
		visitors++
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Write([]byte("<h1 style='color: " + r.FormValue("color") +
			"'>Welcome!</h1>You are visitor number " + fmt.Sprint(visitors) + "!"))
	})
}

// Step1 compiles the regexp once. The talk's compiled pattern is
// `\w*$`, without the `^` of step 0: it matches every string (at worst
// the empty word at the end), so from here on any color is accepted and
// reflected into the page, markup included.
func Step1() http.Handler {
	var visitors int
	colorRx := regexp.MustCompile(`\w*$`)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !colorRx.MatchString(r.FormValue("color")) {
			http.Error(w, "Optional color is invalid", http.StatusBadRequest)
			return
		}
		visitors++
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Write([]byte("<h1 style='color: " + r.FormValue("color") +
			"'>Welcome!</h1>You are visitor number " + fmt.Sprint(visitors) + "!"))
	})
}

// Step2 removes the Content-Type line: net/http detects text/html from
// the body. It is the talk's first unmeasured "(fix)" between mem.0 and
// mem.2.
func Step2() http.Handler {
	var visitors int
	colorRx := regexp.MustCompile(`\w*$`)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !colorRx.MatchString(r.FormValue("color")) {
			http.Error(w, "Optional color is invalid", http.StatusBadRequest)
			return
		}
		visitors++
		w.Write([]byte("<h1 style='color: " + r.FormValue("color") +
			"'>Welcome!</h1>You are visitor number " + fmt.Sprint(visitors) + "!"))
	})
}

// Step3 writes the body with fmt.Fprintf instead of concatenation: the
// talk's mem.2.
func Step3() http.Handler {
	var visitors int
	colorRx := regexp.MustCompile(`\w*$`)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !colorRx.MatchString(r.FormValue("color")) {
			http.Error(w, "Optional color is invalid", http.StatusBadRequest)
			return
		}
		visitors++
		fmt.Fprintf(w, "<h1 style='color: %s'>Welcome!</h1>You are visitor number %d!", r.FormValue("color"), visitors)
	})
}

// Step4 counts behind a mutex, as the talk's listing after the recorder
// fix (mem.3) shows. The talk's benchmark changed too, to reuse its
// recorder; the lab's benchmarks reuse their writer at every step.
func Step4() http.Handler {
	var visitors struct {
		sync.Mutex
		n int
	}
	colorRx := regexp.MustCompile(`\w*$`)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !colorRx.MatchString(r.FormValue("color")) {
			http.Error(w, "Optional color is invalid", http.StatusBadRequest)
			return
		}
		visitors.Lock()
		visitors.n++
		num := visitors.n
		visitors.Unlock()
		fmt.Fprintf(w, "<h1 style='color: %s'>Welcome!</h1>You are visitor number %d!", r.FormValue("color"), num)
	})
}

// Step5 renders into a buffer from a sync.Pool, with WriteString and
// strconv.AppendInt, and writes it once: the talk's "Removing all
// allocations". The talk's third string lost the quote that closes the
// style attribute, so the markup is broken from here on. And it appends
// the number to buf.Bytes(): once the body outgrows the pooled buffer's
// 64 bytes (with color=red, from visitor 100,000 on) append grows a copy
// that the pool never gets back, so every request from then on allocates
// once (TestMuseumPooledBufferAllocatesFromVisitor100000; steps 6 to 8
// too).
func Step5() http.Handler {
	var visitors struct {
		sync.Mutex
		n int
	}
	colorRx := regexp.MustCompile(`\w*$`)
	bufPool := &sync.Pool{New: func() any { return new(bytes.Buffer) }}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !colorRx.MatchString(r.FormValue("color")) {
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

// Step6 is the talk's "fix" for contention on the regexp: a sync.Pool of
// compiled regexps. The talk's code Gets and never Puts, so the pool is
// always empty and every request compiles the regexp again, as step 0
// did. (The contention it aimed at, a mutex inside regexp, left Go in
// 1.12.)
func Step6() http.Handler {
	var visitors struct {
		sync.Mutex
		n int
	}
	colorRxPool := &sync.Pool{New: func() any { return regexp.MustCompile(`\w*$`) }}
	bufPool := &sync.Pool{New: func() any { return new(bytes.Buffer) }}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !colorRxPool.Get().(*regexp.Regexp).MatchString(r.FormValue("color")) {
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

// Step7 pulls the count into nextVisitorNum, with a deferred Unlock, as
// the talk did before benchmarking the counter alone (see
// [MutexCounter]).
func Step7() http.Handler {
	var visitors struct {
		sync.Mutex
		n int
	}
	nextVisitorNum := func() int {
		visitors.Lock()
		defer visitors.Unlock()
		visitors.n++
		return visitors.n
	}
	colorRxPool := &sync.Pool{New: func() any { return regexp.MustCompile(`\w*$`) }}
	bufPool := &sync.Pool{New: func() any { return new(bytes.Buffer) }}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !colorRxPool.Get().(*regexp.Regexp).MatchString(r.FormValue("color")) {
			http.Error(w, "Optional color is invalid", http.StatusBadRequest)
			return
		}
		num := nextVisitorNum()
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

// Step8 counts with atomic.AddInt64, the talk's last suggestion ("Try:
// with int(atomic.AddInt64(&atomicVisitors, 1))").
func Step8() http.Handler {
	var atomicVisitors int64
	colorRxPool := &sync.Pool{New: func() any { return regexp.MustCompile(`\w*$`) }}
	bufPool := &sync.Pool{New: func() any { return new(bytes.Buffer) }}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !colorRxPool.Get().(*regexp.Regexp).MatchString(r.FormValue("color")) {
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
		b := strconv.AppendInt(buf.Bytes(), int64(num), 10)
		b = append(b, '!')
		w.Write(b)
	})
}

// Step9 is the service's own handler, internal/web, over the in-memory
// store: the anchored color rule checked byte by byte on the raw query,
// no r.FormValue map, no regexp, no fmt, the quote in place, an atomic
// counter, a pooled buffer and one Write. The caller must close it.
func Step9() http.Handler { return service.New(web.Config{}) }

// MutexCounter returns the talk's nextVisitorNum: a mutex, unlocked by
// defer. It is safe for concurrent use.
func MutexCounter() func() int {
	var visitors struct {
		sync.Mutex
		n int
	}
	return func() int {
		visitors.Lock()
		defer visitors.Unlock()
		visitors.n++
		return visitors.n
	}
}

// MutexNoDeferCounter is [MutexCounter] "without defer". It is safe for
// concurrent use.
func MutexNoDeferCounter() func() int {
	var visitors struct {
		sync.Mutex
		n int
	}
	return func() int {
		visitors.Lock()
		visitors.n++
		n := visitors.n
		visitors.Unlock()
		return n
	}
}

// AtomicCounter is the talk's "with int(atomic.AddInt64(&atomicVisitors,
// 1))". It is safe for concurrent use.
func AtomicCounter() func() int {
	var atomicVisitors int64
	return func() int { return int(atomic.AddInt64(&atomicVisitors, 1)) }
}
