package certs

import (
	"net"
	"net/http"
	"strconv"
	"strings"
)

// Redirect is the handler of the plain-HTTP listener: it sends a GET or
// HEAD to the same path over HTTPS, with 308, for a host HTTPS serves
// (Serves), on HTTPS's port. It answers other methods 400: a form posted
// over plain HTTP was already seen in the clear; and a request-target
// that is not a path (an opaque URI, *) 400. A Host that is not a
// DNS name or an IP address is answered 400, and one HTTPS does not
// serve 421, or sent to Fallback if it is set: never to a name the
// client chose. It may be used concurrently.
type Redirect struct {
	// Serves reports whether HTTPS serves host: a DNS name, lowercased,
	// without a trailing dot, or an IP address. Required.
	Serves func(host string) bool
	// Fallback, if not "", is the name a host HTTPS does not serve is
	// sent to: one HTTPS serves.
	Fallback string
	// Port is HTTPS's port: 0 or 443 leave it out of the URL.
	Port int
}

// Client messages of [Redirect].
const (
	msgUseHTTPS  = "Use HTTPS\n"
	msgBadHost   = "Use HTTPS, with the name of this server\n"
	msgNotServed = "This server does not serve that name over HTTPS\n"
	msgBadTarget = "Use HTTPS, with a path that begins with /\n"
)

// ServeHTTP redirects r to HTTPS, or refuses it.
func (rd Redirect) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		http.Error(w, msgUseHTTPS, http.StatusBadRequest)
		return
	}
	if r.URL.Opaque != "" || r.URL.Path != "" && r.URL.Path[0] != '/' {
		// http:@evil.example/ or *: pasted after the host, it would
		// name another (https://a.example@evil.example/).
		http.Error(w, msgBadTarget, http.StatusBadRequest)
		return
	}
	host := r.Host
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	host = strings.ToLower(strings.TrimSuffix(host, "."))
	switch {
	case checkDomain(host) != nil && net.ParseIP(strings.Trim(host, "[]")) == nil:
		http.Error(w, msgBadHost, http.StatusBadRequest)
		return
	case rd.Serves(strings.Trim(host, "[]")):
	case rd.Fallback != "":
		host = rd.Fallback
	default:
		http.Error(w, msgNotServed, http.StatusMisdirectedRequest)
		return
	}
	host = strings.Trim(host, "[]")
	if rd.Port != 0 && rd.Port != 443 {
		host = net.JoinHostPort(host, strconv.Itoa(rd.Port))
	} else if strings.Contains(host, ":") { // IPv6
		host = "[" + host + "]"
	}
	w.Header().Set("Connection", "close")
	http.Redirect(w, r, "https://"+host+r.URL.RequestURI(), http.StatusPermanentRedirect)
}

// Names returns a [Redirect].Serves that serves names alone: the
// names of -tls-domains.
func Names(names []string) func(host string) bool {
	return func(host string) bool {
		for _, n := range names {
			if n == host {
				return true
			}
		}
		return false
	}
}
