// Package hello rebuilds, step by step, an article's profiling of a
// /hello handler: a counter per name that logs every visit, first with
// logrus. Every step answers every request with the same bytes and logs
// one line per counted visit; the last step is the service's own handler.
package hello

import (
	"bytes"
	"fmt"
	"html"
	"io"
	"net/http"
	"regexp"
	"strconv"
	"sync"
	"unicode/utf8"

	"github.com/rs/zerolog"
	"github.com/sirupsen/logrus"

	"visitors/internal/store/memstore"
	"visitors/internal/web"
)

// Steps are the constructors of every step, in order. Each call returns a
// fresh handler with no names counted, logging to log.
var Steps = []func(log io.Writer) http.Handler{Step0, Step1, Step2, Step3, Step4, Step5, Step6, Step7}

const (
	msgColor = "Optional color is invalid"
	msgName  = "Name must be at most 128 bytes of valid UTF-8"
)

var colorRx = regexp.MustCompile(`^\w*$`)

// input reads and checks the query as the service does, and answers a
// bad one as the service does. It is the same in every step: the
// article's steps do not touch it.
func input(w http.ResponseWriter, r *http.Request) (name, color string, ok bool) {
	name, color = r.FormValue("name"), r.FormValue("color")
	msg := ""
	switch {
	case !colorRx.MatchString(color) || len(color) > web.MaxColorBytes:
		msg = msgColor
	case len(name) > web.MaxNameBytes || !utf8.ValidString(name):
		msg = msgName
	default:
		return name, color, true
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(http.StatusBadRequest)
	io.WriteString(w, msg)
	return "", "", false
}

func newLogrus(out io.Writer) *logrus.Logger {
	l := logrus.New()
	l.SetOutput(out)
	l.SetFormatter(&logrus.JSONFormatter{})
	return l
}

// Step0 is the handler as the article began: one mutex held with defer
// across the whole handler, Header().Set, the body built by string
// concatenation with fmt.Sprint, and logrus.WithFields with the JSON
// formatter.
func Step0(log io.Writer) http.Handler {
	var mu sync.Mutex
	counts := map[string]int{}
	logger := newLogrus(log)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		name, color, ok := input(w, r)
		if !ok {
			return
		}
		counts[name]++
		n := counts[name]
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Write([]byte("<h1 style='color: " + color + "'>Welcome!</h1> <p>Name: " + html.EscapeString(name) + "</p> <p>Count: " + fmt.Sprint(n) + "</p>"))
		logger.WithFields(logrus.Fields{"module": "hello", "name": name, "count": n}).Infof("visited")
	})
}

const bodyFormat = "<h1 style='color: %s'>Welcome!</h1> <p>Name: %s</p> <p>Count: %d</p>"

// Step1 writes the body with fmt.Fprintf. The article found it slower.
func Step1(log io.Writer) http.Handler {
	var mu sync.Mutex
	counts := map[string]int{}
	logger := newLogrus(log)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		name, color, ok := input(w, r)
		if !ok {
			return
		}
		counts[name]++
		n := counts[name]
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprintf(w, bodyFormat, color, html.EscapeString(name), n)
		logger.WithFields(logrus.Fields{"module": "hello", "name": name, "count": n}).Infof("visited")
	})
}

var bufPool = sync.Pool{New: func() any { return new(bytes.Buffer) }}

func getBuf() *bytes.Buffer {
	b := bufPool.Get().(*bytes.Buffer)
	b.Reset()
	return b
}

// Step2 formats the body into a pooled buffer and writes it once.
func Step2(log io.Writer) http.Handler {
	var mu sync.Mutex
	counts := map[string]int{}
	logger := newLogrus(log)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		name, color, ok := input(w, r)
		if !ok {
			return
		}
		counts[name]++
		n := counts[name]
		buf := getBuf()
		defer bufPool.Put(buf)
		fmt.Fprintf(buf, bodyFormat, color, html.EscapeString(name), n)
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Write(buf.Bytes())
		logger.WithFields(logrus.Fields{"module": "hello", "name": name, "count": n}).Infof("visited")
	})
}

// Step3 pre-formats the log message into a pooled buffer and logs it with
// a plain logrus.Info, skipping WithFields' map.
func Step3(log io.Writer) http.Handler {
	var mu sync.Mutex
	counts := map[string]int{}
	logger := newLogrus(log)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		name, color, ok := input(w, r)
		if !ok {
			return
		}
		counts[name]++
		n := counts[name]
		buf := getBuf()
		defer bufPool.Put(buf)
		fmt.Fprintf(buf, bodyFormat, color, html.EscapeString(name), n)
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Write(buf.Bytes())
		msg := getBuf()
		defer bufPool.Put(msg)
		fmt.Fprintf(msg, "visited module=hello name=%q count=%d", name, n)
		logger.Info(msg.String())
	})
}

// Step4 logs with zerolog instead of logrus.
func Step4(log io.Writer) http.Handler {
	var mu sync.Mutex
	counts := map[string]int{}
	logger := zerolog.New(log).With().Timestamp().Logger()
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		name, color, ok := input(w, r)
		if !ok {
			return
		}
		counts[name]++
		n := counts[name]
		buf := getBuf()
		defer bufPool.Put(buf)
		fmt.Fprintf(buf, bodyFormat, color, html.EscapeString(name), n)
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Write(buf.Bytes())
		logger.Info().Str("module", "hello").Str("name", name).Int("count", n).Msg("visited")
	})
}

// writeBody renders the page with buffer writes instead of fmt.
func writeBody(buf *bytes.Buffer, color, name string, n int) {
	buf.WriteString("<h1 style='color: ")
	buf.WriteString(color)
	buf.WriteString("'>Welcome!</h1> <p>Name: ")
	buf.WriteString(html.EscapeString(name))
	buf.WriteString("</p> <p>Count: ")
	buf.Write(strconv.AppendInt(buf.AvailableBuffer(), int64(n), 10))
	buf.WriteString("</p>")
}

// Step5 replaces fmt's formatting with buffer writes and strconv.
func Step5(log io.Writer) http.Handler {
	var mu sync.Mutex
	counts := map[string]int{}
	logger := zerolog.New(log).With().Timestamp().Logger()
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		name, color, ok := input(w, r)
		if !ok {
			return
		}
		counts[name]++
		n := counts[name]
		buf := getBuf()
		defer bufPool.Put(buf)
		writeBody(buf, color, name, n)
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Write(buf.Bytes())
		logger.Info().Str("module", "hello").Str("name", name).Int("count", n).Msg("visited")
	})
}

// Step6 holds the lock only for the increment.
func Step6(log io.Writer) http.Handler {
	var mu sync.Mutex
	counts := map[string]int{}
	logger := zerolog.New(log).With().Timestamp().Logger()
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		name, color, ok := input(w, r)
		if !ok {
			return
		}
		mu.Lock()
		counts[name]++
		n := counts[name]
		mu.Unlock()
		buf := getBuf()
		defer bufPool.Put(buf)
		writeBody(buf, color, name, n)
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Write(buf.Bytes())
		logger.Info().Str("module", "hello").Str("name", name).Int("count", n).Msg("visited")
	})
}

// Step7 is the service's own handler, internal/web, over the in-memory
// store, logging with zerolog to log: no lock at all for a known name
// (atomic counters in a lock-free map), the query parsed in place, the
// name escaped straight into a pooled buffer. In the service, log is the
// non-blocking internal/logsink writer.
func Step7(log io.Writer) http.Handler {
	return web.New(web.Config{
		Store: memstore.New(memstore.Options{}),
		Log:   zerolog.New(log).With().Timestamp().Logger(),
	})
}
