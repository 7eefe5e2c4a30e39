package redisstore

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// newRoundDurations returns the histogram of the store's sends of
// rounds, visitors_redis_round_duration_seconds, by part (counts or
// uniques).
func newRoundDurations() *prometheus.HistogramVec {
	return prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "visitors_redis_round_duration_seconds",
		Help:    "How long one send of a round to Redis took, from the pipelined scripts to their answers, failed attempts included; by part: counts (the apply scripts) or uniques (the HyperLogLog scripts).",
		Buckets: []float64{.0002, .0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5},
	}, []string{"part"})
}

// observe records one send of a round of part that took d, and tells
// Options.OnRound; err is counted apart, by visitors_redis_rounds_total.
func (s *Store) observe(part RoundPart, d time.Duration, err error) {
	if s.roundDurations != nil {
		s.roundDurations.WithLabelValues(part.String()).Observe(d.Seconds())
	}
	if s.o.OnRound != nil {
		s.o.OnRound(part, d, err)
	}
}

// Collectors returns the store's Prometheus collectors: the durations of
// its rounds, and what an operator of several instances on one Redis
// watches to see trouble coming (a Redis that stops answering, rounds
// that fail or slow down, visits piling up in memory), read from one
// [Store.Report] per scrape.
func (s *Store) Collectors() []prometheus.Collector {
	return []prometheus.Collector{s.roundDurations, &reportCollector{report: s.Report}}
}

// Vars returns the store's counters for /debug/vars.
func (s *Store) Vars() any { return s.Stats() }

// reportCollector exports a [Report], read once per scrape.
type reportCollector struct{ report func() Report }

var (
	redisUp       = prometheus.NewDesc("visitors_redis_up", "1 when Redis answered the last round and the last check between rounds, 0 when it does not answer (/healthz answers 503).", nil, nil)
	redisStuck    = prometheus.NewDesc("visitors_redis_round_stuck", "1 while a round of counts is unanswered and being sent again with backoff: new keys and, in sync mode, visits fail meanwhile.", nil, nil)
	redisRounds   = prometheus.NewDesc("visitors_redis_rounds_total", "Rounds of counts sent to Redis, by result: ok (answered) or failed (an attempt that failed and is sent again).", []string{"result"}, nil)
	redisCommands = prometheus.NewDesc("visitors_redis_commands_total", "Scripts the flusher sent to Redis, retries included, by part: counts (one per group of slots a round touched) or uniques (likewise, for the unique visitors).", []string{"part"}, nil)
	redisKeys     = prometheus.NewDesc("visitors_redis_keys_sent_total", "Counters carried by the rounds of counts, retries included: divided by visitors_redis_commands_total{part=\"counts\"}, the keys per script.", nil, nil)
	redisSync     = prometheus.NewDesc("visitors_redis_sync_visits_total", "Sync durability: visits the rounds counted and answered.", nil, nil)
	redisReserves = prometheus.NewDesc("visitors_redis_hi_reservations_total", "Blocks of /hi numbers reserved from Redis with INCRBY (batch durability).", nil, nil)
	redisHiLeft   = prometheus.NewDesc("visitors_redis_hi_numbers_left", "/hi numbers left in the blocks this instance holds; at 0 the next /hi waits for Redis.", nil, nil)
	redisPending  = prometheus.NewDesc("visitors_redis_pending_visits", "Visits counted in memory and not yet sent to Redis (batch durability); they go with the next round.", nil, nil)
	redisPendKeys = prometheus.NewDesc("visitors_redis_pending_keys", "Counters waiting for the next round of counts.", nil, nil)
	redisHeld     = prometheus.NewDesc("visitors_redis_held_visits", "Visits sent and not confirmed while Redis does not answer; lost if the instance dies before it does.", nil, nil)
	redisPendUniq = prometheus.NewDesc("visitors_redis_pending_unique_visitors", "Unique visitors added in memory and not yet answered by Redis.", nil, nil)
	redisDropUniq = prometheus.NewDesc("visitors_redis_unique_visitors_dropped_total", "New unique visitors not counted because as many as the bound were already waiting in memory for Redis to answer (they count if they come back once it does).", nil, nil)
	redisSince    = prometheus.NewDesc("visitors_redis_seconds_since_round", "Seconds since Redis last answered a round of counts; grows while it does not answer (or while nothing is counted).", nil, nil)
	redisErrors   = prometheus.NewDesc("visitors_redis_errors_total", "Calls to Redis that failed, by kind: round (a round of counts), uniques, seed (the day's unique-visitor seed), read (a read a request waited for), admit (a new key), reserve (/hi numbers), ping (the check between rounds).", []string{"kind"}, nil)
)

// Describe sends the descriptions of the report's metrics.
func (c *reportCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{redisUp, redisStuck, redisRounds, redisCommands, redisKeys, redisSync, redisReserves,
		redisHiLeft, redisPending, redisPendKeys, redisHeld, redisPendUniq, redisDropUniq, redisSince, redisErrors} {
		ch <- d
	}
}

// Collect reads the report once and sends its metrics.
func (c *reportCollector) Collect(ch chan<- prometheus.Metric) {
	r := c.report()
	b := func(v bool) float64 {
		if v {
			return 1
		}
		return 0
	}
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	counter := func(d *prometheus.Desc, v uint64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v), labels...)
	}
	gauge(redisUp, b(r.Up))
	gauge(redisStuck, b(r.Stuck))
	counter(redisRounds, r.Rounds, "ok")
	counter(redisRounds, r.RoundErrors, "failed")
	counter(redisCommands, r.Commands, "counts")
	counter(redisCommands, r.UniqueCommands, "uniques")
	counter(redisKeys, r.KeysSent)
	counter(redisSync, r.SyncVisits)
	counter(redisReserves, r.Reserves)
	gauge(redisHiLeft, float64(r.HiLeft))
	gauge(redisPending, float64(r.PendingVisits))
	gauge(redisPendKeys, float64(r.PendingKeys))
	gauge(redisHeld, float64(r.HeldVisits))
	gauge(redisPendUniq, float64(r.PendingUniques))
	counter(redisDropUniq, r.UniquesDropped)
	gauge(redisSince, r.SinceRound.Seconds())
	for i, n := range r.Errors {
		counter(redisErrors, n, ErrorKinds[i])
	}
}
