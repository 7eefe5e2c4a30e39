package dump

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"slices"

	"visitors/internal/store"
)

// Spool reads a dump from r into a new temporary file in dir (named as
// [os.CreateTemp] names it from pattern) while [Decode] checks all of
// it, handing keys, if not nil, each batch and where its keys lie in the
// file. It returns the file, rewound, and the dump's /hi counter; the
// caller closes and removes the file. Reading stops once ctx is done.
//
// An import spools first so that a refused dump changes nothing while
// memory does not grow with the dump. A dump refused is an error
// wrapping [store.ErrInvalidDump]; the file failing to be written, or
// ctx ending, is not: a full disk is not the dump's fault.
func Spool(ctx context.Context, r io.Reader, dir, pattern string, keys func([]Key, []Span) error) (*os.File, uint64, error) {
	if keys == nil {
		keys = func([]Key, []Span) error { return nil }
	}
	f, err := os.CreateTemp(dir, pattern)
	if err != nil {
		return nil, 0, fmt.Errorf("spool: %w", err)
	}
	fail := func(err error) (*os.File, uint64, error) {
		f.Close()
		os.Remove(f.Name())
		return nil, 0, err
	}
	bw := bufio.NewWriter(f)
	sw := &spoolWriter{w: bw}
	hits, err := Decode(io.TeeReader(ContextReader(ctx, r), sw), 0, keys)
	switch {
	case sw.err != nil:
		return fail(fmt.Errorf("spool: %w", sw.err))
	case ctx.Err() != nil:
		return fail(ctx.Err())
	case err != nil:
		return fail(fmt.Errorf("%w: %w", store.ErrInvalidDump, err))
	}
	if err := bw.Flush(); err != nil {
		return fail(fmt.Errorf("spool: %w", err))
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return fail(fmt.Errorf("spool: %w", err))
	}
	return f, hits, nil
}

// spoolWriter remembers the first error writing the spool, so that a
// full disk is not taken for a bad dump.
type spoolWriter struct {
	w   io.Writer
	err error
}

func (s *spoolWriter) Write(p []byte) (int, error) {
	n, err := s.w.Write(p)
	if err != nil && s.err == nil {
		s.err = err
	}
	return n, err
}

// ContextReader returns a reader of r that stops reading, with ctx's
// error, once ctx is done.
func ContextReader(ctx context.Context, r io.Reader) io.Reader { return ctxReader{ctx, r} }

type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}

// Spooled is one key of a spooled dump and where it lies in the spool.
type Spooled struct {
	Key string
	At  Span
}

// ReadSpooled reads the keys of order from spool, a dump that [Spool]
// has checked, and hands them to write in that order, a batch at a
// time: an import that writes keys faster in an order of its own reads
// them back in it.
func ReadSpooled(spool io.ReaderAt, order []Spooled, write func([]Key) error) error {
	batch := make([]Key, 0, 1024)
	var buf []byte
	for _, o := range order {
		buf = slices.Grow(buf[:0], int(o.At.End-o.At.Start))[:o.At.End-o.At.Start]
		if _, err := spool.ReadAt(buf, o.At.Start); err != nil {
			return fmt.Errorf("spool: %w", err)
		}
		var kd Key
		if err := json.Unmarshal(bytes.TrimLeft(buf, ", \t\r\n"), &kd); err != nil {
			return fmt.Errorf("spool: key %q: %w", o.Key, err)
		}
		if kd.Key != o.Key {
			return fmt.Errorf("spool: key %q read back as %q", o.Key, kd.Key)
		}
		if batch = append(batch, kd); len(batch) == cap(batch) {
			if err := write(batch); err != nil {
				return err
			}
			batch = batch[:0]
		}
	}
	return write(batch)
}
