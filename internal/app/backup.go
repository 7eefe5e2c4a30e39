package app

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"

	"visitors/internal/compat"
	"visitors/internal/store/boltstore"
	"visitors/internal/store/dump"
	"visitors/internal/store/redisstore"
)

// subcommandEnv are the flags of export, import and check that have a
// VISITORS_* variable: the service's, so that a subcommand finds the
// store the service uses. -replace has none.
var subcommandEnv = map[string]bool{"data": true, "store": true, "redis-url": true, "redis-cluster": true, "redis-prefix": true, "max-keys": true}

// subcommandForms are the values the subcommands' flags take.
var subcommandForms = map[string]form{
	"store":    {"embedded or redis", func(v any) bool { return v.(StoreKind) != StoreMemory }},
	"max-keys": wholeNoLimit,
}

// backupStore is the store a subcommand uses, as its flags say.
type backupStore struct {
	kind    StoreKind
	data    string
	redis   RedisConfig
	maxKeys int // import's -max-keys; 0 (no limit) for the others
}

// offlineStore is a store read and written by a subcommand rather than
// through a running service: [boltstore.Offline] or [redisstore.Offline].
type offlineStore interface {
	// Export writes every count of the store as one JSON dump to w.
	Export(w io.Writer) error
	// Import reads a dump from r into the store, adding to its counts
	// or, with replace, replacing them.
	Import(r io.Reader, replace bool) error
}

var (
	_ offlineStore = boltstore.Offline{}
	_ offlineStore = redisstore.Offline{}
)

// offline returns the store b names, for export and import.
func (b *backupStore) offline() (offlineStore, error) {
	switch b.kind {
	case StoreEmbedded:
		return boltstore.Offline{Dir: b.data, MaxKeys: b.maxKeys}, nil
	case StoreRedis:
		return redisstore.Offline{Options: redisOptions(b.redis, redisstore.Options{MaxKeys: b.maxKeys})}, nil
	}
	return nil, fmt.Errorf("-store %s: want embedded or redis", b.kind) // not past its form
}

// backupCommand returns the flag set of the subcommand name, whose usage
// begins with synopsis, with the flags that say which store it uses
// (those of the service, [storeFlags]), and where they go.
func backupCommand(name, synopsis string, getenv func(string) string) (*commandLine, *backupStore) {
	cl := newCommandLine("visitors "+name, synopsis+"\nWith the embedded store the service must be stopped: its lock is taken.\nA flag with a variable named beside it can also be set by that variable.\n\nFlags:\n", func(f string) bool { return subcommandEnv[f] })
	b := new(backupStore)
	storeFlags(cl.fs, &b.kind, &b.data, &b.redis, getenv, "the store: embedded (in -data) or redis", "data `directory` of the embedded store")
	return cl, b
}

// The usages of the subcommands, before their flags.
const (
	exportUsage = `Usage:
  visitors export [-data dir | -store redis ...]

export writes every count, totals and daily counts, as JSON to stdout.
`
	importUsage = `Usage:
  visitors import [-data dir | -store redis ...] [-replace] [-format json|csv] [file]

import reads counts from a JSON export, from file or else stdin, and adds
them to the store's, or with -replace replaces every count. With -format
csv it reads rows of key,total and key,date,count instead (counts carried
over from another counter: docs/migrate.md), and adds them.
`
	checkUsage = `Usage:
  visitors check [-data dir]

check verifies the embedded store in -data without changing it (bbolt's
page check, the format, every record's checksum), prints what it found,
and exits 1 if the store is damaged.
`
)

// Export runs "visitors export": every count of the store -store names,
// the embedded one in -data or Redis, totals, daily counts and locks, as
// one JSON dump (internal/store/dump) to stdout. With the embedded store
// the service must be stopped: the store's lock is taken. Redis is read
// while its instances keep counting, each key at one moment.
func Export(args []string, getenv func(string) string, stdout io.Writer) error {
	cl, b := backupCommand("export", exportUsage, getenv)
	if err := cl.parseNone(args, subcommandForms, getenv, stdout); err != nil {
		return err
	}
	st, err := b.offline()
	if err != nil {
		return fmt.Errorf("export: %w", err)
	}
	return st.Export(stdout)
}

// Import runs "visitors import": it reads a JSON dump from the named
// file, or stdin, into the store -store names, the embedded one in -data
// or Redis, adding to the counts there or, with -replace, replacing
// them. The service should be stopped (the embedded store's lock is
// taken; Redis's instances would show the old counts until they read
// them again).
func Import(args []string, getenv func(string) string, stdin io.Reader, stdout io.Writer) error {
	cl, b := backupCommand("import", importUsage, getenv)
	replace := cl.fs.Bool("replace", false, "replace every count instead of adding to them")
	cl.fs.IntVar(&b.maxKeys, "max-keys", 1_000_000, "most distinct names the store may hold after the import; past it the import is refused (0: no limit)")
	format := cl.fs.String("format", "json", "what the file holds: json (a visitors export) or csv (rows of key,total and key,date,count; adds, never with -replace)")
	rest, err := cl.parse(args, subcommandForms, getenv, stdout)
	if err != nil {
		return err
	}
	switch {
	case *format != "json" && *format != "csv":
		return cl.refuse(fmt.Errorf("-format %q: want json or csv", *format))
	case *format == "csv" && *replace:
		return cl.refuse(errors.New("-format csv adds counts and cannot -replace: a CSV holds no /hi counter and only the keys it names"))
	}
	in := stdin
	switch len(rest) {
	case 0:
	case 1:
		f, err := os.Open(rest[0])
		if err != nil {
			return fmt.Errorf("import: %w", err)
		}
		defer f.Close()
		in = f
	default:
		return cl.refuse(fmt.Errorf("unexpected argument %q", rest[1]))
	}
	if *format == "csv" {
		// Checked whole before the store is opened: a CSV refused
		// changes nothing.
		var d bytes.Buffer
		if err := dump.FromCSVChecked(in, &d, compat.CheckKey); err != nil {
			return fmt.Errorf("import: invalid CSV: %w; the store was not changed", err)
		}
		in = &d
	}
	st, err := b.offline()
	if err != nil {
		return fmt.Errorf("import: %w", err)
	}
	return st.Import(in, *replace)
}

// Check runs "visitors check": it verifies the embedded store in -data
// without changing it (bbolt's page check, the format, every record's
// checksum), prints what it found, and fails if the store is damaged.
// The service must be stopped.
func Check(args []string, getenv func(string) string, stdout io.Writer) error {
	cl, b := backupCommand("check", checkUsage, getenv)
	if err := cl.parseNone(args, subcommandForms, getenv, stdout); err != nil {
		return err
	}
	if b.kind != StoreEmbedded {
		// It checked ./data without a word: a report on a store
		// nobody asked about.
		return cl.refuse(fmt.Errorf("-store %s: check verifies only the embedded store, its file in -data; Redis keeps no file of ours to check", b.kind))
	}
	return boltstore.Check(b.data, stdout, 100)
}
