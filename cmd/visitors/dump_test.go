package main

import (
	"fmt"
	"testing"

	"visitors/internal/servertest"
)

// The /hi counter and the dump, on the real binary (issue 23, items 4
// and 5; issue 28's third promise).

// mustHi visits /hi on p and returns the number it handed out.
func mustHi(tb testing.TB, p *servertest.Proc) uint64 {
	tb.Helper()
	code, _, body := mustGet(tb, p.URL("/hi"))
	if code != 200 {
		tb.Fatalf("/hi = %d %s", code, body)
	}
	n, err := numberAfter(body, "visitor number ")
	if err != nil {
		tb.Fatal(err)
	}
	return n
}

// TestHiContinuesAfterACleanStop: SIGTERM and a restart hand out the
// next /hi number, also when none was handed out before the stop (the
// final flush used to skip its write when the counter was 0, leaving
// the 1,000-number reservation on disk: the first /hi was 1001).
func TestHiContinuesAfterACleanStop(t *testing.T) {
	for _, durability := range []string{"batch", "sync"} {
		for _, before := range []int{0, 3} {
			t.Run(fmt.Sprintf("%s/hits=%d", durability, before), func(t *testing.T) {
				args := []string{"-data", t.TempDir(), "-durability", durability}
				p := servertest.Start(t, bin, rulesOff, args...)
				for range before {
					mustHi(t, p)
				}
				waitFlushed(t, p) // a pass has written the reservation ahead
				stop(t, p)
				p = servertest.Start(t, bin, rulesOff, args...)
				if got, want := mustHi(t, p), uint64(before+1); got != want {
					t.Errorf("first /hi after a clean stop with %d handed out = %d, want %d", before, got, want)
				}
				stop(t, p)
			})
		}
	}
}

// TestOnlineImportNeverLowersHiInTheFile: an online import of a dump
// whose hits is below the store's, then SIGKILL: after the restart /hi
// is above every number handed out before (issue 28: the file held the
// dump's value until the next reservation, so a crash handed numbers
// out again).
func TestOnlineImportNeverLowersHiInTheFile(t *testing.T) {
	for _, durability := range []string{"batch", "sync"} {
		for _, replace := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/replace=%v", durability, replace), func(t *testing.T) {
				args := []string{"-data", t.TempDir(), "-durability", durability}
				p := servertest.Start(t, bin, apiEnv, args...)
				var last uint64
				for range 5 {
					last = mustHi(t, p)
				}
				dump := `{"format":"visitors-export-1","hits":2,"keys":[{"key":"k","total":1}]}`
				if r := apiDo(t, p, "POST", fmt.Sprintf("/api/v1/import?replace=%v", replace), apiRoot, dump); r.code != 200 {
					t.Fatalf("POST /api/v1/import = %d %s", r.code, r.body)
				}
				if err := p.Kill(); err != nil {
					t.Fatal(err)
				}
				p = servertest.Start(t, bin, apiEnv, args...)
				if got := mustHi(t, p); got <= last {
					t.Errorf("after an online import of hits 2 and SIGKILL, /hi = %d, want more than %d", got, last)
				}
			})
		}
	}
}
