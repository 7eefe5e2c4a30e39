package web

import (
	"net/http"
	"strconv"
	"time"

	"visitors/internal/store"
	"visitors/internal/store/tally"
	"visitors/internal/top"
)

// Limits of /top.json.
const (
	defaultTopDays  = 7
	defaultTopLimit = 10
	topTTL          = 30 * time.Second // how old a list may be: one ranking per TTL
)

// Client messages of /top.json.
var (
	msgTopDays  = "Optional days must be a whole number from 1 to " + strconv.Itoa(top.MaxDays)
	msgTopLimit = "Optional limit must be a whole number from 1 to " + strconv.Itoa(top.MaxLimit)
	msgTopOff   = "The list of the most visited counters is off on this server (-public-top)"
)

// topCacheControl lets clients and proxies keep a list as long as the
// server does.
var topCacheControl = []string{"public, max-age=" + strconv.Itoa(int(topTTL/time.Second))}

// newBoard returns the board of the most visited counters and the
// calendar it dates visits by, or nils when c does not make them public.
func newBoard(c Config) (*top.Board, *tally.Calendar) {
	if !c.PublicTop {
		return nil, nil
	}
	cal := tally.NewCalendar(c.Now)
	return top.New(top.Options{Store: c.Store, Today: cal.Today, TTL: topTTL, Now: c.Now}), cal
}

// observe tells the board, if any, of a counted visit to key.
func (s *Server) observe(key []byte, c store.Counts) {
	if s.top != nil {
		s.top.Observe(key, c)
	}
}

// handleTop serves /top.json?days=D&limit=L: the L counters with the
// most visits in the last D UTC days, today included. Any other parameter
// is refused with 400, as on the counter routes.
func (s *Server) handleTop(w http.ResponseWriter, r *http.Request) int {
	if s.top == nil {
		return writeError(w, http.StatusNotFound, msgTopOff)
	}
	if name, found := unknownParamIn(r.URL.RawQuery, topParams); found {
		return s.fail(w, r, false, unknownParamOf(name, msgTopParams))
	}
	days, ok := intParam(r.URL.RawQuery, "days", defaultTopDays, top.MaxDays)
	if !ok {
		return writeError(w, http.StatusBadRequest, msgTopDays)
	}
	limit, ok := intParam(r.URL.RawQuery, "limit", defaultTopLimit, top.MaxLimit)
	if !ok {
		return writeError(w, http.StatusBadRequest, msgTopLimit)
	}
	list, err := s.top.List(r.Context(), days)
	if err != nil {
		s.log.Error().Err(err).Msg("rank the most visited counters")
		return writeError(w, http.StatusServiceUnavailable, msgStreamStore)
	}
	list = list[:min(limit, len(list))]
	b := make([]byte, 0, 64+len(list)*48)
	b = append(b, `{"days":`...)
	b = strconv.AppendInt(b, int64(days), 10)
	b = append(b, `,"top":[`...)
	for i, e := range list {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"key":`...)
		b = appendJSON(b, e.Key)
		b = append(b, `,"count":`...)
		b = strconv.AppendUint(b, e.Count, 10)
		b = append(b, '}')
	}
	b = append(b, "]}\n"...)
	h := w.Header()
	h["Content-Type"] = ctJSON
	h["Access-Control-Allow-Origin"] = anyOrigin
	h["Cache-Control"] = topCacheControl
	h["X-Content-Type-Options"] = nosniff
	w.Write(b)
	return http.StatusOK
}

// intParam parses an optional whole number from 1 to max, def when
// absent.
func intParam(q, key string, def, max int) (int, bool) {
	v, found := queryValue(q, key)
	if !found {
		return def, true
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 || n > max || len(v) > 3 {
		return 0, false
	}
	return n, true
}
