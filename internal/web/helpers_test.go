package web

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"visitors/internal/logsink"
	"visitors/internal/store"
	"visitors/internal/store/memstore"
)

// mustServer returns a Server over a fresh memory store whose visit log
// goes through a real logsink to out (io.Discard if nil).
func mustServer(tb testing.TB, out io.Writer) (*Server, *memstore.Store) {
	tb.Helper()
	if out == nil {
		out = io.Discard
	}
	sink := logsink.New(out, logsink.Options{Poll: time.Millisecond})
	tb.Cleanup(func() {
		if err := sink.Close(); err != nil {
			tb.Errorf("close log sink: %v", err)
		}
	})
	st := memstore.New(memstore.Options{})
	tb.Cleanup(func() { st.Close() })
	s := New(Config{
		Store:    st,
		Log:      zerolog.New(sink).With().Timestamp().Logger(),
		Hostname: "testhost",
	})
	return s, st
}

// get serves one request to h and returns the recorded response.
func get(h http.Handler, method, target string, hdr ...string) *httptest.ResponseRecorder {
	r := httptest.NewRequest(method, target, nil)
	for i := 0; i+1 < len(hdr); i += 2 {
		r.Header.Set(hdr[i], hdr[i+1])
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w
}

// failingStore is a store.Store whose every count fails, as a broken
// disk or an unreachable Redis would.
type failingStore struct{}

var errBroken = errors.New("disk on fire")

func (failingStore) Hit(context.Context) (uint64, error) { return 0, errBroken }
func (failingStore) Incr(context.Context, []byte) (store.Counts, error) {
	return store.Counts{}, errBroken
}
func (failingStore) Get(context.Context, []byte) (store.Counts, error) {
	return store.Counts{}, errBroken
}
func (failingStore) Days(context.Context, []byte, int) (store.Daily, error) {
	return store.Daily{}, errBroken
}
func (failingStore) Keys() int    { return 0 }
func (failingStore) Close() error { return nil }

var _ store.Store = failingStore{}
