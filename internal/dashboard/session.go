package dashboard

import (
	"crypto/subtle"
	"encoding/base64"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"
)

// CookieName is the name of the session cookie.
const CookieName = "visitors_dashboard"

// Session limits by default.
const (
	DefaultIdle        = 30 * time.Minute // a session unused this long ends
	DefaultMaxAge      = 12 * time.Hour   // a session ends this long after its sign-in, used or not
	DefaultMaxSessions = 10000            // the most sessions held; a sign-in past it ends the oldest of the token with the most
)

// session is one signed-in browser. Its fields are set at sign-in and
// read only after, except seen, which the sessions' mutex guards.
type session struct {
	id      string // the cookie's value: 32 bytes of crypto/rand
	csrf    string // what every state change must carry: 32 more
	secret  string // the token signed in with, checked on every request; never shown or logged
	created time.Time
	order   uint64    // its place among the sign-ins: which is older, when two share a created time
	seen    time.Time // guarded by sessions.mu
}

// sessions holds the signed-in sessions in memory: a restart signs
// everyone out, and each instance behind a balancer has its own. It is
// safe for concurrent use.
type sessions struct {
	rand         io.Reader
	idle, maxAge time.Duration
	max          int
	mu           sync.Mutex          // guards m, signIns and every session's seen
	m            map[string]*session // by id
	signIns      uint64              // the sign-ins so far: the next session's order
}

func newSessions(rnd io.Reader, idle, maxAge time.Duration, max int) *sessions {
	return &sessions{rand: rnd, idle: idle, maxAge: maxAge, max: max, m: make(map[string]*session)}
}

// randomID returns 32 bytes of rnd in base64url.
func randomID(rnd io.Reader) (string, error) {
	var b [32]byte
	if _, err := io.ReadFull(rnd, b[:]); err != nil {
		return "", fmt.Errorf("random session id: %w", err)
	}
	return base64.RawURLEncoding.EncodeToString(b[:]), nil
}

// start makes a new session for secret at now, with ids of its own:
// never one the browser brought (no fixation).
func (s *sessions) start(secret string, now time.Time) (*session, error) {
	id, err := randomID(s.rand)
	if err != nil {
		return nil, err
	}
	csrf, err := randomID(s.rand)
	if err != nil {
		return nil, err
	}
	ss := &session{id: id, csrf: csrf, secret: secret, created: now, seen: now}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.signIns++
	ss.order = s.signIns
	if len(s.m) >= s.max {
		s.sweep(now)
	}
	for len(s.m) >= s.max { // still full: the oldest sign-in of the token with the most sessions goes
		delete(s.m, s.victim(secret).id)
	}
	s.m[id] = ss
	return ss, nil
}

// victim returns the session to end for a sign-in with secret when
// s is full: the oldest of the token holding the most sessions, the
// one signing in counted one more; oldest by the order of sign-in, not
// by the clock, which may give two sign-ins one time (a test's fixed
// clock does; a coarse one could). Not the oldest of all: a holder of
// any token could then sign in again and again and sign every other
// owner out. s.mu is held; s.m is not empty.
func (s *sessions) victim(secret string) *session {
	n := make(map[string]int)
	n[secret]++
	for _, o := range s.m {
		n[o.secret]++
	}
	var v *session
	for _, o := range s.m {
		if v == nil || n[o.secret] > n[v.secret] || n[o.secret] == n[v.secret] && o.order < v.order {
			v = o
		}
	}
	return v
}

// sweep drops the sessions past their idle or absolute limit. s.mu is
// held.
func (s *sessions) sweep(now time.Time) {
	for id, ss := range s.m {
		if s.expired(ss, now) {
			delete(s.m, id)
		}
	}
}

func (s *sessions) expired(ss *session, now time.Time) bool {
	return now.Sub(ss.seen) > s.idle || now.Sub(ss.created) > s.maxAge || now.Before(ss.created)
}

// get returns the live session of r's cookie, and marks it seen at
// now; nil if there is none, or it expired (then it is dropped).
func (s *sessions) get(r *http.Request, now time.Time) *session {
	c, err := r.Cookie(CookieName)
	if err != nil || c.Value == "" {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	ss := s.m[c.Value]
	if ss == nil {
		return nil
	}
	if s.expired(ss, now) {
		delete(s.m, ss.id)
		return nil
	}
	ss.seen = now
	return ss
}

// end drops the session with id.
func (s *sessions) end(id string) {
	s.mu.Lock()
	delete(s.m, id)
	s.mu.Unlock()
}

// validCSRF reports whether token is ss's CSRF token.
func (ss *session) validCSRF(token string) bool {
	return token != "" && subtle.ConstantTimeCompare([]byte(token), []byte(ss.csrf)) == 1
}

// cookie returns the session cookie of id: HttpOnly, SameSite=Strict,
// Secure if the browser speaks HTTPS (Handler.https), for /dashboard
// alone, ending with the session's absolute limit (maxAge > 0) or at
// once (maxAge < 0).
func cookie(secure bool, id string, maxAge time.Duration) *http.Cookie {
	c := &http.Cookie{Name: CookieName, Value: id, Path: "/dashboard", HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: secure}
	if maxAge < 0 {
		c.MaxAge = -1
	} else {
		c.MaxAge = int(maxAge / time.Second)
	}
	return c
}
