package web

import (
	"net/http"

	"visitors/internal/httperr"
	"visitors/internal/visit"
)

// handleCompat serves the URLs of the closed counter services
// (internal/compat), which count through this server's counting path.
func (s *Server) handleCompat(w http.ResponseWriter, r *http.Request) int {
	return s.compat.Serve(compatCounter{s}, w, r)
}

// compatCounter is the counting path internal/compat hands its visits
// to: the one of /counter/ (record), with the key listed among the most
// visited as a /counter/ key is.
type compatCounter struct{ s *Server }

// Count counts a visit to key, or reads its counts if count is false,
// and marks a refused visit's answer on w.
func (c compatCounter) Count(w http.ResponseWriter, r *http.Request, key []byte, count bool) (visit.Outcome, *httperr.HTTPError) {
	v := countReq{Visit: visit.Visit{Key: key, Count: count, Listed: true}, r: r}
	o, herr := c.s.record(&v)
	if herr == nil && o.Refused {
		markRefused(w.Header())
	}
	return o, herr
}
