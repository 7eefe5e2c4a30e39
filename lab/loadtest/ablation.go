package loadtest

import (
	"fmt"
	"io"
	"strings"
)

// A feature is one thing visitors does for a request that an ablation
// run turns off, alone, to see what it costs.
type feature struct {
	name string   // as the table names it
	kind string   // the server kind with this feature off and every other on
	off  []string // the flags that turn it off
	// query is the request's query parameter that asks for the feature
	// (the logo is asked for by the request, not configured); the
	// feature's server is asked without it.
	query string
}

// features are what an ablation run measures, in the order of its
// table. Each is on in "ablate-all", explicitly, whatever visitors'
// defaults are, so that a default changing does not change the run.
var features = []feature{
	{name: "flight recorder (armed)", kind: "ablate-fr", off: []string{"-flight-recorder=false"}},
	{name: "metrics", kind: "ablate-metrics", off: []string{"-metrics=false"}},
	{name: "per-client limiter (10/s, 100 new keys/h)", kind: "ablate-limiter", off: []string{"-client-rate", "0", "-client-new-keys", "0"}},
	{name: "unique visitors", kind: "ablate-unique", off: []string{"-unique=false"}},
	{name: "top list (-public-top)", kind: "ablate-top", off: []string{"-public-top=false"}},
	{name: "bot detection", kind: "ablate-bots", off: []string{"-count-bots"}},
	{name: "logo (?logo=github)", kind: "ablate-logo", query: "logo=github"},
}

// ablateAll are the flags of "ablate-all": every feature on.
var ablateAll = []string{"-flight-recorder=true", "-metrics=true", "-client-rate", "10/s", "-client-new-keys", "100/h", "-unique=true", "-public-top"}

// ablationKinds returns the server kinds of an ablation run: every
// feature on, each feature off in turn, and every feature off.
func ablationKinds() []string {
	k := []string{"ablate-all"}
	for _, f := range features {
		k = append(k, f.kind)
	}
	return append(k, "ablate-none")
}

// ablationArgs returns the flags and the path an ablation kind runs
// with, asked for base; ok is false if kind is not one.
func ablationArgs(kind, base string) (flags []string, path string, ok bool) {
	flags = append([]string(nil), ablateAll...)
	queries := []string{}
	for _, f := range features {
		if f.query != "" {
			queries = append(queries, f.query)
		}
	}
	switch kind {
	case "ablate-all":
	case "ablate-none":
		for _, f := range features {
			flags = append(flags, f.off...)
		}
		queries = nil
	default:
		ok := false
		for _, f := range features {
			if f.kind == kind {
				flags, ok = append(flags, f.off...), true
				if f.query != "" {
					queries = without(queries, f.query)
				}
			}
		}
		if !ok {
			return nil, "", false
		}
	}
	return flags, withQuery(base, queries), true
}

func without(s []string, x string) []string {
	var out []string
	for _, v := range s {
		if v != x {
			out = append(out, v)
		}
	}
	return out
}

// withQuery adds the query parameters qs to path.
func withQuery(path string, qs []string) string {
	if len(qs) == 0 {
		return path
	}
	sep := "?"
	if strings.Contains(path, "?") {
		sep = "&"
	}
	return path + sep + strings.Join(qs, "&")
}

// WriteAblation writes what each feature costs a request: the CPU time
// per request of the server with every feature on, less that of the
// server with that one off, in ns and as a share of the first; and the
// same from requests/s. CPU per request is what the server spends
// whatever its neighbours on a shared machine leave it, so it is the
// column to quote; requests/s shows whether the two agree.
func WriteAblation(w io.Writer, c Config, results []Result) error {
	byName := map[string]Result{}
	for _, r := range results {
		byName[r.Server] = r
	}
	all, ok := byName["ablate-all"]
	if !ok {
		return fmt.Errorf("ablation: no ablate-all server among the results")
	}
	allCPU := all.MedianCPU()
	allRPS, _, _ := all.Median()
	var b strings.Builder
	fmt.Fprintf(&b, "\nWhat each feature costs a request (every feature on: %.2f µs of CPU, %.0f req/s; medians of %d rounds)\n\n", us(allCPU), allRPS, c.Rounds)
	b.WriteString("| feature | CPU µs/req without it | cost, ns/req | cost, % of all on | req/s without it | cost from req/s |\n")
	b.WriteString("| --- | ---: | ---: | ---: | ---: | ---: |\n")
	row := func(name string, r Result) {
		cpu := r.MedianCPU()
		rps, _, _ := r.Median()
		cost := allCPU - cpu
		fmt.Fprintf(&b, "| %s | %.2f | %d | %s | %.0f | %s |\n", name, us(cpu), cost.Nanoseconds(), pct(float64(cost), float64(allCPU)), rps, pct(rps-allRPS, rps))
	}
	for _, f := range features {
		if r, ok := byName[f.kind]; ok {
			row(f.name, r)
		}
	}
	if r, ok := byName["ablate-none"]; ok {
		row("all of the above", r)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// pct formats part/whole as a signed percentage; "" if whole is 0.
func pct(part, whole float64) string {
	if whole == 0 {
		return ""
	}
	return fmt.Sprintf("%+.1f%%", 100*part/whole)
}
