package main

import (
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"

	"visitors/internal/servertest"
	"visitors/internal/store/redisstore/redistest"
)

// xff is the X-Forwarded-For of the i-th distinct client, as a reverse
// proxy on loopback (-trusted-proxies 127.0.0.1/32) names it.
func xff(i int) string { return fmt.Sprintf("198.18.%d.%d", i>>8&0xff, i&0xff) }

// waitCounts reads key on every instance until each shows the same
// unique_today twice in a row (their rounds have landed and been read
// again), and returns it.
func waitCounts(t *testing.T, procs []*servertest.Proc, key string) counts {
	t.Helper()
	var last []counts
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(150 * time.Millisecond) {
		var now []counts
		for _, p := range procs {
			now = append(now, mustCounts(t, p, key))
		}
		same := last != nil
		for i := range now {
			same = same && now[i] == now[0] && last[i] == now[i]
		}
		if same {
			return now[0]
		}
		last = now
	}
	t.Fatalf("%s: the instances never agreed: %+v", key, last)
	return counts{}
}

// waitTotal returns key's counts as p shows them once its total is
// want, or as it last showed them after 10 s. An instance shows Redis's
// count as of its last round that read the key, which a read asks the
// next round for: on a busy machine two reads 150 ms apart may both
// come before that round, so waitCounts' agreement is not enough to
// tell an instance that has caught up.
func waitTotal(t *testing.T, p *servertest.Proc, key string, want uint64) counts {
	t.Helper()
	var c counts
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if c = mustCounts(t, p, key); c.Total == want {
			break
		}
	}
	return c
}

