package web

import (
	"bytes"
	"fmt"
	"math"
	"strconv"
	"testing"

	"visitors/internal/badge"
)

// TestBadgeMemoMatchesAppendSVG: whatever the sequence of queries and
// counts a scratch serves, a badge from its memo is byte for byte the
// one badge.AppendSVG draws.
func TestBadgeMemoMatchesAppendSVG(t *testing.T) {
	for c := byte('1'); c <= '9'; c++ { // what the memo relies on
		if got, want := badge.TextWidth([]byte{c}), badge.TextWidth([]byte("0")); got != want {
			t.Fatalf("TextWidth(%q) = %v, want %v as for every digit", c, got, want)
		}
	}
	queries := []string{"", "style=flat-square", "style=plastic", "style=for-the-badge", "label=page%20views&color=blue",
		"label=%3Cb%3E%26%22%27&label_color=red", "label=", "label=caf%C3%A9&style=for-the-badge&color=ff69b4",
		"logo=github", "logo=github&label=&style=for-the-badge", "logo=go&logo_color=red&label=x", "abbreviated=true", "abbreviated=true&style=for-the-badge",
		"show=unique&label=0123456789"}
	counts := []uint64{0, 1, 9, 10, 11, 19, 99, 100, 101, 999, 1000, 1001, 1234, 9999, 10000, 12345, 99999, 123456, 999999, 1000000, 1 << 40, math.MaxUint64}
	s, _ := mustServer(t, nil)
	sc := s.scratch.Get().(*scratch)
	var memo badgeMemo
	check := func(q string, n uint64) {
		t.Helper()
		cq, herr := parseCounterQuery(sc, q)
		if herr != nil {
			t.Fatalf("%q: %s", q, herr.Msg)
		}
		cq.b.Value = badge.AppendCount(nil, n, cq.abbreviated)
		want := badge.AppendSVG(nil, &cq.b)
		got := memo.appendBadge([]byte("prefix"), q, &cq.b)
		if !bytes.Equal(got[len("prefix"):], want) || string(got[:len("prefix")]) != "prefix" {
			t.Fatalf("query %q, count %d:\n got %s\nwant %s", q, n, got, want)
		}
	}
	for _, q := range queries {
		for _, n := range counts { // each count twice: once drawn, once from the memo
			check(q, n)
			check(q, n)
			check(q, n+1)
		}
		for i, n := range counts { // another query between two of this one
			check(q, n)
			check(queries[i%len(queries)], n)
		}
	}
	for i := range 100 { // two counters of different lengths in turn, then one of them again
		check("", 12345)
		check("", uint64(i))
		check("", uint64(i))
	}
	for i := range 2000 { // queries in turn, counts that grow
		check(queries[i%3], uint64(i*i))
		check(queries[i%3], uint64(i*i))
	}
	if memo.digits == 0 {
		t.Error("the memo kept nothing")
	}
}

// BenchmarkBadgeMemo prices a counter badge drawn (memo=false) and from
// the memo (memo=true).
func BenchmarkBadgeMemo(b *testing.B) {
	s, _ := mustServer(b, nil)
	sc := s.scratch.Get().(*scratch)
	cq, _ := parseCounterQuery(sc, "")
	for _, memo := range []bool{false, true} {
		b.Run(fmt.Sprintf("memo=%v", memo), func(b *testing.B) {
			var m badgeMemo
			dst := make([]byte, 0, 2048)
			n := uint64(123456)
			b.ReportAllocs()
			for b.Loop() {
				n++
				cq.b.Value = strconv.AppendUint(cq.b.Value[:0], n, 10)
				if memo {
					dst = m.appendBadge(dst[:0], "", &cq.b)
				} else {
					dst = badge.AppendSVG(dst[:0], &cq.b)
				}
			}
		})
	}
}

// TestBadgeMemoNotForBadgesInTurn: two counters of different lengths
// asked for in turn are each drawn once, never twice: no memo is made.
func TestBadgeMemoNotForBadgesInTurn(t *testing.T) {
	var memo badgeMemo
	b := badge.Badge{Label: []byte("visitors"), Color: []byte("#4c1"), LabelColor: []byte("#555")}
	for i := range 10 {
		for _, v := range []string{"12345", "7"} {
			b.Value = []byte(v)
			memo.appendBadge(nil, "", &b)
			if memo.digits != 0 {
				t.Fatalf("round %d: a memo of %d digits was made", i, memo.digits)
			}
		}
	}
	b.Value = []byte("8")
	memo.appendBadge(nil, "", &b)
	if memo.digits != 1 {
		t.Errorf("the same shape twice in a row: memo of %d digits, want 1", memo.digits)
	}
}

// TestBadgeMemoDrawsWhatIsNotACount: a badge whose value is not a plain
// count (an abbreviated one, text) is drawn as AppendSVG draws it, on a
// fresh memo and on one that holds a badge of the same query, and
// leaves the memo as it was.
func TestBadgeMemoDrawsWhatIsNotACount(t *testing.T) {
	var memo badgeMemo
	b := badge.Badge{Label: []byte("visitors"), Color: []byte("#4c1"), LabelColor: []byte("#555")}
	for _, v := range []string{"n/a", "1.2k", "", "12", "12", "12", "1.2k", "ab"} {
		b.Value = []byte(v)
		want := badge.AppendSVG(nil, &b)
		if got := memo.appendBadge(nil, "", &b); !bytes.Equal(got, want) {
			t.Fatalf("value %q:\n got %s\nwant %s", v, got, want)
		}
	}
	// Nor does a value that is not a count, asked for twice in a row,
	// spend the memo there is (its drawing twice is no memo to make).
	for _, v := range []string{"12", "12", "1.2k", "1.2k", "n/a", "n/a"} {
		b.Value = []byte(v)
		memo.appendBadge(nil, "", &b)
	}
	if memo.digits != 2 {
		t.Errorf("after text values twice in a row, the memo is of %d digits, want the 2 of before", memo.digits)
	}
}

// TestBadgeMemoKeepsEveryCount: a count drawn twice in a row is kept
// whatever its digits, 0 and 9 included, up to the 20 of 2^64-1.
func TestBadgeMemoKeepsEveryCount(t *testing.T) {
	b := badge.Badge{Label: []byte("visitors"), Color: []byte("#4c1"), LabelColor: []byte("#555")}
	for _, v := range []string{"100", "99", "0", "9", "18446744073709551615"} {
		var memo badgeMemo
		b.Value = []byte(v)
		memo.appendBadge(nil, "", &b)
		memo.appendBadge(nil, "", &b)
		if memo.digits != len(v) {
			t.Errorf("%s twice: a memo of %d digits, want %d", v, memo.digits, len(v))
		}
	}
}
