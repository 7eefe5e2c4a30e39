package redisstore

import (
	"fmt"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"visitors/internal/store"
	"visitors/internal/store/redisstore/redistest"
	"visitors/internal/store/storetest"
)

// TestRedisExportsTheReport: every figure of a Report is exported
// under its name, labels and type, from one read of the report per
// scrape.
func TestRedisExportsTheReport(t *testing.T) {
	reads := 0
	reg := prometheus.NewRegistry()
	reg.MustRegister(&reportCollector{report: func() Report {
		reads++
		r := Report{
			Stats: Stats{Rounds: 7, RoundErrors: 2, Commands: 11, SyncVisits: 3, HeldVisits: 6},
			Up:    true, UniqueCommands: 5, KeysSent: 13,
			Reserves: 1, HiLeft: 999, PendingVisits: 4, PendingKeys: 2, PendingUniques: 8, UniquesDropped: 12,
			SinceRound: 1500 * time.Millisecond,
		}
		r.Errors[errRound], r.Errors[errPing] = 2, 9
		return r
	}})
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	if reads != 1 {
		t.Errorf("one scrape read the report %d times, want once", reads)
	}
	got := map[string]string{}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			name := mf.GetName()
			for _, l := range m.GetLabel() {
				name += fmt.Sprintf("{%s=%s}", l.GetName(), l.GetValue())
			}
			switch mf.GetType() {
			case dto.MetricType_COUNTER:
				got[name] = fmt.Sprint("counter ", m.GetCounter().GetValue())
			case dto.MetricType_GAUGE:
				got[name] = fmt.Sprint("gauge ", m.GetGauge().GetValue())
			default:
				got[name] = mf.GetType().String()
			}
		}
	}
	tests := []struct{ name, want string }{
		{"visitors_redis_up", "gauge 1"},
		{"visitors_redis_round_stuck", "gauge 0"},
		{"visitors_redis_rounds_total{result=ok}", "counter 7"},
		{"visitors_redis_rounds_total{result=failed}", "counter 2"},
		{"visitors_redis_commands_total{part=counts}", "counter 11"},
		{"visitors_redis_commands_total{part=uniques}", "counter 5"},
		{"visitors_redis_keys_sent_total", "counter 13"},
		{"visitors_redis_sync_visits_total", "counter 3"},
		{"visitors_redis_hi_reservations_total", "counter 1"},
		{"visitors_redis_hi_numbers_left", "gauge 999"},
		{"visitors_redis_pending_visits", "gauge 4"},
		{"visitors_redis_pending_keys", "gauge 2"},
		{"visitors_redis_held_visits", "gauge 6"},
		{"visitors_redis_pending_unique_visitors", "gauge 8"},
		{"visitors_redis_unique_visitors_dropped_total", "counter 12"},
		{"visitors_redis_seconds_since_round", "gauge 1.5"},
		{"visitors_redis_errors_total{kind=round}", "counter 2"},
		{"visitors_redis_errors_total{kind=ping}", "counter 9"},
		{"visitors_redis_errors_total{kind=uniques}", "counter 0"}, // every kind, even at 0
		{"visitors_redis_errors_total{kind=seed}", "counter 0"},
		{"visitors_redis_errors_total{kind=read}", "counter 0"},
		{"visitors_redis_errors_total{kind=admit}", "counter 0"},
		{"visitors_redis_errors_total{kind=reserve}", "counter 0"},
	}
	for _, tt := range tests {
		if got[tt.name] != tt.want {
			t.Errorf("%s = %q, want %q", tt.name, got[tt.name], tt.want)
		}
	}
	if len(got) != len(tests) {
		t.Errorf("%d samples exported, want %d: %v", len(got), len(tests), got)
	}
}

// TestRoundDurationsByPart: each send is observed under its part.
func TestRoundDurationsByPart(t *testing.T) {
	s := &Store{roundDurations: newRoundDurations()}
	s.observe(Counts, 3*time.Millisecond, nil)
	s.observe(Counts, time.Second, fmt.Errorf("timeout"))
	s.observe(Uniques, time.Millisecond, nil)
	for part, want := range map[string]uint64{"counts": 2, "uniques": 1} {
		var m dto.Metric
		if err := s.roundDurations.WithLabelValues(part).(prometheus.Histogram).Write(&m); err != nil {
			t.Fatal(err)
		}
		if got := m.GetHistogram().GetSampleCount(); got != want {
			t.Errorf("part %s: %d observed, want %d", part, got, want)
		}
	}
}

// TestStatsCountSyncVisits: Stats counts the Sync visits the rounds
// answered, and the rounds.
func TestStatsCountSyncVisits(t *testing.T) {
	st := instance(t, "standalone", prefixOf(t.TempDir()), store.Sync)
	m := musts{t}
	for _, k := range []string{"a", "b", "a"} {
		m.c(storetest.Incr(t.Context(), st, []byte(k)))
	}
	if got := st.Stats(); got.SyncVisits != 3 || got.Rounds < 1 || got.Rounds > 3 || got.RoundErrors != 0 || got.HeldVisits != 0 {
		t.Errorf("Stats after three sync visits = %+v, want 3 sync visits in 1 to 3 rounds, no error, none held", got)
	}
}

// TestReportSaysWhetherRedisIsUp: Report's Up is true while Redis
// answers, and false once the check between rounds failed. Mutation
// survivor stats.go:74:30: with `Health() == nil` negated, Up said the
// opposite.
func TestReportSaysWhetherRedisIsUp(t *testing.T) {
	rs := redistest.StartTest(t)
	st, err := Open(Options{URL: rs.URL(), FlushInterval: 20 * time.Millisecond, Timeout: 200 * time.Millisecond, CloseTimeout: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if r := st.Report(); !r.Up {
		t.Errorf("Report().Up = false while Redis answers")
	}
	rs.Kill()
	waitFor(t, "the check between rounds to fail", func() bool { return st.Health() != nil })
	if r := st.Report(); r.Up {
		t.Errorf("Report().Up = true while Redis is down")
	}
}

// TestReportSinceRoundAndHiLeft: Report's SinceRound is 0 before the
// first round and then the time since the last one; HiLeft is what is
// left of the block in hand, with no spare block before one is reserved
// ahead. Mutation survivors stats.go:81:38 (with `t != 0` negated,
// SinceRound was 0 after a round) and 101:16 (with `spareEnd != 0`
// negated, HiLeft counted a spare block that was not there).
func TestReportSinceRoundAndHiLeft(t *testing.T) {
	st := openStandalone(t, Options{FlushInterval: time.Hour, HiBlock: 100})
	if d := st.Report().SinceRound; d != 0 {
		t.Errorf("SinceRound before any round = %v, want 0", d)
	}
	if _, err := st.Hit(t.Context()); err != nil {
		t.Fatal(err)
	}
	if _, err := storetest.Incr(t.Context(), st, []byte("k")); err != nil {
		t.Fatal(err)
	}
	flushed(t, st)
	r := st.Report()
	if r.SinceRound <= 0 || r.SinceRound > time.Minute {
		t.Errorf("SinceRound after a round = %v, want the time since it", r.SinceRound)
	}
	if r.HiLeft != 99 {
		t.Errorf("HiLeft after one /hi of a block of 100 = %d, want 99", r.HiLeft)
	}
}
