// Package whoami rebuilds, step by step, a meetup talk's endpoint that
// returns the caller's User-Agent, the host name and the time taken.
// Every step answers with the same bytes for the same clock; the last
// step is the service's own handler.
package whoami

import (
	"bytes"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"

	"visitors/internal/store/memstore"
	"visitors/internal/web"
)

// Steps are the constructors of every step, in order. now is the clock
// the latency is measured with.
var Steps = []func(now func() time.Time) http.Handler{Step0, Step1, Step2, Step3, Step4}

func hostname() string {
	h, err := os.Hostname()
	if err != nil {
		return "unknown"
	}
	return h
}

// Step0 is the endpoint as the talk began: os.Hostname, a syscall, on
// every request, and the response built by appending strings to a
// []string and joining them.
func Step0(now func() time.Time) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := now()
		var lines []string
		lines = append(lines, "User-Agent: "+r.UserAgent())
		lines = append(lines, "Hostname: "+hostname())
		lines = append(lines, "Latency: "+now().Sub(start).String())
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.Write([]byte(strings.Join(lines, "\n") + "\n"))
	})
}

// Step1 looks the host name up once.
func Step1(now func() time.Time) http.Handler {
	host := hostname()
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := now()
		var lines []string
		lines = append(lines, "User-Agent: "+r.UserAgent())
		lines = append(lines, "Hostname: "+host)
		lines = append(lines, "Latency: "+now().Sub(start).String())
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.Write([]byte(strings.Join(lines, "\n") + "\n"))
	})
}

// Step2 writes into a bytes.Buffer with WriteString.
func Step2(now func() time.Time) http.Handler {
	host := hostname()
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := now()
		var buf bytes.Buffer
		writeBody(&buf, r.UserAgent(), host, now().Sub(start))
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.Write(buf.Bytes())
	})
}

func writeBody(buf *bytes.Buffer, ua, host string, lat time.Duration) {
	buf.WriteString("User-Agent: ")
	buf.WriteString(ua)
	buf.WriteString("\nHostname: ")
	buf.WriteString(host)
	buf.WriteString("\nLatency: ")
	buf.WriteString(lat.String())
	buf.WriteString("\n")
}

var bufPool = sync.Pool{New: func() any { return new(bytes.Buffer) }}

// Step3 takes its buffers from a sync.Pool.
func Step3(now func() time.Time) http.Handler {
	host := hostname()
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := now()
		buf := bufPool.Get().(*bytes.Buffer)
		defer bufPool.Put(buf)
		buf.Reset()
		writeBody(buf, r.UserAgent(), host, now().Sub(start))
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.Write(buf.Bytes())
	})
}

// Step4 is the service's own handler, internal/web: headers set from
// preallocated values, the latency formatted without time.Duration.String's
// allocation. It writes at most three decimals of the latency, which the
// table test's clock keeps equal to Duration.String.
func Step4(now func() time.Time) http.Handler {
	return web.New(web.Config{Store: memstore.New(memstore.Options{}), Hostname: hostname(), Now: now})
}
