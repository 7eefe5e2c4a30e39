package app

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"visitors/internal/api"
	"visitors/internal/dashboard"
)

// RootTokenFile is the file in -data that holds the root token made at
// the first start without one.
const RootTokenFile = "root-token"

// dashboard returns the owners' dashboard on the owner API a.
func (s *service) dashboard(a *api.Handler) *dashboard.Handler {
	dc := dashboard.Config{API: a, Store: s.st, Trusted: &s.cfg.Fair.TrustedProxies}
	if s.cfg.Fair.Unique && s.rules.Uniques != nil {
		dc.Uniques = s.rules.Uniques
	}
	s.log.Info().Str("dashboard", "/dashboard").Msg("owners' dashboard on")
	return dashboard.New(dc)
}

// firstToken gives the embedded store a root token when none was given:
// the one in -data's root-token, made at the first start (32 random
// bytes in hex, written 0600) and named in the log, once; the token
// itself is never logged. Memory and Redis have no directory of their
// own: without a root token they serve no API and no dashboard.
func (s *service) firstToken() error {
	cfg := &s.cfg
	if cfg.API.RootHash != nil {
		return nil
	}
	if cfg.Store != StoreEmbedded || cfg.Data == "" {
		s.log.Info().Msg("no root token: the owner API and /dashboard are off; give one with -admin-token-file or " + EnvPrefix + "ADMIN_TOKEN to turn them on")
		return nil
	}
	path := filepath.Join(cfg.Data, RootTokenFile)
	secret, made, err := rootTokenFile(path, rand.Reader)
	if err != nil {
		return err
	}
	sum := sha256.Sum256([]byte(secret))
	cfg.API.RootHash = &sum
	if made {
		s.log.Warn().Str("root_token_file", path).Msg("no root token was given, so one was made and written to this file (mode 0600): sign in at /dashboard with its content, or give the owner API a token of your own with -admin-token-file")
	}
	return nil
}

// rootTokenFile returns the root token in path, making the file if it
// is not there (made true): 0600 in a directory made 0700 if needed.
func rootTokenFile(path string, rnd io.Reader) (secret string, made bool, err error) {
	b, err := os.ReadFile(path)
	switch {
	case err == nil:
		secret = strings.TrimRight(string(b), "\r\n")
		if err := api.CheckRoot(secret); err != nil {
			return "", false, fmt.Errorf("%s: %w", path, err)
		}
		return secret, false, nil
	case !errors.Is(err, fs.ErrNotExist):
		return "", false, fmt.Errorf("read the root token: %w", err)
	}
	var r [32]byte
	if _, err := io.ReadFull(rnd, r[:]); err != nil {
		return "", false, fmt.Errorf("make a root token: %w", err)
	}
	secret = hex.EncodeToString(r[:])
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return "", false, fmt.Errorf("make a root token: %w", err)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return "", false, fmt.Errorf("write the root token: %w", err)
	}
	if _, err := f.WriteString(secret + "\n"); err != nil {
		f.Close()
		os.Remove(path)
		return "", false, fmt.Errorf("write the root token %s: %w", path, err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		os.Remove(path)
		return "", false, fmt.Errorf("write the root token %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return "", false, fmt.Errorf("write the root token %s: %w", path, err)
	}
	return secret, true, nil
}
