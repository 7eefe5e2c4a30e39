package app

import (
	"log"
	"strings"

	"github.com/rs/zerolog"
)

// zerologStd returns a standard-library logger, as http.Server wants for
// its own errors (TLS handshakes, panics in handlers), that writes them
// as warnings into the service's JSON log.
func zerologStd(l zerolog.Logger) *log.Logger {
	return log.New(stdWriter{l}, "", 0)
}

type stdWriter struct{ l zerolog.Logger }

func (w stdWriter) Write(p []byte) (int, error) {
	w.l.Warn().Str("component", "http").Msg(strings.TrimSpace(string(p)))
	return len(p), nil
}
