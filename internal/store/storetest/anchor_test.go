package storetest

import (
	"fmt"
	"testing"
	"time"
)

func TestParseAnchor(t *testing.T) {
	today := time.Date(2030, 2, 27, 0, 0, 0, 0, time.UTC) // a value of the function's argument, not a clock
	tests := []struct {
		v       string
		want    time.Time
		wantErr bool
	}{
		{"", today, false},
		{"+400", today.AddDate(0, 0, 400), false},
		{"-400", today.AddDate(0, 0, -400), false},
		{"2024-02-29", time.Date(2024, 2, 29, 0, 0, 0, 0, time.UTC), false},
		{"2025-02-29", time.Time{}, true},
		{"400", time.Time{}, true},
		{"+4x", time.Time{}, true},
		{"tomorrow", time.Time{}, true},
		{"1970-01-02", time.Time{}, true}, // a store.Day counted back from it wraps
		{"-30000", time.Time{}, true},
		{"9999-01-01", time.Time{}, true},
	}
	for _, tt := range tests {
		got, err := parseAnchor(tt.v, today)
		if (err != nil) != tt.wantErr || !got.Equal(tt.want) {
			t.Errorf("parseAnchor(%q) = %v, %v; want %v, error %v", tt.v, got, err, tt.want, tt.wantErr)
		}
	}
}

func TestAtDatedUndated(t *testing.T) {
	a := Anchor()
	if a.Hour() != 0 || a.Minute() != 0 || a.Location() != time.UTC {
		t.Fatalf("Anchor() = %v, want a UTC midnight", a)
	}
	if got, want := At(-1, "23:59:59.97"), a.Add(-30*time.Millisecond); !got.Equal(want) {
		t.Errorf("At(-1, 23:59:59.97) = %v, want %v", got, want)
	}
	if got, want := At(2, "12:30"), a.Add(60*time.Hour+30*time.Minute); !got.Equal(want) {
		t.Errorf("At(2, 12:30) = %v, want %v", got, want)
	}
	text := `{"$D-1":1,"$D":2,"$D+40":3} $M+1 to $M-170`
	dated := Dated(text)
	want := `{"` + a.AddDate(0, 0, -1).Format(time.DateOnly) + `":1,"` + a.Format(time.DateOnly) + `":2,"` +
		a.AddDate(0, 0, 40).Format(time.DateOnly) + `":3} ` + a.AddDate(0, 0, 1).Format("Jan 2") + " to " + a.AddDate(0, 0, -170).Format("Jan 2")
	if dated != want {
		t.Errorf("Dated(%q) = %q, want %q", text, dated, want)
	}
	if got := Undated(dated); got != text {
		t.Errorf("Undated(%q) = %q, want %q", dated, got, text)
	}
	// Every "Jan 2" label within 182 days reads back, Feb 29 included.
	for n := -182; n <= 182; n++ {
		mark := "$M"
		if n != 0 {
			mark = fmt.Sprintf("$M%+d", n)
		}
		label := a.AddDate(0, 0, n).Format("Jan 2")
		if got := Undated(label); got != mark {
			t.Errorf("Undated(%q) = %q, want %q", label, got, mark)
		}
	}
}

// recordTB is a testing.TB that records what NoDate does with it.
type recordTB struct {
	testing.TB
	cleanups []func()
	errors   []string
	skipped  bool
}

func (r *recordTB) Helper()          {}
func (r *recordTB) Cleanup(f func()) { r.cleanups = append(r.cleanups, f) }
func (r *recordTB) Errorf(format string, a ...any) {
	r.errors = append(r.errors, fmt.Sprintf(format, a...))
}
func (r *recordTB) Skipf(string, ...any) { r.skipped = true }

func (r *recordTB) end() {
	for i := len(r.cleanups) - 1; i >= 0; i-- {
		r.cleanups[i]()
	}
}

// TestNoDate: a test marked NoDate that reads the anchor fails, one that
// does not passes, with the anchor moved or not, and in a run of the
// dated tests only every marked test is skipped, since a moved anchor
// changes nothing for it.
func TestNoDate(t *testing.T) {
	t.Setenv(DatedOnlyEnv, "")
	for _, anchor := range []string{"", "+400"} {
		t.Setenv(AnchorEnv, anchor)
		noDate(t)
	}
	t.Setenv(DatedOnlyEnv, "1")
	r := &recordTB{TB: t}
	NoDate(r)
	if !r.skipped {
		t.Errorf("NoDate with %s=1 did not skip the test", DatedOnlyEnv)
	}
}

// noDate checks NoDate in a run of every test.
func noDate(t *testing.T) {
	for _, read := range []func(){func() { Anchor() }, func() { At(1, "12:00") }, func() { Date(-1) }, func() { Dated("$D") }, func() { Undated("") }} {
		r := &recordTB{TB: t}
		NoDate(r)
		read()
		r.end()
		if len(r.errors) != 1 || r.skipped {
			t.Errorf("NoDate on a test that read the anchor: errors %q, skipped %v; want one error", r.errors, r.skipped)
		}
	}
	r := &recordTB{TB: t}
	NoDate(r)
	r.end()
	if len(r.errors) != 0 || r.skipped {
		t.Errorf("NoDate on a test that did not read the anchor: errors %q, skipped %v; want none, not skipped", r.errors, r.skipped)
	}
}
