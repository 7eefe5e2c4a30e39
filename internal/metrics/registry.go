package metrics

import (
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"visitors/internal/buildinfo"
)

// NewRegistry returns a registry that holds the Go runtime and process
// collectors, visitors_build_info, and cs.
func NewRegistry(cs ...prometheus.Collector) (*prometheus.Registry, error) {
	reg := prometheus.NewRegistry()
	cs = append([]prometheus.Collector{
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		buildInfo(buildinfo.Read()),
	}, cs...)
	for _, c := range cs {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return reg, nil
}

// Handler returns the /metrics handler of reg, in the Prometheus text
// format (or OpenMetrics, when the scraper asks for it).
func Handler(reg *prometheus.Registry) http.Handler {
	return promhttp.HandlerFor(reg, promhttp.HandlerOpts{Registry: reg, EnableOpenMetrics: true})
}

// buildInfo returns the visitors_build_info gauge: 1, with the version,
// the Go version and the VCS revision the binary was built from, as
// visitors -version prints them ("unknown" when nothing stamped it).
func buildInfo(bi buildinfo.Info) prometheus.Collector {
	version, goVersion, revision := bi.Version, bi.GoVersion, bi.Revision
	g := prometheus.NewGauge(prometheus.GaugeOpts{
		Name:        "visitors_build_info",
		Help:        "Always 1; the labels say what was built: the module version, the Go version and the VCS revision.",
		ConstLabels: prometheus.Labels{"version": version, "goversion": goVersion, "revision": revision},
	})
	g.Set(1)
	return g
}

// Log returns the collectors of the log sink's counters.
func Log(written, dropped func() uint64) []prometheus.Collector {
	return []prometheus.Collector{
		counterFunc("visitors_log_lines_written_total", "Log lines written to the log destination.", written),
		counterFunc("visitors_log_lines_dropped_total", "Log lines dropped because the log destination was slower than the traffic.", dropped),
	}
}

// Connections returns the collectors of the public listener's
// connections: how many are open, and how many were refused by
// -max-conns-per-client.
func Connections(open func() float64, refused func() uint64) []prometheus.Collector {
	return []prometheus.Collector{
		gaugeFunc("visitors_connections_open", "Public connections open now.", open),
		counterFunc("visitors_connections_refused_total", "Public connections answered 429 and closed because their client address held -max-conns-per-client already.", refused),
	}
}

// UntrustedForwarded returns the collector of the requests that carried
// X-Forwarded-For or Forwarded from a peer not in -trusted-proxies.
func UntrustedForwarded(n func() uint64) prometheus.Collector {
	return counterFunc("visitors_untrusted_forwarded_requests_total", "Requests that carried X-Forwarded-For or Forwarded from a peer not in -trusted-proxies: the header was ignored, and the peer taken for the client.", n)
}

func counterFunc(name, help string, f func() uint64) prometheus.Collector {
	return prometheus.NewCounterFunc(prometheus.CounterOpts{Name: name, Help: help}, func() float64 { return float64(f()) })
}

func gaugeFunc(name, help string, f func() float64) prometheus.Collector {
	return prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: name, Help: help}, f)
}

// StoreSource says where the metrics every store has are read from, at
// scrape time. A nil func leaves its metrics out. A backend's own
// metrics are its own collectors (boltstore's and redisstore's
// Collectors).
type StoreSource struct {
	MaxKeys int          // the most keys held (-max-keys); 0, no limit, is not exported
	Keys    func() int   // distinct keys held
	Health  func() error // nil when the store can keep its promises
}

// Store returns the store's metrics, read from src at scrape time. Keys
// created count from the keys held at this call: a store never forgets a
// key while it runs.
func Store(src StoreSource) []prometheus.Collector {
	var cs []prometheus.Collector
	if src.Keys != nil {
		start := src.Keys()
		cs = append(cs,
			gaugeFunc("visitors_store_keys", "Distinct keys (names and counter keys) the store holds.", func() float64 { return float64(src.Keys()) }),
			counterFunc("visitors_store_keys_created_total", "Keys created since the service started.", func() uint64 { return uint64(max(src.Keys()-start, 0)) }),
		)
	}
	if src.MaxKeys > 0 {
		cs = append(cs, gaugeFunc("visitors_store_max_keys", "The most distinct keys the store holds (-max-keys); a new key past it is refused.", func() float64 { return float64(src.MaxKeys) }))
	}
	if src.Health != nil {
		cs = append(cs, gaugeFunc("visitors_store_healthy", "1 when the store can keep its promises (counts reach the disk), 0 when /healthz answers 503.", func() float64 {
			if src.Health() != nil {
				return 0
			}
			return 1
		}))
	}
	return cs
}

// FlightRecorder returns the counters of flight-recorder snapshots,
// written for slow requests and on request, and whether it is armed.
func FlightRecorder(snapshots func() (slow, requested uint64), armed func() bool) []prometheus.Collector {
	const name, help = "visitors_flight_recorder_snapshots_total", "Execution-trace snapshots the flight recorder wrote, by trigger: a slow request, or GET /debug/flightrecorder."
	return []prometheus.Collector{
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: name, Help: help, ConstLabels: prometheus.Labels{"trigger": "slow_request"}},
			func() float64 { s, _ := snapshots(); return float64(s) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: name, Help: help, ConstLabels: prometheus.Labels{"trigger": "on_demand"}},
			func() float64 { _, r := snapshots(); return float64(r) }),
		gaugeFunc("visitors_flight_recorder_armed", "1 while the flight recorder is armed (keeps the execution trace, and slow requests write snapshots): -flight-recorder, or POST /debug/flightrecorder/arm?for= on the admin listener; 0 when disarmed.", func() float64 {
			if armed() {
				return 1
			}
			return 0
		}),
	}
}
