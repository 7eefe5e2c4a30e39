package web

import (
	"errors"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"time"

	"visitors/internal/client"
	"visitors/internal/live"
	"visitors/internal/store"
)

// Limits and timing of the live streams, /counter/{key}/stream.
//
// Over HTTP/1.1 each stream holds a connection for as long as it is
// open: DefaultMaxStreams is a quarter of the public listener's default
// -max-conns, and internal/app keeps -max-streams at most half of
// -max-conns, so that streams leave connections to ordinary requests.
// A stream ends after DefaultStreamMaxAge (less up to a tenth, so that
// streams opened together do not end together) with a retry field
// that EventSource waits out before it reconnects: no client holds a
// slot for good, and a crowd of streams reconnects spread out.
const (
	DefaultMaxStreams       = 2500             // open streams in all
	DefaultStreamsPerClient = 4                // open streams from one client address
	DefaultStreamMaxAge     = 30 * time.Minute // how long a stream lasts before the server ends it
	streamInterval          = time.Second      // at most one event a second per stream
	streamHeartbeat         = 15 * time.Second // a comment keeps proxies from closing an idle stream
	streamRetry             = 5 * time.Second  // how long EventSource waits before it reconnects
	streamWriteTimeout      = 10 * time.Second // a client that reads nothing this long is dropped
)

// Client messages of the streams.
var (
	msgStreamsFull   = "Too many live streams are open: try again later (at most " + strconv.Itoa(DefaultMaxStreams) + " by default, -max-streams)"
	msgStreamsClient = "Too many live streams from this address: at most " + strconv.Itoa(DefaultStreamsPerClient) + " at once"
	msgStreamsClosed = "The server is shutting down"
	msgStreamStore   = "The counter store is unavailable"
)

var (
	ctEventStream = []string{"text/event-stream; charset=utf-8"}
	noStore       = []string{"no-cache, no-store"}
	noBuffering   = []string{"no"}
	retryAfter    = []string{strconv.Itoa(int(streamRetry / time.Second))}
)

// streamTimes are the stream's timing, which tests shorten.
type streamTimes struct {
	interval, heartbeat, retry time.Duration
	maxAge                     time.Duration // set from Config.StreamMaxAge
}

// newHub returns the hub of c's streams.
func newHub(c Config) (*live.Hub, streamTimes) {
	max, per := c.MaxStreams, c.StreamsPerClient
	if max <= 0 {
		max = DefaultMaxStreams
	}
	if per <= 0 {
		per = DefaultStreamsPerClient
	}
	t := streamTimes{interval: streamInterval, heartbeat: streamHeartbeat, retry: streamRetry}
	if c.streamTimes != nil {
		t = *c.streamTimes
	}
	t.maxAge = c.StreamMaxAge
	if t.maxAge <= 0 {
		t.maxAge = DefaultStreamMaxAge
	}
	return live.New(live.Options{Get: c.Store.Get, Max: max, PerClient: per, Interval: t.interval}), t
}

// Shutdown ends every live stream and refuses new ones, and stops the
// top list's calendar. Register it with http.Server.RegisterOnShutdown:
// Shutdown waits for handlers to return, and a stream's handler returns
// only when its client leaves or this is called.
func (s *Server) Shutdown() {
	s.hub.Close()
	if s.cal != nil {
		s.cal.Stop()
	}
}

// Streams reports how many live streams are open.
func (s *Server) Streams() int { return s.hub.Streams() }

