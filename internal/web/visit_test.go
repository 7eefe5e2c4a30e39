package web

import (
	"strings"
	"testing"
)

// TestErrorBadgeKeepsAValidLabel: an error badge keeps the label asked
// for up to the longest a badge takes, MaxLabelRunes runes of four bytes
// each escaped (12 bytes of query a rune), and falls back to the default
// label one rune past it.
func TestErrorBadgeKeepsAValidLabel(t *testing.T) {
	s, _ := mustServer(t, nil)
	const face = "😀"
	for _, tt := range []struct {
		runes int
		label string // as the badge shows it
	}{
		{MaxLabelRunes, strings.Repeat(face, MaxLabelRunes)},
		{MaxLabelRunes + 1, defaultText},
	} {
		label := strings.Repeat(escapeAll(face), tt.runes)
		w := get(t, s, "GET", "/counter/k.svg?colour=red&label="+label)
		if w.Code != 400 || !strings.Contains(w.Body.String(), `aria-label="`+tt.label+`: unknown parameter colour"`) {
			t.Errorf("an error badge asked a label of %d runes (%d bytes of query): %d, want 400 labelled %.20q…:\n%.300s", tt.runes, len(label), w.Code, tt.label, w.Body)
		}
	}
}
