package app

import (
	"flag"
	"time"

	"github.com/rs/zerolog"

	"visitors/internal/bots"
	"visitors/internal/camo"
	"visitors/internal/client"
	"visitors/internal/store"
	"visitors/internal/unique"
	"visitors/internal/web"
)

// Fair is the configuration of the rules that keep the keyed counters
// fair (see docs/api.md, "What is counted").
type Fair struct {
	TrustedProxies    client.Proxies // whose X-Forwarded-For and Forwarded are believed
	CamoRanges        client.Ranges  // where GitHub's image proxy fetches from
	CamoKeyRate       client.Rate    // camo's counted visits per key; its burst is its count per period; 0: no limit
	ClientRate        client.Rate    // counted visits per client; 0: no limit
	ClientBurst       int            // visits a client may make at once
	ClientNewKeys     client.Rate    // new keys per client; 0: no limit
	RepeatWindow      time.Duration  // a visitor's repeat views of a key within it are not counted (refreshes); 0: all are
	Unique            bool           // count unique visitors
	CountBots         bool           // count crawlers' visits too
	MaxConns          int            // open public connections (and HTTP/2 requests in flight); past it they wait in the accept queue (503); 0: no limit
	MaxConnsPerClient int            // open public connections (and HTTP/2 requests in flight) per client address; past it 429; 0: no limit
}

// flags defines the flags of f on fs, with their defaults.
func (f *Fair) flags(fs *flag.FlagSet) {
	f.ClientRate = client.Rate{Events: 10, Per: time.Second}
	f.ClientNewKeys = client.Rate{Events: 100, Per: time.Hour}
	f.CamoKeyRate = DefaultCamoKeyRate
	if err := f.CamoRanges.Set(camo.DefaultRanges()); err != nil {
		panic(err) // the data file is checked by internal/camo's tests
	}
	fs.Var(&f.TrustedProxies, "trusted-proxies", "comma-separated `CIDR` ranges of reverse proxies whose X-Forwarded-For and Forwarded headers name the client (default: none, the peer is the client)")
	fs.Var(&f.CamoRanges, "camo-ranges", "comma-separated `CIDR` ranges from which a request with GitHub's image proxy's User-Agent (github-camo) is camo: exempt from -client-rate and -repeat-window, bounded by -camo-key-rate; from elsewhere that User-Agent is an ordinary client's")
	fs.Var(&f.CamoKeyRate, "camo-key-rate", "counted visits per counter from camo, as N/s, N/m, N/h or N/d, with a burst of N; past it a visit is answered, not counted (0: no limit)")
	fs.Var(&f.ClientRate, "client-rate", "counted visits per client (IP, IPv6 /64) as N/s, N/m, N/h or N/d; past it a visit is answered, not counted (0: no limit)")
	fs.IntVar(&f.ClientBurst, "client-burst", 20, "visits a client may make at once before -client-rate applies")
	fs.Var(&f.ClientNewKeys, "client-new-keys", "new counters a client may create, as N/h and so on; past it a new counter gets 429 (0: no limit)")
	fs.DurationVar(&f.RepeatWindow, "repeat-window", DefaultRepeatWindow, "a visitor's repeat views of a counter within this long count once toward its total: a refresh (the same client address and User-Agent, the same counter, the same UTC day) is not counted (0: every view counts)")
	fs.BoolVar(&f.Unique, "unique", true, "count unique visitors per counter and UTC day")
	fs.BoolVar(&f.CountBots, "count-bots", false, "count the visits of crawlers, link-preview fetchers and HTTP libraries (curl, Go-http-client, …) too")
	fs.IntVar(&f.MaxConns, "max-conns", 10000, "most open public connections; more wait in the kernel's accept queue, and from 3/4 of it an idle keep-alive connection is closed after 2s; over HTTP/2 also the most requests in flight, past it 503 (0: no limit)")
	fs.IntVar(&f.MaxConnsPerClient, "max-conns-per-client", DefaultMaxConnsPerClient, "most open public connections from one client address (IPv6 /64; -trusted-proxies exempt); past it a connection is answered 429 and closed; over HTTP/2 also the most requests in flight from one address, past it 429 (0: no limit)")
}

// DefaultRepeatWindow is -repeat-window's default: a reader's reloads of
// a page within half an hour are one view, as the README promises
// ("refreshes are not counted").
const DefaultRepeatWindow = 30 * time.Minute

// DefaultCamoKeyRate is -camo-key-rate's default: 10 visits a second
// to one counter, after a burst of 600, far above what a README's views
// make, and a bound on what one person can make camo fetch.
var DefaultCamoKeyRate = client.Rate{Events: 600, Per: time.Minute}

// fairForms are the values Fair's flags take: no negative limit.
var fairForms = map[string]form{
	"camo-key-rate":        rateForm,
	"client-rate":          rateForm,
	"client-new-keys":      rateForm,
	"client-burst":         wholeAtLeast1,
	"repeat-window":        {"a duration such as 30m or 24h, 0 or more (0: every view counts)", atLeast(time.Duration(0))},
	"max-conns":            wholeNoLimit,
	"max-conns-per-client": wholeNoLimit,
}

// fairRules returns the web layer's rules for cfg, and a func that
// writes the unique visitors not yet written and must be called before
// the store closes. st is the store as opened: if it keeps sketches
// (store.Sketches), unique visitors survive a restart; if it keeps the
// unique visitors itself (store.Uniques), every instance on it shares
// them.
func fairRules(cfg Config, st store.Store, log zerolog.Logger) (web.Rules, func() error, error) {
	f := cfg.Fair
	r := web.Rules{Trusted: &f.TrustedProxies, NewKeys: f.ClientNewKeys}
	if !f.CountBots {
		r.Bots = bots.New()
	}
	if !f.ClientRate.Off() || !f.ClientNewKeys.Off() {
		r.Limiter = client.NewLimiter(client.LimiterOptions{Visits: f.ClientRate, Burst: f.ClientBurst, NewKeys: f.ClientNewKeys})
	}
	if !f.CamoRanges.Empty() {
		r.Camo = &f.CamoRanges
		if !f.CamoKeyRate.Off() {
			r.CamoKeys = client.NewLimiter(client.LimiterOptions{Visits: f.CamoKeyRate, Burst: max(1, int(f.CamoKeyRate.Events))})
		}
	}
	if f.RepeatWindow > 0 {
		r.Repeats = unique.NewRepeats(f.RepeatWindow, 0)
	}
	o := unique.Options{Log: log} // written every second: a crash forgets at most the last second's new visitors
	if cfg.Store == StoreEmbedded {
		o.Dir = cfg.Data
	}
	if sk, ok := st.(store.Sketches); ok {
		o.Store = sk
	}
	if sh, ok := st.(store.Uniques); ok { // Redis: one count for every instance
		o.Shared = sh
	}
	if !f.Unique {
		o = unique.Options{Off: true, Log: log}
	}
	u, err := unique.New(o)
	if err != nil {
		return r, nil, err
	}
	r.Uniques = u
	return r, u.Close, nil
}
