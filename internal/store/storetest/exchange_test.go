package storetest_test

import (
	"crypto/sha1"
	"encoding/hex"
	"testing"
	"time"

	"visitors/internal/store"
	"visitors/internal/store/boltstore"
	"visitors/internal/store/memstore"
	"visitors/internal/store/redisstore"
	"visitors/internal/store/redisstore/redistest"
	"visitors/internal/store/storetest"
)

// TestExchange moves dumps between every pair of backends: the embedded
// store, Redis (a redis-server of the test's own) and memory (which has
// no export, so takes part in none).
func TestExchange(t *testing.T) {
	rs := redistest.StartTest(t)
	storetest.Exchange(t,
		storetest.Backend{Name: "memory", Open: func(t *testing.T, c storetest.Config) store.Store {
			return memstore.New(memstore.Options{MaxKeys: c.MaxKeys, Now: c.Now})
		}},
		storetest.Backend{Name: "bolt", Durable: true, Open: func(t *testing.T, c storetest.Config) store.Store {
			st, err := boltstore.Open(boltstore.Options{Dir: c.Dir, MaxKeys: c.MaxKeys, Now: c.Now})
			if err != nil {
				t.Fatal(err)
			}
			return st
		}},
		storetest.Backend{Name: "redis", Durable: true, Open: func(t *testing.T, c storetest.Config) store.Store {
			h := sha1.Sum([]byte(c.Dir))
			st, err := redisstore.Open(redisstore.Options{
				URL:           rs.URL(),
				Prefix:        "x" + hex.EncodeToString(h[:6]) + ":",
				FlushInterval: 5 * time.Millisecond,
				MaxKeys:       c.MaxKeys,
				Now:           c.Now,
			})
			if err != nil {
				t.Fatal(err)
			}
			return st
		}},
	)
}