// handleStream serves /counter/{key}/stream: Server-Sent Events with the
// key's counts, at once and then whenever they change, at most once per
// interval, with a comment every heartbeat, until the stream's age
// (maxAge less up to a tenth) ends it with a retry field. Reading a
// stream counts nothing.
func (s *Server) handleStream(w http.ResponseWriter, r *http.Request) int {
	key, ok := strings.CutSuffix(r.URL.Path[len("/counter/"):], "/stream")
	if !ok {
		return writeError(w, http.StatusNotFound, msgNotFound) // /counter/stream
	}
	if !store.ValidPublicKey(key) {
		return writeError(w, http.StatusBadRequest, store.MsgPublicKey)
	}
	h := w.Header()
	if r.Method == http.MethodHead {
		setStreamHeaders(h)
		return http.StatusOK
	}
	// The client is who the counting path says it is: behind a trusted
	// proxy, the address it forwards, so that the proxy's address does
	// not share one client's few streams among everyone behind it.
	wt, err := s.hub.Watch(key, client.Identify(r.RemoteAddr, r.Header, s.visits.Rules.Trusted).String())
	if err != nil {
		h["Retry-After"] = retryAfter
		switch {
		case errors.Is(err, live.ErrClientFull):
			return writeError(w, http.StatusServiceUnavailable, msgStreamsClient)
		case errors.Is(err, live.ErrClosed):
			return writeError(w, http.StatusServiceUnavailable, msgStreamsClosed)
		}
		return writeError(w, http.StatusServiceUnavailable, msgStreamsFull)
	}
	defer wt.Close()
	last, err := s.visits.Store.Get(r.Context(), []byte(key))
	if err != nil {
		s.log.Error().Err(err).Msg("read counts for a live stream")
		return writeError(w, http.StatusServiceUnavailable, msgStreamStore)
	}

	rc := http.NewResponseController(w)
	// The public listener's write deadline would cut the stream: a
	// stream sets its own before each write. Its read deadline is lifted
	// too: a stream reads nothing more.
	rc.SetReadDeadline(time.Time{})
	setStreamHeaders(h)
	w.WriteHeader(http.StatusOK)
	b := make([]byte, 0, 256)
	b = append(b, "retry: "...)
	b = strconv.AppendInt(b, s.times.retry.Milliseconds(), 10)
	b = append(b, '\n')
	b = appendEvent(b, key, last.Total, last.Today, s.uniqueToday(key))
	if !s.streamWrite(w, rc, b) {
		return http.StatusOK
	}
	sent := time.Now()

	heartbeat := time.NewTicker(s.times.heartbeat)
	defer heartbeat.Stop()
	age := time.NewTimer(s.times.maxAge - rand.N(s.times.maxAge/10+1))
	defer age.Stop()
	hold := time.NewTimer(0) // runs while a change waits out the interval
	<-hold.C
	var pending bool
	next := last
	for {
		select {
		case <-r.Context().Done():
			return http.StatusOK
		case <-s.hub.Done():
			// The server is stopping: the client is told when to come
			// back (a restart takes about a start time), at a moment of
			// its own within a second retry interval so that every
			// stream does not reconnect at once, then the stream ends.
			retry := s.times.retry
			if retry > 0 {
				retry += rand.N(retry)
			}
			b = append(b[:0], "retry: "...)
			b = strconv.AppendInt(b, retry.Milliseconds(), 10)
			s.streamWrite(w, rc, append(b, "\n\n"...))
			return http.StatusOK
		case c := <-wt.C:
			next = c
			if c == last && !pending {
				continue
			}
			if pending {
				continue // the held timer sends the newest
			}
			pending = true
			hold.Reset(time.Until(sent.Add(s.times.interval)))
			continue
		case <-hold.C:
			pending = false
			if next == last {
				continue // changed and changed back
			}
			last = next
			b = appendEvent(b[:0], key, last.Total, last.Today, s.uniqueToday(key))
			sent = time.Now()
		case <-heartbeat.C:
			b = append(b[:0], ": heartbeat\n\n"...)
		case <-age.C:
			// The stream is old enough: the client reconnects after
			// retry and up to as long again, and gets a fresh slot.
			b = append(b[:0], "retry: "...)
			b = strconv.AppendInt(b, (s.times.retry + rand.N(s.times.retry+1)).Milliseconds(), 10)
			b = append(b, "\n\n"...)
			s.streamWrite(w, rc, b)
			return http.StatusOK
		}
		if !s.streamWrite(w, rc, b) {
			return http.StatusOK
		}
	}
}

// streamWrite writes b and flushes it, within the stream's write
// timeout, and reports whether the client took it.
func (s *Server) streamWrite(w http.ResponseWriter, rc *http.ResponseController, b []byte) bool {
	rc.SetWriteDeadline(time.Now().Add(streamWriteTimeout))
	if _, err := w.Write(b); err != nil {
		return false
	}
	return rc.Flush() == nil
}

// appendEvent appends one event: the key's counts and its unique
// visitors today, as the JSON of /counter/{key}.json has them.
func appendEvent(b []byte, key string, total, today, unique uint64) []byte {
	b = append(b, `data: {"key":`...)
	b = appendJSON(b, key)
	b = append(b, `,"total":`...)
	b = strconv.AppendUint(b, total, 10)
	b = append(b, `,"today":`...)
	b = strconv.AppendUint(b, today, 10)
	b = append(b, `,"unique_today":`...)
	b = strconv.AppendUint(b, unique, 10)
	return append(b, "}\n\n"...)
}

// uniqueToday returns key's unique visitors today, as a stream's event
// shows them.
func (s *Server) uniqueToday(key string) uint64 {
	return s.visits.Uniques.Today([]byte(key), s.now())
}

func setStreamHeaders(h http.Header) {
	h["Content-Type"] = ctEventStream
	h["Cache-Control"] = noStore
	h["X-Accel-Buffering"] = noBuffering // nginx: pass events on as they come
	h["Access-Control-Allow-Origin"] = anyOrigin
	h["X-Content-Type-Options"] = nosniff
}
