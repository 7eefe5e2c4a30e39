// Package hello rebuilds, step by step, an article's profiling of a
// /hello handler ("How to profile", 2019): a counter per name that logs
// every visit, first with logrus. Steps 0 to 7 are the article's code,
// one published change each, and keep its behaviour, bugs included; step
// 8 is the service's own handler. The bugs are shown by the package's
// TestMuseum tests.
//
// Where the lab differs from the article, it is said here once:
//
//   - The article kept the counter, the mutex, the pool and the logger in
//     package variables; each step here declares them in its
//     constructor, so that each call returns a fresh handler logging to
//     the writer it is given, and the diff of a step shows everything it
//     changed.
//   - The article's logrus logger was configured with the JSON formatter
//     in main, which its benchmark never ran: the benchmark, and its
//     profiles, used logrus' default TextFormatter. So do steps 0 to 4.
//   - The article shows the code of steps 0, 1, 2, 4, 5 and 7 (its final
//     version). Step 3 ("4_sync_pool_writestring") is reconstructed from
//     its name, and step 6 ("fmt.Sprintf to bytes.Buffer.Write") from its
//     title and the final version's log code. Each says so.
package hello

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"sync"

	"github.com/rs/zerolog"
	"github.com/sirupsen/logrus"

	"visitors/internal/web"
	"visitors/lab/service"
)

// Steps are the constructors of every step, in order. Each call returns a
// fresh handler with no names counted, logging to log. The last one
// returns a [*service.Handler], which the caller must close.
var Steps = []func(log io.Writer) http.Handler{Step0, Step1, Step2, Step3, Step4, Step5, Step6, Step7, Step8}

// newLogrus returns a logrus logger as the article's package-level one
// was in its benchmark: the default TextFormatter, writing to out.
func newLogrus(out io.Writer) *logrus.Logger {
	l := logrus.New()
	l.SetOutput(out)
	return l
}

// Step0 is the handler as the article began: one mutex held, with defer,
// from the increment to the end, Header().Set, the body built by string
// concatenation with fmt.Sprint, and logrus.WithFields. The name and the
// color are written into the page as they came.
func Step0(log io.Writer) http.Handler {
	counter := map[string]int{}
	var mu sync.Mutex // mutex for counter
	logger := newLogrus(log)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		name := r.FormValue("name")
		mu.Lock()
		defer mu.Unlock()
		counter[name]++

		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Write([]byte("<h1 style='color: " + r.FormValue("color") +
			"'>Welcome!</h1> <p>Name: " + name + "</p> <p>Count: " + fmt.Sprint(counter[name]) + "</p>"))

		logger.WithFields(logrus.Fields{
			"module": "main",
			"name":   name,
			"count":  counter[name],
		}).Infof("visited")
	})
}

// Step1 writes the body with fmt.Fprintf. The article's format string
// lost the quote that closes the style attribute. The article measured
// this step slower than step 0.
func Step1(log io.Writer) http.Handler {
	counter := map[string]int{}
	var mu sync.Mutex // mutex for counter
	logger := newLogrus(log)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		name := r.FormValue("name")
		mu.Lock()
		defer mu.Unlock()
		counter[name]++

		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprintf(w, "<h1 style='color: %s>Welcome!</h1> <p>Name: %s</p> <p>Count: %d</p>",
			r.FormValue("color"),
			name,
			counter[name],
		)

		logger.WithFields(logrus.Fields{
			"module": "main",
			"name":   name,
			"count":  counter[name],
		}).Infof("visited")
	})
}

// Step2 renders the body into a bytes.Buffer from a sync.Pool with
// Write([]byte(…)) and strconv.AppendInt, and writes it once. The quote
// is back.
func Step2(log io.Writer) http.Handler {
	counter := map[string]int{}
	var mu sync.Mutex // mutex for counter
	pool := &sync.Pool{New: func() interface{} { return new(bytes.Buffer) }}
	logger := newLogrus(log)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		name := r.FormValue("name")
		mu.Lock()
		defer mu.Unlock()
		counter[name]++

		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		buf := pool.Get().(*bytes.Buffer)
		defer pool.Put(buf)
		buf.Reset()
		buf.Write([]byte("<h1 style='color: "))
		buf.Write([]byte(r.FormValue("color")))
		buf.Write([]byte("'>Welcome!</h1> <p>Name: "))
		buf.Write([]byte(name))
		buf.Write([]byte("</p> <p>Count: "))
		b := strconv.AppendInt(buf.Bytes(), int64(counter[name]), 10)
		b = append(b, []byte("</p>")...)
		w.Write(b)

		logger.WithFields(logrus.Fields{
			"module": "main",
			"name":   name,
			"count":  counter[name],
		}).Infof("visited")
	})
}

// Step3 writes the strings with WriteString instead of Write([]byte(…)).
// Reconstructed: the article benchmarked it ("4_sync_pool_writestring")
// without showing its code.
func Step3(log io.Writer) http.Handler {
	counter := map[string]int{}
	var mu sync.Mutex // mutex for counter
	pool := &sync.Pool{New: func() interface{} { return new(bytes.Buffer) }}
	logger := newLogrus(log)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		name := r.FormValue("name")
		mu.Lock()
		defer mu.Unlock()
		counter[name]++

		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		buf := pool.Get().(*bytes.Buffer)
		defer pool.Put(buf)
		buf.Reset()
		buf.WriteString("<h1 style='color: ")
		buf.WriteString(r.FormValue("color"))
		buf.WriteString("'>Welcome!</h1> <p>Name: ")
		buf.WriteString(name)
		buf.WriteString("</p> <p>Count: ")
		b := strconv.AppendInt(buf.Bytes(), int64(counter[name]), 10)
		b = append(b, "</p>"...)
		w.Write(b)

		logger.WithFields(logrus.Fields{
			"module": "main",
			"name":   name,
			"count":  counter[name],
		}).Infof("visited")
	})
}

