// Package whoami reconstructs, step by step, a meetup talk's endpoint that
// returns the caller's User-Agent, the host name and the time taken (Go
// Bangalore, an April meetup of a year the note does not give, from a note of it). The note publishes no code, only
// what each change was and two figures, so steps 0 to 3 are the lab's
// reconstruction of the described changes, not the talk's code; step 4 is
// the service's own handler.
//
// Steps 0 to 3 answer with the same bytes for the same clock. The service
// (step 4) writes the same lines but formats the latency with at most
// three decimals (1.234567ms reads 1.234ms), where the reconstruction
// uses time.Duration.String; TestLatencyFormat shows where they differ.
package whoami

import (
	"bytes"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"

	"visitors/internal/web"
	"visitors/lab/service"
)

// Steps are the constructors of every step, in order. now is the clock
// the latency is measured with. The last one returns a
// [*service.Handler], which the caller must close.
var Steps = []func(now func() time.Time) http.Handler{Step0, Step1, Step2, Step3, Step4}

func hostname() string {
	h, err := os.Hostname()
	if err != nil {
		return "unknown"
	}
	return h
}

// Step0 is the endpoint as the note describes the start: os.Hostname, a
// syscall, on every request, and the response built by appending strings
// to a string slice ("string slice appends") and joining them.
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

// Step1 looks the host name up once, outside the handler: the note's
// first fix, found with net/http/pprof. Its go test benchmark is the one
// the note quotes: 716 ns, 12 allocations, 447 bytes per operation.
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

// Step2 writes into a bytes.Buffer with WriteString, the note's "string
// buffer".
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

// Step3 takes its buffers from a sync.Pool: the note's last step, 520 ns.
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
// preallocated values (no Header().Set, whose value slice was step 3's
// one allocation of its own), the body appended to a pooled slice, the
// latency with at most three decimals (time.Duration.String allocated
// nothing in the steps before: its result stays on the stack). The
// caller must close it.
func Step4(now func() time.Time) http.Handler {
	return service.New(web.Config{Hostname: hostname(), Now: now})
}
