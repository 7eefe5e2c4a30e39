package dump

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
)

// Encoder writes a [Dump] one key at a time, streaming: the head with
// the format and the /hi counter, then one key a line, then the end.
// Every export writes through it, so every store's dump is framed alike.
type Encoder struct {
	w     *bufio.Writer
	first bool
}

// NewEncoder writes the head of a dump with /hi counter hits to w, and
// returns the encoder of its keys. Nothing reaches w until the buffer
// fills or [Encoder.Close] is called.
func NewEncoder(w io.Writer, hits uint64) *Encoder {
	e := &Encoder{w: bufio.NewWriter(w), first: true}
	fmt.Fprintf(e.w, "{\"format\":%q,\"hits\":%d,\"keys\":[", Format, hits)
	return e
}

// Encode writes k as the next key of the dump, on a line of its own.
func (e *Encoder) Encode(k *Key) error {
	b, err := json.Marshal(k)
	if err != nil {
		return err
	}
	if !e.first {
		e.w.WriteByte(',')
	}
	e.first = false
	e.w.WriteString("\n")
	_, err = e.w.Write(b)
	return err
}

// Close writes the end of the dump and flushes it to the writer. It
// does not close the writer.
func (e *Encoder) Close() error {
	e.w.WriteString("\n]}\n")
	return e.w.Flush()
}
