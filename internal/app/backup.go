package app

import (
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	"visitors/internal/store/boltstore"
	"visitors/internal/store/redisstore"
)

// backupFlags parses the flags export, import and check share.
func backupFlags(name string, args []string, getenv func(string) string, stderr io.Writer) (*flag.FlagSet, *string) {
	fs, data, _, _ := storeFlags(name, getenv, stderr)
	return fs, data
}

// storeFlags defines the flags that say which store export and import
// use: -store, -data and the Redis flags, with their environment
// variables as defaults.
func storeFlags(name string, getenv func(string) string, stderr io.Writer) (*flag.FlagSet, *string, *string, *RedisConfig) {
	fs := flag.NewFlagSet("visitors "+name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	data := fs.String("data", "./data", "data `directory` of the embedded store (env "+envName("data")+")")
	if v := getenv(envName("data")); v != "" {
		*data = v
	}
	kind := fs.String("store", "embedded", "the store: embedded (in -data) or redis (env "+envName("store")+")")
	if v := getenv(envName("store")); v != "" {
		*kind = v
	}
	r := new(RedisConfig)
	redisFlags(fs, r, getenv)
	for _, f := range []string{"redis-url", "redis-cluster", "redis-prefix"} {
		if v := getenv(envName(f)); v != "" {
			fs.Set(f, v)
		}
	}
	return fs, data, kind, r
}

// Export runs "visitors export": every count of the embedded store in
// -data, totals and daily counts, as JSON to stdout. The service must be
// stopped: the store's lock is taken.
func Export(args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	fs, data, kind, r := storeFlags("export", getenv, stderr)
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("export: unexpected argument %q", fs.Arg(0))
	}
	switch *kind {
	case "embedded":
		return boltstore.Export(*data, stdout)
	case "redis":
		return redisstore.Export(redisOptions(*r, redisstore.Options{}), stdout, time.Now())
	}
	return fmt.Errorf("export: -store %q: want embedded or redis", *kind)
}

// Import runs "visitors import": it reads a JSON export from the named
// file, or stdin, into the embedded store in -data, adding to the counts
// there or, with -replace, replacing them. The service must be stopped.
func Import(args []string, getenv func(string) string, stdin io.Reader, stderr io.Writer) error {
	fs, data, kind, r := storeFlags("import", getenv, stderr)
	replace := fs.Bool("replace", false, "replace every count instead of adding to them")
	maxKeys := fs.Int("max-keys", 1_000_000, "most distinct names the store may hold after the import; past it the import is refused (0: no limit) (env "+envName("max-keys")+")")
	if v := getenv(envName("max-keys")); v != "" {
		if err := fs.Set("max-keys", v); err != nil {
			return fmt.Errorf("import: %s: %w", envName("max-keys"), err)
		}
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	in := stdin
	switch fs.NArg() {
	case 0:
	case 1:
		f, err := os.Open(fs.Arg(0))
		if err != nil {
			return fmt.Errorf("import: %w", err)
		}
		defer f.Close()
		in = f
	default:
		return fmt.Errorf("import: unexpected argument %q", fs.Arg(1))
	}
	switch *kind {
	case "embedded":
		return boltstore.ImportLimited(*data, in, *replace, *maxKeys)
	case "redis":
		return redisstore.Import(redisOptions(*r, redisstore.Options{MaxKeys: *maxKeys}), in, *replace, "", time.Now())
	}
	return fmt.Errorf("import: -store %q: want embedded or redis", *kind)
}

// Check runs "visitors check": it verifies the embedded store in -data
// without changing it (bbolt's page check, the format, every record's
// checksum), prints what it found, and fails if the store is damaged.
// The service must be stopped.
func Check(args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	fs, data := backupFlags("check", args, getenv, stderr)
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("check: unexpected argument %q", fs.Arg(0))
	}
	return boltstore.Check(*data, stdout, 100)
}
