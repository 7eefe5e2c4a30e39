//go:build !linux

// Without Linux AIO: the log syncs with a blocking datasync.

package boltstore

import (
	"errors"
	"os"
)

// aioSync is Linux's; elsewhere the log syncs with datasync.
type aioSync struct{}

func newAIOSync(*os.File) (*aioSync, error) { return nil, errors.New("no AIO here") }

func (*aioSync) sync(f *os.File) error { return datasync(f) }

func (*aioSync) close() error { return nil }
