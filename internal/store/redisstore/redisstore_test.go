package redisstore

import (
	"bytes"
	"crypto/sha1"
	"encoding/hex"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"visitors/internal/race"
	"visitors/internal/store"
	"visitors/internal/store/redisstore/redistest"
	"visitors/internal/store/storetest"
)

// One standalone server and one 3-node cluster serve every test of the
// package; each test keeps to its own prefix.
var (
	standalone *redistest.Server
	cluster    *redistest.Cluster
)

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	dir, err := os.MkdirTemp("", "redisstore-test")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	if standalone, err = redistest.Start(dir); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer standalone.Close()
	if cluster, err = redistest.StartCluster(dir, 3); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer cluster.Close()
	return m.Run()
}

// at returns o with the address of the test's Redis where names:
// "cluster" or "standalone".
func at(where string, o Options) Options {
	if where == "cluster" {
		o.URL, o.Cluster = "", cluster.Addrs()
	} else {
		o.URL = standalone.URL()
	}
	return o
}

// prefixOf gives each store directory of the suite its own names.
func prefixOf(dir string) string {
	h := sha1.Sum([]byte(dir))
	return "t" + hex.EncodeToString(h[:6]) + ":"
}

func backend(where string, d store.Durability) storetest.Backend {
	return storetest.Backend{
		Durable: true,
		Open: func(t *testing.T, c storetest.Config) store.Store {
			t.Helper()
			o := Options{
				Prefix:        prefixOf(c.Dir),
				Durability:    d,
				FlushInterval: 5 * time.Millisecond,
				MaxKeys:       c.MaxKeys,
				Now:           c.Now,
			}
			o = at(where, o)
			st, err := Open(o)
			if err != nil {
				t.Fatal(err)
			}
			return st
		},
	}
}

func TestConformance(t *testing.T) {
	for _, where := range []string{"standalone", "cluster"} {
		for _, d := range []store.Durability{store.Batch, store.Sync} {
			t.Run(where+"/"+d.String(), func(t *testing.T) {
				storetest.Run(t, backend(where, d))
			})
		}
	}
}

// TestResentRoundLandsOnce sends one round's script again, as the
// flusher does when an answer was lost: the second copy adds nothing, and
// the next round adds again.
func TestResentRoundLandsOnce(t *testing.T) {
	for _, where := range []string{"standalone", "cluster"} {
		t.Run(where, func(t *testing.T) {
			st := backend(where, store.Batch).Open(t, storetest.Config{Dir: t.TempDir()}).(*Store)
			defer st.Close()
			tag := st.n.tag([]byte("resent"))
			g := st.groupOf(tag)
			today := store.DayOf(storetest.Anchor())
			round := func(seq string) []int64 {
				t.Helper()
				sc := script{src: applySrc, sha: applySHA,
					keys: []string{st.n.seq(g, "test"), total(tag), dayKey(tag, today), genKey(tag), lockKey(tag), dayKey(tag, today-1)},
					args: []string{seq, "60", strconv.Itoa(DayTTL), "0", "3", "1", "2", strconv.Itoa(DayTTL)}}
				vals, err := st.doScripts(t.Context(), []script{sc})[0].AsIntSlice()
				if err != nil {
					t.Fatal(err)
				}
				return vals
			}
			// The answer: total, today, yesterday, generation, flags, visits lost at a bound.
			if got := fmt.Sprint(round("1")); got != "[5 3 2 0 6 0]" {
				t.Fatalf("round 1 = %s, want [5 3 2 0 6 0] (total, today, yesterday; generation 0; exists and created; none lost)", got)
			}
			if got := fmt.Sprint(round("1")); got != "[5 3 2 0 2 0]" {
				t.Fatalf("round 1 sent again = %s, want [5 3 2 0 2 0]: nothing added twice", got)
			}
			if got := fmt.Sprint(round("2")); got != "[10 6 4 0 2 0]" {
				t.Fatalf("round 2 = %s, want [10 6 4 0 2 0]", got)
			}
			if got := fmt.Sprint(round("1")); got != "[10 6 4 0 2 0]" {
				t.Fatalf("round 1 arriving late = %s, want [10 6 4 0 2 0]", got)
			}
		})
	}
}

