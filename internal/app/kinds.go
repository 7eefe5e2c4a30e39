package app

import (
	"errors"
	"flag"

	"github.com/rs/zerolog"
)

// StoreKind is where counts live, as -store names it. Its zero value is
// the embedded store. A *StoreKind is a [flag.Value]: -store is parsed
// once, here, and compared as a type everywhere after.
type StoreKind uint8

// The stores -store chooses from.
const (
	StoreEmbedded StoreKind = iota // a durable bbolt file in -data
	StoreRedis                     // Redis or Redis Cluster, shared by instances
	StoreMemory                    // kept nowhere: counts go with the process
)

// storeNames are the values of -store, by kind.
var storeNames = [...]string{StoreEmbedded: "embedded", StoreRedis: "redis", StoreMemory: "memory"}

// String returns the name -store takes for k.
func (k StoreKind) String() string {
	if int(k) < len(storeNames) {
		return storeNames[k]
	}
	return "StoreKind(?)"
}

// Set sets k from a -store value: embedded, redis or memory.
func (k *StoreKind) Set(s string) error {
	for i, n := range storeNames {
		if s == n {
			*k = StoreKind(i)
			return nil
		}
	}
	return errors.New("want embedded, redis or memory")
}

// Get returns k, for [flag.Getter].
func (k *StoreKind) Get() any { return *k }

// argName names -store's argument in the usage, as flag names a string's.
func (k *StoreKind) argName() string { return "string" }

// logLevel is -log-level's [flag.Value]: the names debug, info, warn,
// error and off, parsed once into the zerolog level they mean.
type logLevel zerolog.Level

// levelNames are the values of -log-level, with the levels they mean.
var levelNames = []struct {
	name  string
	level zerolog.Level
}{{"debug", zerolog.DebugLevel}, {"info", zerolog.InfoLevel}, {"warn", zerolog.WarnLevel}, {"error", zerolog.ErrorLevel}, {"off", zerolog.Disabled}}

// String returns the name -log-level takes for l.
func (l *logLevel) String() string {
	for _, n := range levelNames {
		if n.level == zerolog.Level(*l) {
			return n.name
		}
	}
	return zerolog.Level(*l).String()
}

// Set sets l from a -log-level value.
func (l *logLevel) Set(s string) error {
	for _, n := range levelNames {
		if s == n.name {
			*l = logLevel(n.level)
			return nil
		}
	}
	return errors.New("want debug, info, warn, error or off")
}

// Get returns the zerolog level, for [flag.Getter].
func (l *logLevel) Get() any { return zerolog.Level(*l) }

var (
	_ flag.Getter = (*StoreKind)(nil)
	_ flag.Getter = (*logLevel)(nil)
)
