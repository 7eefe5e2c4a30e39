package dump

import (
	"errors"
	"strings"
	"testing"
)

// TestKeyRefusesTwoHighSurrogates: a high surrogate must be followed by
// a low one; another high one (or a low one's neighbour outside
// DC00-DFFF) makes no pair, and encoding/json would decode both as
// U+FFFD, a key the dump does not name.
func TestKeyRefusesTwoHighSurrogates(t *testing.T) {
	for _, in := range []string{`{"key":"\ud800\ud800"}`, `{"key":"\udbff\udbff"}`, `{"key":"a\ud83c\ue000"}`} {
		var got Key
		err := got.UnmarshalJSON([]byte(in))
		var ve *valueError
		if !errors.As(err, &ve) || !strings.Contains(err.Error(), "half of a UTF-16 surrogate pair") {
			t.Errorf("%s: %q, %v; want refused as half a surrogate pair", in, got.Key, err)
		}
	}
}