// TestBatchHotPathAllocatesNothing: in Batch, a visit to a key the
// instance knows, a read of it and a /hi number from the block touch
// only memory, and allocate nothing.
func TestBatchHotPathAllocatesNothing(t *testing.T) {
	if race.Enabled {
		t.Skip("allocation budgets are checked without -race (scripts/test.sh runs them)")
	}
	st := backend("standalone", store.Batch).Open(t, storetest.Config{Dir: t.TempDir()}).(*Store)
	defer st.Close()
	key := []byte("hot")
	if _, err := st.Incr(t.Context(), key); err != nil {
		t.Fatal(err)
	}
	st.Hit(t.Context())
	ctx := t.Context()
	for name, f := range map[string]func(){
		"Incr": func() { st.Incr(ctx, key) },
		"Get":  func() { st.Get(ctx, key) },
		"Hit":  func() { st.Hit(ctx) },
	} {
		if n := testing.AllocsPerRun(200, f); n != 0 {
			t.Errorf("%s allocates %v times per call, want 0", name, n)
		}
	}
}

// TestURLPasswordNotInErrors: a bad -redis-url is refused without
// echoing its password.
func TestURLPasswordNotInErrors(t *testing.T) {
	for _, u := range []string{"redis://user:hunter2@127.0.0.1:1/0", "redis://user:hunter2@bad host/0", "ftp://user:hunter2@h/0"} {
		_, err := Open(Options{URL: u, Timeout: 200 * time.Millisecond})
		if err == nil || strings.Contains(err.Error(), "hunter2") {
			t.Errorf("Open(%s) error = %v, want one without the password", u, err)
		}
	}
}

// TestHealthNamesRedisWhileItIsDown: with no visits at all, Health says
// Redis is down within a few flush intervals, and clears once it is back.
func TestHealthNamesRedisWhileItIsDown(t *testing.T) {
	rs := redistest.StartTest(t)
	st, err := Open(Options{URL: rs.URL(), FlushInterval: 10 * time.Millisecond, Timeout: 500 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	waitHealth := func(down bool) {
		t.Helper()
		deadline := time.Now().Add(20 * time.Second)
		for {
			err := st.Health()
			if down && err != nil && strings.Contains(err.Error(), "redis") || !down && err == nil {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("Health() = %v after 20s; want Redis named: %v", err, down)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	waitHealth(false)
	rs.Kill()
	waitHealth(true)
	if err := rs.Restart(); err != nil {
		t.Fatal(err)
	}
	waitHealth(false)
}

// TestMaxKeysAcrossInstances: two instances on one prefix share one
// limit; of two new keys racing for the last place from different
// instances, exactly one gets it (20 rounds, standalone and cluster).
func TestMaxKeysAcrossInstances(t *testing.T) {
	for _, where := range []string{"standalone", "cluster"} {
		t.Run(where, func(t *testing.T) {
			for round := range 20 {
				c := storetest.Config{Dir: t.TempDir(), MaxKeys: 2}
				a := backend(where, store.Batch).Open(t, c)
				b := backend(where, store.Sync).Open(t, c)
				if _, err := a.Incr(t.Context(), []byte("first")); err != nil {
					t.Fatal(err)
				}
				won := storetest.RaceNewKeys(t, a, b)
				if won != 1 {
					t.Fatalf("round %d: %d of two instances' new keys took the last place, want 1", round, won)
				}
				// A key one instance holds still counts on the other.
				if _, err := b.Incr(t.Context(), []byte("first")); err != nil {
					t.Fatalf("round %d: a held key on the other instance: %v", round, err)
				}
				a.Close()
				b.Close()
			}
		})
	}
}

// syncBuffer is a bytes.Buffer a logger and a test may share.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// TestWarnsWhenRedisMayEvict: opening a store on a Redis whose
// maxmemory-policy evicts warns in the log, naming the policy; on the
// test's servers (noeviction, Redis's default) it does not.
func TestWarnsWhenRedisMayEvict(t *testing.T) {
	rs := redistest.StartTest(t, "--maxmemory-policy", "allkeys-lru")
	tests := []struct {
		name string
		o    Options
		warn bool
	}{
		{"allkeys-lru", Options{URL: rs.URL()}, true},
		{"standalone noeviction", Options{URL: standalone.URL()}, false},
		{"cluster noeviction", Options{Cluster: cluster.Addrs()}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var log syncBuffer
			tt.o.Log = zerolog.New(&log)
			tt.o.Prefix = prefixOf(t.TempDir())
			st, err := Open(tt.o)
			if err != nil {
				t.Fatal(err)
			}
			defer st.Close()
			got := log.String()
			warned := strings.Contains(got, `"level":"warn"`) && strings.Contains(got, `"maxmemory-policy":"allkeys-lru"`)
			if warned != tt.warn || !tt.warn && strings.Contains(got, "maxmemory-policy") {
				t.Errorf("log after Open = %q; want a warning naming the policy: %v", got, tt.warn)
			}
		})
	}
}