// Step4 logs one preformatted message, built with fmt.Sprintf into a
// pooled buffer, with a plain logrus Info: no WithFields map, no fields.
func Step4(log io.Writer) http.Handler {
	counter := map[string]int{}
	var mu sync.Mutex // mutex for counter
	pool := &sync.Pool{New: func() interface{} { return new(bytes.Buffer) }}
	logger := newLogrus(log)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		name := r.FormValue("name")
		mu.Lock()
		defer mu.Unlock()
		counter[name]++

		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		buf := pool.Get().(*bytes.Buffer)
		defer pool.Put(buf)
		buf.Reset()
		buf.WriteString("<h1 style='color: ")
		buf.WriteString(r.FormValue("color"))
		buf.WriteString("'>Welcome!</h1> <p>Name: ")
		buf.WriteString(name)
		buf.WriteString("</p> <p>Count: ")
		b := strconv.AppendInt(buf.Bytes(), int64(counter[name]), 10)
		b = append(b, "</p>"...)
		w.Write(b)

		logbuf := pool.Get().(*bytes.Buffer)
		logbuf.Reset()
		logbuf.WriteString(fmt.Sprintf("visited name=%s count=%d", name, counter[name]))
		logger.Info(logbuf.String())
		pool.Put(logbuf)
	})
}

// Step5 logs the same message with zerolog instead of logrus:
// zerolog.New(w), no timestamp, logger.Info().Msg.
func Step5(log io.Writer) http.Handler {
	counter := map[string]int{}
	var mu sync.Mutex // mutex for counter
	pool := &sync.Pool{New: func() interface{} { return new(bytes.Buffer) }}
	logger := zerolog.New(log)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		name := r.FormValue("name")
		mu.Lock()
		defer mu.Unlock()
		counter[name]++

		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		buf := pool.Get().(*bytes.Buffer)
		defer pool.Put(buf)
		buf.Reset()
		buf.WriteString("<h1 style='color: ")
		buf.WriteString(r.FormValue("color"))
		buf.WriteString("'>Welcome!</h1> <p>Name: ")
		buf.WriteString(name)
		buf.WriteString("</p> <p>Count: ")
		b := strconv.AppendInt(buf.Bytes(), int64(counter[name]), 10)
		b = append(b, "</p>"...)
		w.Write(b)

		logbuf := pool.Get().(*bytes.Buffer)
		logbuf.Reset()
		logbuf.WriteString(fmt.Sprintf("visited name=%s count=%d", name, counter[name]))
		logger.Info().Msg(logbuf.String())
		pool.Put(logbuf)
	})
}

// Step6 builds the log message with buffer writes instead of
// fmt.Sprintf. Reconstructed from the article's title and its final
// version's log code, whose "count=" lost the space after the name.
func Step6(log io.Writer) http.Handler {
	counter := map[string]int{}
	var mu sync.Mutex // mutex for counter
	pool := &sync.Pool{New: func() interface{} { return new(bytes.Buffer) }}
	logger := zerolog.New(log)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		name := r.FormValue("name")
		mu.Lock()
		defer mu.Unlock()
		counter[name]++

		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		buf := pool.Get().(*bytes.Buffer)
		defer pool.Put(buf)
		buf.Reset()
		buf.WriteString("<h1 style='color: ")
		buf.WriteString(r.FormValue("color"))
		buf.WriteString("'>Welcome!</h1> <p>Name: ")
		buf.WriteString(name)
		buf.WriteString("</p> <p>Count: ")
		b := strconv.AppendInt(buf.Bytes(), int64(counter[name]), 10)
		b = append(b, "</p>"...)
		w.Write(b)

		logbuf := pool.Get().(*bytes.Buffer)
		logbuf.Reset()
		logbuf.Write([]byte("visited name="))
		logbuf.Write([]byte(name))
		logbuf.Write([]byte("count="))
		logbuf.Write([]byte(strconv.Itoa(counter[name])))
		logger.Info().Msg(logbuf.String())
		pool.Put(logbuf)
	})
}

// Step7 is the article's final version: the lock held only for the
// increment, the count formatted once as a []byte, the buffers put back
// without defer, Write([]byte(…)) again, and no Header().Set (net/http
// sniffs the type). Its body also lost the closing </p>.
func Step7(log io.Writer) http.Handler {
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

// Step8 is the service's own handler, internal/web, over the in-memory
// store, logging with zerolog to log: the color and the name validated,
// the name HTML-escaped straight into a pooled buffer, no lock at all
// for a known name (atomic counters in a lock-free map), the query parsed
// in place, structured fields and a timestamp in the log. In the service,
// log is the non-blocking internal/logsink writer. The caller must close
// it.
func Step8(log io.Writer) http.Handler {
	return service.New(web.Config{Log: zerolog.New(log).With().Timestamp().Logger()})
}