// TestRedisUniqueVisitorsAcrossInstances runs three instances of the
// real binary on one Redis (standalone, then a 3-node cluster). 300
// clients, told apart by a trusted proxy's X-Forwarded-For, each view a
// counter three times, each view through another instance: every
// instance shows about 300 unique visitors in /counter/{key}.json, its
// daily.json and its show=unique badge. Every instance then restarts and
// the same 300 view again: the unique count in Redis, which a new
// instance shows, does not move, the total does. (An instance that
// served them may show more: it never shows fewer unique visitors than
// it did, and it showed the ones it had not sent yet on top of Redis's
// count, issue 23, item 11.)
func TestRedisUniqueVisitorsAcrossInstances(t *testing.T) {
	t.Parallel() // on the shared Redis under prefixes of its own
	for _, cluster := range []bool{false, true} {
		t.Run(map[bool]string{false: "standalone", true: "cluster"}[cluster], func(t *testing.T) {
			args := append(redisArgs(t, cluster), "-trusted-proxies", "127.0.0.1/32", "-log-level", "warn", "-flight-recorder=false")
			env := []string{"VISITORS_CLIENT_RATE=0", "VISITORS_CLIENT_NEW_KEYS=0", "VISITORS_REPEAT_WINDOW=0"} // bots and uniques as by default
			start := func() []*servertest.Proc {
				var procs []*servertest.Proc
				for range 3 {
					procs = append(procs, servertest.Start(t, bin, env, args...))
				}
				return procs
			}
			procs := start()
			const clients = 300
			views := func(procs []*servertest.Proc, rounds int) {
				parallel(clients*rounds, func(i int) {
					c, r := i%clients, i/clients
					p := procs[(c+r)%3]
					if code, _, body := fetch(t, p.URL("/counter/u.json"), browserUA, xff(c)); code != 200 {
						t.Errorf("view %d: %d %s", i, code, body)
					}
				})
			}
			views(procs, 3)
			// Redis's count: what an instance that served none of them
			// shows. An instance that served them may show more: it never
			// shows fewer unique visitors than it did, and it showed the
			// ones it had not sent yet on top of Redis's count, some of
			// whom Redis already held (issue 23, item 11); at most the
			// clients it served.
			reader := servertest.Start(t, bin, env, args...)
			c := waitCounts(t, []*servertest.Proc{reader}, "u")
			stop(t, reader)
			if c.Total != 3*clients {
				t.Errorf("total = %d, want %d", c.Total, 3*clients)
			}
			if e := math.Abs(float64(c.UniqueToday)-clients) / clients; e > 0.02 {
				t.Errorf("%d clients on 3 instances = %d unique today, want within 2%%", clients, c.UniqueToday)
			} else {
				t.Logf("%d clients on 3 instances = %d unique today", clients, c.UniqueToday)
			}
			for i, p := range procs {
				shown := waitTotal(t, p, "u", c.Total)
				if shown.Total != c.Total || shown.UniqueToday < c.UniqueToday || shown.UniqueToday > c.UniqueToday+clients {
					t.Errorf("instance %d shows %+v, want total %d and from %d to %d unique", i, shown, c.Total, c.UniqueToday, c.UniqueToday+clients)
				}
				t.Logf("instance %d shows %d unique", i, shown.UniqueToday)
				_, _, body := fetch(t, p.URL("/counter/u.svg?show=unique&count=false"), browserUA, "")
				if !strings.Contains(body, fmt.Sprintf(">%d<", shown.UniqueToday)) {
					t.Errorf("instance %d: the show=unique badge does not show %d: %.300s", i, shown.UniqueToday, body)
				}
				_, _, body = fetch(t, p.URL("/counter/u/daily.json?days=2"), browserUA, "")
				var d struct {
					Days []struct {
						Count  uint64 `json:"count"`
						Unique uint64 `json:"unique"`
					} `json:"days"`
				}
				if err := json.Unmarshal([]byte(body), &d); err != nil || len(d.Days) != 2 || d.Days[1].Unique != shown.UniqueToday || d.Days[0].Unique != 0 {
					t.Errorf("instance %d: daily.json = %s (%v), want today's unique %d", i, body, err, shown.UniqueToday)
				}
			}

			for _, p := range procs {
				stop(t, p)
			}
			procs = start()
			views(procs, 1) // the same clients, after every instance restarted
			for i, p := range procs {
				if got := mustCounts(t, p, "u"); got.UniqueToday < c.UniqueToday || got.UniqueToday > c.UniqueToday+clients {
					t.Errorf("instance %d after the same clients again: %d unique, want from %d to %d", i, got.UniqueToday, c.UniqueToday, c.UniqueToday+clients)
				}
				stop(t, p)
			}
			reader = servertest.Start(t, bin, env, args...)
			defer stop(t, reader)
			after := waitCounts(t, []*servertest.Proc{reader}, "u")
			if after.UniqueToday != c.UniqueToday || after.Total != 4*clients {
				t.Errorf("after restarting every instance and the same %d clients again: %d unique, total %d; want %d unique (no one counted again), total %d",
					clients, after.UniqueToday, after.Total, c.UniqueToday, 4*clients)
			}
		})
	}
}

