package webtest

import (
	"net/http"
	"testing"

	"visitors/internal/race"
)

var ctHTML = []string{"text/html"}

// TestCloneHeaderAllocates checks which handlers pay for the header clone
// with CloneHeader set, and that none pays without it.
func TestCloneHeaderAllocates(t *testing.T) {
	if race.Enabled {
		t.Skip("allocation counts are checked without -race")
	}
	body := []byte("<h1>hi</h1>")
	tests := []struct {
		name    string
		handler func(w http.ResponseWriter)
		clones  bool
	}{
		{"write only", func(w http.ResponseWriter) { w.Write(body) }, false},
		{"header then write", func(w http.ResponseWriter) { w.Header()["Content-Type"] = ctHTML; w.Write(body) }, true},
		{"write then header", func(w http.ResponseWriter) { w.Write(body); w.Header() }, true},
		{"header, status, header", func(w http.ResponseWriter) { w.Header(); w.WriteHeader(204); w.Header() }, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, clone := range []bool{false, true} {
				w := NewResponseWriter()
				w.CloneHeader = clone
				w.H["Content-Type"] = ctHTML // no sniffing
				got := testing.AllocsPerRun(100, func() { w.Reset(); tt.handler(w) })
				if want := clone && tt.clones; (got > 0) != want {
					t.Errorf("CloneHeader=%v: %v allocs, want some: %v", clone, got, want)
				}
			}
		})
	}
}

func TestServerResponseWriter(t *testing.T) {
	w := NewServerResponseWriter()
	w.Header().Set("X", "1")
	w.Write([]byte("x"))
	w.Header().Set("X", "2")
	if w.Code != 200 || w.N != 1 || w.snapshot.Get("X") != "1" {
		t.Errorf("code %d, n %d, snapshot %v; want 200, 1, X: 1", w.Code, w.N, w.snapshot)
	}
	w.Reset()
	if w.Code != 0 || w.N != 0 || w.snapshot != nil || w.calledHeader {
		t.Errorf("after Reset: %+v", w)
	}
}
