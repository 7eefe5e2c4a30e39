// Package compat answers the URLs of public counters whose service
// closed, so that their users move here by changing one host name:
// HITS (hits.seeyoufarm.com), CountAPI and Abacus, visitor-badge
// (visitor-badge.glitch.me, visitor-badge.laobi.icu) and the GitHub
// profile views counter (komarev.com/ghpvc). Each URL counts into a key
// of visitors' own ([Key]: one namespace per service), through the one
// counting path of internal/web and internal/visit with every fairness
// rule (crawlers, the per-client rate, repeat views, the budget of new
// keys), and is drawn by internal/badge. It holds no counting of its
// own: a [Counter] does it.
//
// Parameters a service took that this package does not know are
// ignored, as the services ignored them; the ones it knows are checked,
// and a bad value is a 400 that says which.
package compat

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"visitors/internal/httperr"
	"visitors/internal/visit"
)

// Service is one closed service whose URLs visitors answers.
type Service uint8

// The services, as -compat names them.
const (
	HITS         Service = iota // hits: /api/count/incr/badge.svg and /api/count/keep/badge.svg
	CountAPI                    // countapi: /hit/{namespace}/{key} and /get/{namespace}/{key} (CountAPI and Abacus)
	VisitorBadge                // visitor-badge: /badge?page_id=ID
	GHPVC                       // ghpvc: /ghpvc/?username=NAME
	numServices
)

var serviceNames = [numServices]string{"hits", "countapi", "visitor-badge", "ghpvc"}

// String returns the service's name, as -compat takes it.
func (s Service) String() string { return serviceNames[s] }

// Services is a set of services, and the flag.Value of -compat: "all",
// "none" or a comma-separated list of names.
type Services uint8

// AllServices is the set of every service: -compat's default.
const AllServices = Services(1<<numServices - 1)

// Has reports whether s holds x.
func (s Services) Has(x Service) bool { return s&(1<<x) != 0 }

// String returns "all", "none", or the names of s, comma-separated.
func (s Services) String() string {
	switch s {
	case 0:
		return "none"
	case AllServices:
		return "all"
	}
	var names []string
	for x := range numServices {
		if s.Has(x) {
			names = append(names, x.String())
		}
	}
	return strings.Join(names, ",")
}

// Get returns s, for flag.Getter.
func (s *Services) Get() any { return *s }

// Set parses v: "all", "none", or names from hits, countapi,
// visitor-badge and ghpvc, comma-separated.
func (s *Services) Set(v string) error {
	switch v {
	case "all":
		*s = AllServices
		return nil
	case "none", "":
		*s = 0
		return nil
	}
	var set Services
	for name := range strings.SplitSeq(v, ",") {
		x, ok := parseService(strings.TrimSpace(name))
		if !ok {
			return fmt.Errorf("unknown service %q: want all, none, or a comma-separated list of %s", name, strings.Join(serviceNames[:], ", "))
		}
		set |= 1 << x
	}
	*s = set
	return nil
}

func parseService(name string) (Service, bool) {
	for i, n := range serviceNames {
		if n == name {
			return Service(i), true
		}
	}
	return 0, false
}

// Counter is the counting path a URL of a closed service hands its
// visit to: internal/web's, which names the client, applies the
// fairness rules through internal/visit, reports to the metrics, marks
// a refused visit's answer (Visitors-Counted: false) on w, and turns a
// refusal into the client's error. count false reads the counts without
// counting.
type Counter interface {
	Count(w http.ResponseWriter, r *http.Request, key []byte, count bool) (visit.Outcome, *httperr.HTTPError)
}

// Handler answers the URLs of the services it was made with. It holds
// nothing that changes, and may be used concurrently.
type Handler struct {
	on Services
}

// New returns a Handler that answers the URLs of the services in on.
func New(on Services) *Handler { return &Handler{on: on} }

// The paths of the services.
const (
	pathHITSIncr = "/api/count/incr/badge.svg"
	pathHITSKeep = "/api/count/keep/badge.svg"
	pathHit      = "/hit/"
	pathGet      = "/get/"
	pathBadge    = "/badge"
	pathGHPVC    = "/ghpvc/"
)

// route returns the service that answers path, and whether one does.
func route(path string) (Service, bool) {
	switch {
	case path == pathHITSIncr || path == pathHITSKeep:
		return HITS, true
	case strings.HasPrefix(path, pathHit) || strings.HasPrefix(path, pathGet):
		return CountAPI, true
	case path == pathBadge:
		return VisitorBadge, true
	case path == pathGHPVC || path == pathGHPVC[:len(pathGHPVC)-1]:
		return GHPVC, true
	}
	return 0, false
}

// Match reports whether h answers path: a path of a service it was made
// with. It allocates nothing.
func (h *Handler) Match(path string) bool {
	s, ok := route(path)
	return ok && h.on.Has(s)
}

// Serve answers r, whose path [Handler.Match] took, counting through c,
// and returns the status it answered with, with metrics.Visit added if
// a visit counted (as internal/web's handlers do).
func (h *Handler) Serve(c Counter, w http.ResponseWriter, r *http.Request) int {
	s, _ := route(r.URL.Path)
	q, err := url.ParseQuery(r.URL.RawQuery)
	if err != nil {
		q = nil
	}
	switch s {
	case HITS:
		return serveHITS(c, w, r, q, err)
	case CountAPI:
		return serveCountAPI(c, w, r, q, err)
	case VisitorBadge:
		return serveVisitorBadge(c, w, r, q, err)
	}
	return serveGHPVC(c, w, r, q, err)
}

// badRequest is a 400 with msg, and short for a badge.
func badRequest(msg, short string) *httperr.HTTPError {
	return &httperr.HTTPError{Code: http.StatusBadRequest, Msg: msg, Badge: short}
}

// errQuery refuses a query that is not valid URL encoding.
var errQuery = badRequest("Query string is not valid URL encoding", "invalid query")

// errKeyTooLong refuses a name whose key would be too long.
var errKeyTooLong = badRequest(msgKeyTooLong, "name too long")

// errMissing refuses a request without its required parameter name.
func errMissing(name string) *httperr.HTTPError {
	return badRequest("Parameter "+name+" is required", name+" missing")
}