// TestRedisMetrics scrapes /metrics of the real binary on its own Redis:
// the Redis figures move with the traffic (rounds, scripts of counts and
// of unique visitors, keys sent, /hi reservations, round latency), and
// while Redis is down visitors_redis_up is 0, failed rounds and pings
// count, and visits wait in memory; once Redis is back they are sent.
func TestRedisMetrics(t *testing.T) {
	rs, err := redistest.Start(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer rs.Close()
	p := servertest.Start(t, bin, rulesOff, "-store", "redis", "-redis-url", rs.URL(), "-log-level", "off", "-flight-recorder=false")
	defer stop(t, p)
	before := mustScrape(t, p)
	if v, ok := sample(before, "visitors_redis_up"); !ok || v != 1 {
		t.Fatalf("visitors_redis_up = %v (exported: %v), want 1", v, ok)
	}
	for i := range 20 {
		mustGet(t, p.URL(fmt.Sprintf("/counter/m%d.json", i%4)), "User-Agent", fmt.Sprintf("ua%d", i))
	}
	mustGet(t, p.URL("/hi"))
	wants := []struct {
		name   string
		labels []string
		min    float64
	}{
		{"visitors_redis_rounds_total", []string{"result", "ok"}, 1},
		{"visitors_redis_commands_total", []string{"part", "counts"}, 1},
		{"visitors_redis_commands_total", []string{"part", "uniques"}, 1},
		{"visitors_redis_keys_sent_total", nil, 4},
		{"visitors_redis_hi_reservations_total", nil, 1},
		{"visitors_redis_round_duration_seconds", []string{"part", "counts"}, 1},
		{"visitors_redis_round_duration_seconds", []string{"part", "uniques"}, 1},
	}
	var after map[string]*dto.MetricFamily
	moved := func(name string, labels ...string) float64 {
		b, _ := sample(before, name, labels...)
		a, _ := sample(after, name, labels...)
		return a - b
	}
	// The visits may reach Redis over more than one round: wait until
	// every figure has moved as far as it must, or 5 s.
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		after = mustScrape(t, p)
		done := true
		for _, m := range wants {
			done = done && moved(m.name, m.labels...) >= m.min
		}
		if done {
			break
		}
	}
	for _, m := range wants {
		if _, ok := sample(after, m.name, m.labels...); !ok {
			t.Errorf("/metrics has no %s%v", m.name, m.labels)
		}
		if d := moved(m.name, m.labels...); d < m.min {
			t.Errorf("%s%v moved by %v, want at least %v", m.name, m.labels, d, m.min)
		}
	}
	if d := moved("visitors_redis_rounds_total", "result", "failed"); d != 0 {
		t.Errorf("visitors_redis_rounds_total{result=failed} moved by %v on a healthy Redis", d)
	}
	if v, _ := sample(after, "visitors_redis_hi_numbers_left"); v != 999 {
		t.Errorf("visitors_redis_hi_numbers_left = %v, want 999 (a block of 1000, one handed out)", v)
	}

	rs.Kill()
	var down map[string]*dto.MetricFamily
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		mustGet(t, p.URL("/counter/m0.json"))
		down = mustScrape(t, p)
		f, _ := sample(down, "visitors_redis_rounds_total", "result", "failed")
		up, _ := sample(down, "visitors_redis_up")
		pend, _ := sample(down, "visitors_redis_held_visits")
		if up == 0 && f > 0 && pend > 0 {
			break
		}
	}
	for _, m := range []struct {
		name   string
		labels []string
		want   func(float64) bool
		what   string
	}{
		{"visitors_redis_up", nil, func(v float64) bool { return v == 0 }, "0"},
		{"visitors_redis_round_stuck", nil, func(v float64) bool { return v == 1 }, "1"},
		{"visitors_redis_rounds_total", []string{"result", "failed"}, func(v float64) bool { return v > 0 }, "above 0"},
		{"visitors_redis_errors_total", []string{"kind", "round"}, func(v float64) bool { return v > 0 }, "above 0"},
		{"visitors_redis_held_visits", nil, func(v float64) bool { return v > 0 }, "above 0"},
	} {
		if v, ok := sample(down, m.name, m.labels...); !ok || !m.want(v) {
			t.Errorf("Redis down: %s%v = %v (exported: %v), want %s", m.name, m.labels, v, ok, m.what)
		}
	}
	if err := rs.Restart(); err != nil {
		t.Fatal(err)
	}
	var back map[string]*dto.MetricFamily
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		back = mustScrape(t, p)
		up, _ := sample(back, "visitors_redis_up")
		held, _ := sample(back, "visitors_redis_held_visits")
		if up == 1 && held == 0 {
			break
		}
	}
	if up, _ := sample(back, "visitors_redis_up"); up != 1 {
		t.Error("Redis back: visitors_redis_up is not 1")
	}
	if held, _ := sample(back, "visitors_redis_held_visits"); held != 0 {
		t.Errorf("Redis back: visitors_redis_held_visits = %v, want 0 (every held visit sent)", held)
	}
}
