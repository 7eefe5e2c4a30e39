// Package service wraps the service's own handler, internal/web over the
// in-memory store, as the last step of the lab's handler cases, so that a
// step that opens a store also closes it.
package service

import (
	"fmt"

	"visitors/internal/store/memstore"
	"visitors/internal/web"
)

// Handler is the service's handler with the in-memory store it counts in.
// It is safe for concurrent use; call Close when done with it.
type Handler struct {
	*web.Server
	store *memstore.Store
}

// New returns the service's handler for c over a new in-memory store;
// c.Store is ignored. The caller must call Close.
func New(c web.Config) *Handler {
	st := memstore.New(memstore.Options{})
	c.Store = st
	return &Handler{Server: web.New(c), store: st}
}

// Close closes the in-memory store.
func (h *Handler) Close() error {
	if err := h.store.Close(); err != nil {
		return fmt.Errorf("close memstore: %w", err)
	}
	return nil
}
