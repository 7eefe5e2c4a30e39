package web

import (
	"encoding/xml"
	"fmt"
	"io"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestCompatReadsCountNothing: HEAD of every counting URL of the closed
// services, HITS's keep and CountAPI's get answer without counting, as
// HEAD of /counter/{key}.svg does; the GETs beside them count, so a URL
// that counted nothing for another reason would fail here too.
func TestCompatReadsCountNothing(t *testing.T) {
	s, st := mustServer(t, nil)
	client := 0
	do := func(method, target string) int {
		client++
		r := httptest.NewRequest(method, target, nil)
		r.Header.Set("User-Agent", "Mozilla/5.0")
		r.RemoteAddr = fmt.Sprintf("198.51.100.%d:1234", client)
		w := httptest.NewRecorder()
		s.ServeHTTP(w, r)
		return w.Code
	}
	tests := []struct {
		name, read, count, key string
	}{
		{"hits HEAD", "HEAD /api/count/incr/badge.svg?url=h1", "GET /api/count/incr/badge.svg?url=h1", "hits/h1"},
		{"hits keep", "GET /api/count/keep/badge.svg?url=h2", "GET /api/count/incr/badge.svg?url=h2", "hits/h2"},
		{"hits keep HEAD", "HEAD /api/count/keep/badge.svg?url=h3", "GET /api/count/incr/badge.svg?url=h3", "hits/h3"},
		{"countapi HEAD", "HEAD /hit/ns/c1", "GET /hit/ns/c1", "countapi/ns/c1"},
		{"countapi get", "GET /get/ns/c2", "GET /hit/ns/c2", "countapi/ns/c2"},
		{"countapi HEAD jsonp", "HEAD /hit/ns/c3?callback=cb", "GET /hit/ns/c3?callback=cb", "countapi/ns/c3"},
		{"visitor-badge HEAD", "HEAD /badge?page_id=v1", "GET /badge?page_id=v1", "visitor-badge/v1"},
		{"ghpvc HEAD", "HEAD /ghpvc/?username=g1", "GET /ghpvc/?username=g1", "ghpvc/g1"},
		{"ghpvc base HEAD", "HEAD /ghpvc/?username=g2&base=1000", "GET /ghpvc/?username=g2&base=1000", "ghpvc/g2"},
	}
	for _, tt := range tests {
		m, target, _ := strings.Cut(tt.read, " ")
		for range 3 {
			if code := do(m, target); code >= 500 {
				t.Errorf("%s: %s answered %d", tt.name, tt.read, code)
			}
		}
		if got := mustCount(t, st, tt.key).Total; got != 0 {
			t.Errorf("%s: three of %s counted %d into %s, want 0", tt.name, tt.read, got, tt.key)
		}
		m, target, _ = strings.Cut(tt.count, " ")
		do(m, target)
		if got := mustCount(t, st, tt.key).Total; got != 1 {
			t.Errorf("%s: then %s: total %d, want 1 (base stored nothing)", tt.name, tt.count, got)
		}
	}
}

// TestCompatLabelsEscaped: a label taken from the URL (HITS's title,
// visitor-badge's left_text, ghpvc's label), holding markup, quotes, a
// CDATA end and control characters, comes back as well-formed XML whose
// label is the text asked for, without markup of the request's.
func TestCompatLabelsEscaped(t *testing.T) {
	s, _ := mustServer(t, nil)
	const hostile = `<script>alert(1)</script>"']]>&amp;` + "\x01\x1b"
	const shown = `<script>alert(1)</script>"']]>&amp;` // control characters dropped: not XML 1.0
	q := strings.NewReplacer("%", "%25", "<", "%3C", ">", "%3E", "&", "%26", "\"", "%22", "'", "%27", "]", "%5D", "\x01", "%01", "\x1b", "%1B", ";", "%3B", "(", "%28", ")", "%29", "/", "%2F").Replace(hostile)
	for i, target := range []string{
		"/api/count/incr/badge.svg?url=x&title=" + q,
		"/api/count/incr/badge.svg?title=" + q, // an error badge keeps the label
		"/badge?page_id=x&left_text=" + q,
		"/ghpvc/?username=x&label=" + q,
	} {
		r := httptest.NewRequest("GET", target, nil)
		r.Header.Set("User-Agent", "Mozilla/5.0")
		r.RemoteAddr = fmt.Sprintf("203.0.113.%d:1", i+1)
		w := httptest.NewRecorder()
		s.ServeHTTP(w, r)
		body := w.Body.String()
		if strings.Contains(body, "<script") || strings.Contains(body, "]]>") || strings.ContainsAny(body, "\x01\x1b") {
			t.Errorf("GET %s: markup reflected: %q", target, body)
		}
		var doc struct {
			Title string `xml:"title"`
		}
		if err := xml.NewDecoder(strings.NewReader(body)).Decode(&doc); err != nil && err != io.EOF {
			t.Errorf("GET %s: not well-formed XML: %v", target, err)
			continue
		}
		if !strings.HasPrefix(doc.Title, shown+": ") {
			t.Errorf("GET %s: title %q, want it to start with %q", target, doc.Title, shown+": ")
		}
	}
}
