package storetest

import (
	"fmt"
	"os"
	"regexp"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// AnchorEnv names the environment variable that moves every date the
// tests use. Unset, the anchor is today's UTC midnight by the real clock;
// set, it is YYYY-MM-DD, or +N or -N days from today. A test that pins a
// date takes it from [At], [Date] or [Dated], never from a literal, so
// that a date meeting a real clock (Redis's TTLs, a file's time, a
// certificate) fails the day the test is written, when
// ./scripts/test.sh runs the suites 400 days ahead and 400 days back,
// not the day the real clock passes it.
const AnchorEnv = "VISITORS_TEST_DATE"

// DatedOnlyEnv names the environment variable that marks a run that
// repeats only the tests that pin a date: set (to anything), every test
// marked [NoDate] is skipped, since a moved anchor changes nothing for
// it. ./scripts/test.sh's race run moves the anchor 400 days ahead and
// runs every test; its second run, 400 days back, sets this.
const DatedOnlyEnv = "VISITORS_TEST_DATED_ONLY"

var anchor = sync.OnceValue(func() time.Time {
	today := time.Now().UTC().Truncate(24 * time.Hour)
	a, err := parseAnchor(os.Getenv(AnchorEnv), today)
	if err != nil {
		panic(err)
	}
	return a
})

// The anchors a test run may take: tests count days back from the anchor
// (store.MaxDays at most, and more for expiries), and a store.Day is an
// unsigned count of days since 1970.
var (
	earliestAnchor = time.Date(1980, 1, 1, 0, 0, 0, 0, time.UTC)
	latestAnchor   = time.Date(9000, 1, 1, 0, 0, 0, 0, time.UTC)
)

// parseAnchor reads the value of AnchorEnv, relative to today.
func parseAnchor(v string, today time.Time) (time.Time, error) {
	bad := fmt.Errorf("%s=%q: want YYYY-MM-DD, or +N or -N days from today, from %s to %s",
		AnchorEnv, v, earliestAnchor.Format(time.DateOnly), latestAnchor.Format(time.DateOnly))
	t := today
	if v != "" && (v[0] == '+' || v[0] == '-') {
		n, err := strconv.Atoi(v)
		if err != nil || n < -1_000_000 || n > 1_000_000 {
			return time.Time{}, bad
		}
		t = today.AddDate(0, 0, n)
	} else if v != "" {
		var err error
		if t, err = time.Parse(time.DateOnly, v); err != nil {
			return time.Time{}, bad
		}
	}
	if t.Before(earliestAnchor) || t.After(latestAnchor) {
		return time.Time{}, bad
	}
	return t, nil
}

// Anchor returns the UTC midnight the tests count their days from (see
// [AnchorEnv]). It is the same for the whole test binary.
func Anchor() time.Time {
	anchorReads.Add(1)
	return anchor()
}

// anchorReads counts the calls of [Anchor] (which [At], [Date], [Dated]
// and [Undated] make), for [NoDate]'s check.
var anchorReads atomic.Int64

// NoDate marks a test that pins no date: neither it nor anything it runs
// calls [Anchor], [At], [Date], [Dated] or [Undated]. Nothing else reads
// [AnchorEnv], so such a test does the same whatever it says, and it is
// skipped when [DatedOnlyEnv] is set: ./scripts/test.sh's second run of
// the dated packages, at -400 days, then spends its time on the tests a
// shift can change. Otherwise the test runs, and fails if the anchor was
// read while it ran: the mark cannot hide a test that pins a date. Call
// it first in a test that does not run in parallel with a test that
// reads the anchor (the count is the whole binary's).
func NoDate(tb testing.TB) {
	tb.Helper()
	if os.Getenv(DatedOnlyEnv) != "" {
		tb.Skipf("pins no date (storetest.NoDate): %s=%s changes nothing here; it ran in the run before", AnchorEnv, os.Getenv(AnchorEnv))
		return
	}
	before := anchorReads.Load()
	tb.Cleanup(func() {
		if n := anchorReads.Load() - before; n != 0 {
			tb.Errorf("marked storetest.NoDate, but the date anchor was read %d times while it ran (storetest.Anchor, At, Date, Dated or Undated): remove the mark, so that the runs at +400 and -400 days run it", n)
		}
	})
}

// At returns the time of day clock ("15:04", "15:04:05" or
// "15:04:05.999999999") on the day days after the anchor, in UTC. It
// panics on a malformed clock: that is a bug in the test.
func At(days int, clock string) time.Time {
	var d time.Time
	var err error
	for _, layout := range []string{"15:04", "15:04:05.999999999"} {
		if d, err = time.Parse(layout, clock); err == nil {
			break
		}
	}
	if err != nil {
		panic(fmt.Sprintf("storetest.At(%d, %q): %v", days, clock, err))
	}
	since := time.Duration(d.Hour())*time.Hour + time.Duration(d.Minute())*time.Minute +
		time.Duration(d.Second())*time.Second + time.Duration(d.Nanosecond())
	return Anchor().AddDate(0, 0, days).Add(since)
}

// Date returns the day days after the anchor as YYYY-MM-DD.
func Date(days int) string { return Anchor().AddDate(0, 0, days).Format(time.DateOnly) }

var dayMark = regexp.MustCompile(`\$([DM])([+-][0-9]+)?`)

// Dated returns s with each $D, $D+N and $D-N replaced by [Date] of 0,
// N and -N, and each $M, $M+N and $M-N by the same day as a graph labels
// it ("Jan 2"): the dates in a test's expected text, relative to the
// anchor.
func Dated(s string) string {
	return dayMark.ReplaceAllStringFunc(s, func(m string) string {
		n := 0
		if len(m) > 2 {
			n, _ = strconv.Atoi(m[2:]) // the pattern admits only a signed integer
		}
		if m[1] == 'M' {
			return Anchor().AddDate(0, 0, n).Format("Jan 2")
		}
		return Date(n)
	})
}

var anyDate = regexp.MustCompile(`[0-9]{4}-[0-9]{2}-[0-9]{2}|\b(Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec) [0-9]{1,2}\b`)

// Undated is the inverse of [Dated]: it returns s with each date
// (YYYY-MM-DD, or "Jan 2" on the nearest such day to the anchor, so
// within 182 days of it) written as its distance in days from the anchor
// ($D+N, or $M+N), so that a golden file holds the same text on any day.
func Undated(s string) string {
	a := Anchor()
	return anyDate.ReplaceAllStringFunc(s, func(m string) string {
		mark := "$D"
		t, err := time.Parse(time.DateOnly, m)
		if err != nil {
			mark = "$M"
			found := false
			for y := a.Year() - 1; y <= a.Year()+1; y++ { // "Feb 29" is a day of some years only
				c, err := time.Parse("Jan 2 2006", m+" "+strconv.Itoa(y))
				if err == nil && (!found || c.Sub(a).Abs() < t.Sub(a).Abs()) {
					t, found = c, true
				}
			}
			if !found {
				return m
			}
		}
		switch n := int(t.Sub(a).Hours() / 24); {
		case n == 0:
			return mark
		case n > 0:
			return mark + "+" + strconv.Itoa(n)
		default:
			return mark + strconv.Itoa(n)
		}
	})
}
