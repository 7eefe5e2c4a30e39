package main

import (
	"encoding/json"
	"syscall"
	"testing"
	"time"

	"visitors/internal/servertest"
)

type topList struct {
	Days int
	Top  []struct {
		Key   string
		Count uint64
	}
}

func mustTop(t *testing.T, p *servertest.Proc, q string) topList {
	t.Helper()
	code, _, body := mustGet(t, p.URL("/top.json"+q))
	var l topList
	if code != 200 || json.Unmarshal([]byte(body), &l) != nil {
		t.Fatalf("GET /top.json%s = %d %q", q, code, body)
	}
	return l
}

// TestBinaryTop: /top.json is off by default; with -public-top it ranks
// counters by visits, over the embedded store, and after a restart a
// counter visited again comes back with every visit it had.
func TestBinaryTop(t *testing.T) {
	data := t.TempDir()
	off := servertest.Start(t, bin, rulesOff, "-data", t.TempDir(), "-log-level", "off")
	if code, _, _ := mustGet(t, off.URL("/top.json")); code != 404 {
		t.Errorf("/top.json without -public-top = %d, want 404", code)
	}

	p := servertest.Start(t, bin, rulesOff, "-data", data, "-public-top", "-log-level", "off")
	for key, n := range map[string]int{"popular/repo": 5, "some/repo": 3, "quiet": 1} {
		for range n {
			mustGet(t, p.URL("/counter/"+key+".svg"))
		}
	}
	l := mustTop(t, p, "?days=1&limit=2")
	if l.Days != 1 || len(l.Top) != 2 || l.Top[0].Key != "popular/repo" || l.Top[0].Count != 5 || l.Top[1].Key != "some/repo" || l.Top[1].Count != 3 {
		t.Errorf("top 2 = %+v, want popular/repo 5, some/repo 3", l)
	}
	if code, _, body := mustGet(t, p.URL("/top.json?limit=101")); code != 400 {
		t.Errorf("limit=101 = %d %q, want 400", code, body)
	}
	if err := p.Stop(syscall.SIGTERM, 30*time.Second); err != nil {
		t.Fatal(err)
	}

	p = servertest.Start(t, bin, rulesOff, "-data", data, "-public-top", "-log-level", "off")
	mustGet(t, p.URL("/counter/some/repo.svg"))
	l = mustTop(t, p, "?days=30")
	if len(l.Top) != 1 || l.Top[0].Key != "some/repo" || l.Top[0].Count != 4 {
		t.Errorf("after a restart and one visit, top = %+v, want some/repo with all 4 visits", l)
	}
}
