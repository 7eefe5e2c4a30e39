// Package greeting rebuilds, step by step, the /hi handler optimised in a
// Go profiling talk at YAPC::Asia 2015. Every step answers every request
// with the same bytes; the last step is the service's own handler.
//
// Steps 0 to 3 count with a plain int, as the talk did. That is a data
// race under concurrent requests, so they are benchmarked and tested only
// from one goroutine; step 4 fixes it and is compared in parallel.
package greeting

import (
	"bytes"
	"fmt"
	"net/http"
	"regexp"
	"strconv"
	"sync"
	"sync/atomic"

	"visitors/internal/store/memstore"
	"visitors/internal/web"
)

// maxColor is the service's limit on the color parameter; every step
// keeps it so that every step answers alike.
const maxColor = 64

const msgColor = "Optional color is invalid"

// Steps are the constructors of every step, in order. Each call returns a
// fresh handler whose counter starts at zero.
var Steps = []func() http.Handler{Step0, Step1, Step2, Step3, Step4, Step5}

// badColor answers an invalid color the way the service does.
func badColor(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(http.StatusBadRequest)
	w.Write([]byte(msgColor))
}

// Step0 is the handler as the talk began: the regexp compiled on every
// request by regexp.MatchString, an explicit Header().Set, and the body
// built by string concatenation with fmt.Sprint. Its counter is racy.
func Step0() http.Handler {
	visitors := 0
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		color := r.FormValue("color")
		if match, _ := regexp.MatchString(`^\w*$`, color); !match || len(color) > maxColor {
			badColor(w)
			return
		}
		visitors++
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Write([]byte("<h1 style='color: " + color + "'>Welcome!</h1>You are visitor number " + fmt.Sprint(visitors) + "!"))
	})
}

// colorRx is compiled once, from step 1 on.
var colorRx = regexp.MustCompile(`^\w*$`)

// Step1 compiles the regexp once, at package level.
func Step1() http.Handler {
	visitors := 0
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		color := r.FormValue("color")
		if !colorRx.MatchString(color) || len(color) > maxColor {
			badColor(w)
			return
		}
		visitors++
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Write([]byte("<h1 style='color: " + color + "'>Welcome!</h1>You are visitor number " + fmt.Sprint(visitors) + "!"))
	})
}

// Step2 sets no Content-Type, leaving net/http to detect text/html from
// the body, and writes the body with fmt.Fprintf.
func Step2() http.Handler {
	visitors := 0
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		color := r.FormValue("color")
		if !colorRx.MatchString(color) || len(color) > maxColor {
			badColor(w)
			return
		}
		visitors++
		fmt.Fprintf(w, "<h1 style='color: %s'>Welcome!</h1>You are visitor number %d!", color, visitors)
	})
}

var bufPool = sync.Pool{New: func() any { return new(bytes.Buffer) }}

// Step3 renders into a pooled buffer with strconv.AppendInt and writes
// the body with one Write.
func Step3() http.Handler {
	visitors := 0
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		color := r.FormValue("color")
		if !colorRx.MatchString(color) || len(color) > maxColor {
			badColor(w)
			return
		}
		visitors++
		buf := bufPool.Get().(*bytes.Buffer)
		defer bufPool.Put(buf)
		buf.Reset()
		buf.WriteString("<h1 style='color: ")
		buf.WriteString(color)
		buf.WriteString("'>Welcome!</h1>You are visitor number ")
		b := strconv.AppendInt(buf.AvailableBuffer(), int64(visitors), 10)
		buf.Write(b)
		buf.WriteByte('!')
		w.Write(buf.Bytes())
	})
}

// Step4 is step 3 with a race-free counter: atomic.AddInt64. Step4Mutex
// is the alternative it was measured against.
func Step4() http.Handler {
	var visitors int64
	return step4(func() int64 { return atomic.AddInt64(&visitors, 1) })
}

// Step4Mutex is step 3 with the counter behind a sync.Mutex.
func Step4Mutex() http.Handler {
	var mu sync.Mutex
	var visitors int64
	return step4(func() int64 {
		mu.Lock()
		defer mu.Unlock()
		visitors++
		return visitors
	})
}

func step4(next func() int64) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		color := r.FormValue("color")
		if !colorRx.MatchString(color) || len(color) > maxColor {
			badColor(w)
			return
		}
		n := next()
		buf := bufPool.Get().(*bytes.Buffer)
		defer bufPool.Put(buf)
		buf.Reset()
		buf.WriteString("<h1 style='color: ")
		buf.WriteString(color)
		buf.WriteString("'>Welcome!</h1>You are visitor number ")
		buf.Write(strconv.AppendInt(buf.AvailableBuffer(), n, 10))
		buf.WriteByte('!')
		w.Write(buf.Bytes())
	})
}

// Step5 is the service's own handler, internal/web, over the in-memory
// store: the query parsed in place without r.FormValue's map, the color
// checked without a regexp, headers set without allocating, the body
// rendered into a pooled buffer.
func Step5() http.Handler {
	return web.New(web.Config{Store: memstore.New(memstore.Options{})})
}
