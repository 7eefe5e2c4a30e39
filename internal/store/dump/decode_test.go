package dump

import (
	"math/rand/v2"
	"strings"
	"testing"
	"testing/iotest"
)

// TestLineReader names the line of offsets across many 64-byte words,
// with the decoder's position moving on between reads, against a plain
// count of newlines.
func TestLineReader(t *testing.T) {
	var text strings.Builder
	for i := range 400 {
		text.WriteString(strings.Repeat("x", i%97))
		text.WriteByte('\n')
	}
	in := text.String()
	pos := int64(0)
	lr := &lineReader{r: iotest.OneByteReader(strings.NewReader(in)), pos: func() int64 { return pos }}
	buf := make([]byte, 37)
	for {
		n, err := lr.Read(buf)
		if n == 0 && err != nil {
			break
		}
		// Ask about every offset from the decoder's position to what was read.
		for off := pos; off < lr.read; off++ {
			if got, want := lr.line(off), strings.Count(in[:off], "\n")+1; got != want {
				t.Fatalf("line(%d) = %d, want %d", off, got, want)
			}
		}
		pos = max(0, lr.read-50) // the decoder lags behind what it read
	}
	if lr.read != int64(len(in)) {
		t.Fatalf("read %d bytes of %d", lr.read, len(in))
	}
	if len(lr.words) > 2 {
		t.Errorf("%d words held for a window of 50 bytes, want at most 2", len(lr.words))
	}
}

// TestLineReaderInAnyOrder: line names the right line whatever order
// the offsets it may be asked about come in, each offset asked after a
// later one as well as before (it starts from the last answer when it
// can), against a plain count of newlines.
func TestLineReaderInAnyOrder(t *testing.T) {
	var text strings.Builder
	for i := range 300 {
		text.WriteString(strings.Repeat("y", (i*7)%131))
		text.WriteByte('\n')
	}
	in := text.String()
	pos := int64(0)
	lr := &lineReader{r: strings.NewReader(in), pos: func() int64 { return pos }}
	buf := make([]byte, 301)
	rng := rand.New(rand.NewPCG(1, 2))
	for {
		n, err := lr.Read(buf)
		if n == 0 && err != nil {
			break
		}
		offs := make([]int64, 0, lr.read-pos+1)
		for off := pos; off <= lr.read; off++ {
			offs = append(offs, off)
		}
		rng.Shuffle(len(offs), func(i, j int) { offs[i], offs[j] = offs[j], offs[i] })
		for _, off := range offs {
			if got, want := lr.line(off), strings.Count(in[:off], "\n")+1; got != want {
				t.Fatalf("line(%d) = %d, want %d", off, got, want)
			}
		}
		pos = max(0, lr.read-200)
	}
	if lr.read != int64(len(in)) {
		t.Fatalf("read %d bytes of %d", lr.read, len(in))
	}
}
