package redisclient

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/redis/rueidis"

	"visitors/internal/store/redisstore/redistest"
)

// addr is the redis-server TestMain starts.
var addr string

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	dir, err := os.MkdirTemp("", "redisclient")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	s, err := redistest.Start(dir)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer s.Close()
	// REDISCLIENT_REDIS_CPU pins the server away from the benchmark:
	//	REDISCLIENT_REDIS_CPU=1 taskset -c 0 go test -bench . ./lab/redisclient
	if cpu := os.Getenv("REDISCLIENT_REDIS_CPU"); cpu != "" {
		if err := s.Pin(cpu); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
	}
	addr = s.Addr
	return m.Run()
}

// applyLike stands for the store's apply script: a write and a reply of
// several integers.
const applyLike = `local n = redis.call('INCRBY', KEYS[1], ARGV[1]) return {n, n}`

// BenchmarkIncr is sync /hi: one INCR per visit from 64 goroutines
// (SetParallelism 32 on 2 cores).
func BenchmarkIncr(b *testing.B) {
	ctx := context.Background()
	b.Run("client=rueidis", func(b *testing.B) {
		c, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{addr}, DisableCache: true})
		if err != nil {
			b.Fatal(err)
		}
		defer c.Close()
		b.ReportAllocs()
		b.SetParallelism(32)
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if err := c.Do(ctx, c.B().Incr().Key("bench:rueidis").Build()).Error(); err != nil {
					b.Error(err)
					return
				}
			}
		})
	})
	b.Run("client=goredis", func(b *testing.B) {
		c := redis.NewClient(&redis.Options{Addr: addr, PoolSize: 64})
		defer c.Close()
		b.ReportAllocs()
		b.SetParallelism(32)
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if err := c.Incr(ctx, "bench:goredis").Err(); err != nil {
					b.Error(err)
					return
				}
			}
		})
	})
}

// BenchmarkRound is one flush round: 64 scripts, one per group of slots,
// pipelined.
func BenchmarkRound(b *testing.B) {
	ctx := context.Background()
	keys := make([]string, 64)
	for i := range keys {
		keys[i] = fmt.Sprintf("bench:{%d}k", i)
	}
	b.Run("client=rueidis", func(b *testing.B) {
		c, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{addr}, DisableCache: true})
		if err != nil {
			b.Fatal(err)
		}
		defer c.Close()
		sha, err := c.Do(ctx, c.B().ScriptLoad().Script(applyLike).Build()).ToString()
		if err != nil {
			b.Fatal(err)
		}
		b.ReportAllocs()
		for b.Loop() {
			cmds := make(rueidis.Commands, len(keys))
			for i, k := range keys {
				cmds[i] = c.B().Evalsha().Sha1(sha).Numkeys(1).Key(k).Arg(strconv.Itoa(i)).Build()
			}
			for _, r := range c.DoMulti(ctx, cmds...) {
				if err := r.Error(); err != nil {
					b.Fatal(err)
				}
			}
		}
	})
	b.Run("client=goredis", func(b *testing.B) {
		c := redis.NewClient(&redis.Options{Addr: addr, PoolSize: 64})
		defer c.Close()
		s := redis.NewScript(applyLike)
		if err := s.Load(ctx, c).Err(); err != nil {
			b.Fatal(err)
		}
		b.ReportAllocs()
		for b.Loop() {
			p := c.Pipeline()
			for i, k := range keys {
				s.EvalSha(ctx, p, []string{k}, i)
			}
			if _, err := p.Exec(ctx); err != nil {
				b.Fatal(err)
			}
		}
	})
}
