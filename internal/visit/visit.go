// Package visit decides and records a visit to a counter: the fairness
// rules (crawlers, the per-client limit on visits, GitHub's image proxy,
// repeat views, the per-client budget of new keys), the count in the
// store and the unique visitors. It holds no HTTP: internal/web calls it
// for /hi, /hello and /counter/ with the client already identified, and
// internal/api spends the same budget of new keys for open creation, so
// that a new fairness rule has one home whoever asks.
package visit

import (
	"context"
	"errors"
	"net/netip"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"

	"visitors/internal/bots"
	"visitors/internal/camo"
	"visitors/internal/client"
	"visitors/internal/store"
	"visitors/internal/unique"
)

// Rules are the fairness rules of the keyed counters (/counter/ and
// /hello). The zero Rules count every visit, but for unique visitors,
// which a [Recorder] always counts.
type Rules struct {
	// Trusted are the reverse proxies whose forwarding headers name the
	// client: the HTTP layers read it to find [Visit.Client]. nil trusts
	// nobody.
	Trusted *client.Proxies
	// Limiter limits counted visits and new keys per client; nil limits
	// nothing.
	Limiter *client.Limiter
	// NewKeys is the limiter's new-key rate, quoted by [NewKeyError].
	NewKeys client.Rate
	// Bots tells crawlers; nil knows none.
	Bots *bots.Detector
	// Uniques counts unique visitors; nil means one in memory only.
	Uniques *unique.Counter
	// Repeats, if set, keeps a visitor's repeat views of a key within its
	// window out of the total.
	Repeats *unique.Repeats
	// Camo are the address ranges of GitHub's image proxy: only a client
	// in them with camo's User-Agent is treated as camo. nil holds none.
	Camo *client.Ranges
	// CamoKeys bounds camo's counted visits per key (VisitKey); nil
	// bounds nothing.
	CamoKeys *client.Limiter
}

// Budget returns the rules' budget of new keys per client.
func (r *Rules) Budget() Budget { return Budget{Limiter: r.Limiter, Rate: r.NewKeys} }

// Reason says why a visit was answered but not counted. It is the one
// list of reasons: [Recorder.Record] returns one in
// [Outcome.NotCounted], and internal/metrics exports each as a reason
// label of visitors_visits_not_counted_total, named by [Reason.String].
type Reason uint8

// The reasons a visit is not counted; None, the zero Reason, is none:
// the visit counted, or was a read. They run from 1 to [NumReasons],
// so that an array of [NumReasons] indexed by a reason less one holds
// one entry for each.
const (
	None        Reason = iota
	RateLimited        // too many visits, or new keys, from one client
	Repeat             // the same visitor again, within the repeat window
	Bot                // a crawler's User-Agent
	Locked             // the counter is locked by its owner
	Full               // a new key, and the store holds its most keys (-max-keys)
	Invalid            // an invalid request to a counter (a 4xx): told by the HTTP layer, never by Record
	StoreError         // the store failed to count it (a 503)
	Saturated          // the counter is at its bound: 2^62 in all or 2^39 today
	numReasons
)

// NumReasons is the number of reasons a visit is not counted, None
// aside.
const NumReasons = int(numReasons) - 1

var reasonNames = [numReasons]string{"none", "rate_limited", "repeat", "bot", "locked", "full", "invalid", "error", "saturated"}

// String returns r's name: the value of its reason label in the metrics.
func (r Reason) String() string {
	if r >= numReasons {
		return "Reason(" + strconv.Itoa(int(r)) + ")"
	}
	return reasonNames[r]
}

// Visit is one request for a counter, as the counting path sees it.
type Visit struct {
	Key       []byte     // the key; unused with Global
	Global    bool       // the global counter of /hi
	Count     bool       // false: the counts are read, not changed
	Unique    bool       // today's unique visitors are wanted
	Listed    bool       // the key may be among the most visited (/counter/ keys; /hello names never are)
	Client    netip.Addr // the client's address (client.Address); unused with Global or without Count
	UserAgent string     // the client's User-Agent; unused with Global or without Count
}

// Outcome is what [Recorder.Record] decided and counted.
type Outcome struct {
	Counts  store.Counts // the key's counts
	Number  uint64       // the global counter's number
	Unique  uint64       // the key's unique visitors today, if asked
	Counted bool         // a visit was counted
	Refused bool         // a rule refused to count it: answered with the counts as they are
	// NotCounted is why a visit to count was not counted, error or not:
	// what the metrics are told. None for a visit counted, or a read.
	NotCounted Reason
}

// NewKeyError is the error of a client past its budget of new keys.
type NewKeyError struct {
	Rate       client.Rate   // the budget, quoted by the message
	RetryAfter time.Duration // until the client may make one
}

// Error returns the message for the client: the one message of a new
// key refused, whether a badge or open creation made it.
func (e *NewKeyError) Error() string {
	return "too many new counters from your address: at most " + e.Rate.String() + " (-client-new-keys); try again later"
}

// Budget is a client's budget of new keys: the new-key bucket of a
// limiter, shared by the badges and open creation. The zero Budget
// allows everything. It may be used concurrently.
type Budget struct {
	Limiter *client.Limiter
	Rate    client.Rate // the limiter's new-key rate, for the message
}

// Take takes a token for a key id is about to make at now, or returns a
// [*NewKeyError] if id has none. A caller that made no key after all
// gives it back with [Budget.Return], so that of concurrent first
// visits by one client, no more make keys than its budget holds.
func (b Budget) Take(id netip.Addr, now time.Time) error {
	if ok, retry := b.Limiter.Created(id, now); !ok {
		return &NewKeyError{Rate: b.Rate, RetryAfter: retry}
	}
	return nil
}

// Return gives back the token Take took at now for a key id did not
// make.
func (b Budget) Return(id netip.Addr, now time.Time) { b.Limiter.Uncreated(id, now) }

// refused returns the error of id's new key refused at now.
func (b Budget) refused(id netip.Addr, now time.Time) error {
	return &NewKeyError{Rate: b.Rate, RetryAfter: b.Limiter.CreateRefused(id, now)}
}

// Recorder decides and records visits. Its fields are set before its
// first use and never after; then it may be used concurrently.
type Recorder struct {
	// Store counts the visits. Required.
	Store store.Counter
	// Rules decide which visits to the keyed counters count.
	Rules Rules
	// Uniques counts unique visitors. Required.
	Uniques *unique.Counter
	// Now is the clock. Required.
	Now func() time.Time
	// Observe, if set, is told of every visit counted to a listed key,
	// with its new counts (the top list).
	Observe func(key []byte, c store.Counts)
	// Log receives the line of /hi's counter running out.
	Log zerolog.Logger

	hiExhausted atomic.Bool // the last /hi was refused with store.ErrHiExhausted
}

// Record is the one place where a visit is decided and counted: /hi,
// /hello and /counter/ all come here. It applies the rules in order —
// bots, the per-client rate (GitHub's image proxy exempt, and bounded
// per key instead), repeat views, the per-client budget of new keys —
// then counts in the store, adds the visitor to the key's unique
// visitors (GitHub's image proxy excepted). A visit a rule refuses is
// still answered, with the counts as they are (Outcome.Refused). A key
// its owner locked (the store answers Counts.Locked), or one at its
// bound (Counts.Saturated), counts nothing: the visit is answered as
// refused, adds no unique visitor and is not observed. The global
// counter of /hi counts every visit until it has handed out
// store.MaxHits; then it returns store.ErrHiExhausted, and
// [Recorder.HiExhausted] says so until a /hi counts again.
//
// The error is a [*NewKeyError], or the store's; Outcome.NotCounted says
// why the visit did not count, with an error too.
func (r *Recorder) Record(ctx context.Context, v *Visit) (Outcome, error) {
	var o Outcome
	if v.Global {
		return r.hit(ctx)
	}
	now := r.Now()
	if !v.Count {
		return r.read(ctx, v, now, o)
	}
	// camo's User-Agent is on the bot list, and anyone may send it: from
	// camo's ranges it is camo, from anywhere else an ordinary client.
	camoUA := camo.IsUserAgent(v.UserAgent)
	if !camoUA && r.Rules.Bots != nil && r.Rules.Bots.Is(v.UserAgent) {
		return r.refuse(ctx, v, now, Bot)
	}
	id := client.Group(v.Client)
	fromCamo := camoUA && r.Rules.Camo.Contains(v.Client)
	if fromCamo && !r.Rules.CamoKeys.VisitKey(v.Key, now) {
		return r.refuse(ctx, v, now, RateLimited)
	}
	allowed, mayCreate := r.Rules.Limiter.Visit(id, now, fromCamo)
	if !allowed {
		return r.refuse(ctx, v, now, RateLimited)
	}
	var visitor, pair uint64
	seen := false // this visit's view is recorded in Repeats
	if !fromCamo {
		visitor = r.Uniques.Hash(id, v.UserAgent, now)
		if r.Rules.Repeats != nil {
			pair = r.Uniques.Pair(visitor, v.Key, now)
			if r.Rules.Repeats.Seen(pair, now) {
				return r.refuse(ctx, v, now, Repeat)
			}
			seen = true
		}
	}
	c, err := r.count(ctx, v.Key, id, now, mayCreate)
	if err != nil {
		if seen { // refused: its retry is no repeat of a view that counted
			r.Rules.Repeats.Unsee(pair, now)
		}
		o.NotCounted = StoreError
		var nk *NewKeyError
		switch {
		case errors.As(err, &nk):
			o.NotCounted = RateLimited
		case errors.Is(err, store.ErrTooManyKeys):
			o.NotCounted = Full
		}
		return o, err
	}
	o.Counts = c
	if c.Locked || c.Saturated { // frozen by its owner, or at a bound: answered with its counts, not counted
		o.Refused, o.NotCounted = true, Saturated
		if c.Locked {
			o.NotCounted = Locked
		}
	} else {
		o.Counted = true
		if v.Listed && r.Observe != nil {
			r.Observe(v.Key, c)
		}
		if !fromCamo {
			r.Uniques.Add(v.Key, visitor, now)
		}
	}
	if v.Unique {
		o.Unique = r.Uniques.Today(v.Key, now)
	}
	return o, nil
}

// count counts a visit to key, making key only if client id may make a
// new key now (mayCreate: the limiter saw a token). A key that exists is
// counted in one call to the store (one round trip on Redis), and takes
// no token. Only when the store answers that key is new is a token
// taken, and the store asked again to make it; the token is given back
// if another visit made the key meanwhile. So concurrent first visits
// never make more keys than the budget, and a client's visits to keys
// that exist never hold the token its one new key needs (found by the
// review of 2026-11-25, when every visit took a token and gave it back).
func (r *Recorder) count(ctx context.Context, key []byte, id netip.Addr, now time.Time, mayCreate bool) (store.Counts, error) {
	c, _, err := r.Store.Visit(ctx, key, false)
	if !errors.Is(err, store.ErrNewKey) {
		return c, err
	}
	b := r.Rules.Budget()
	if !mayCreate || b.Take(id, now) != nil {
		return c, b.refused(id, now)
	}
	c, made, err := r.Store.Visit(ctx, key, true)
	if !made {
		b.Return(id, now)
	}
	return c, err
}

// hit counts a visit to the global counter.
func (r *Recorder) hit(ctx context.Context) (Outcome, error) {
	n, err := r.Store.Hit(ctx)
	if errors.Is(err, store.ErrHiExhausted) && !r.hiExhausted.Swap(true) {
		r.Log.Error().Err(err).Msg("/hi answers 503 from now on")
	}
	if err != nil {
		return Outcome{NotCounted: StoreError}, err
	}
	if r.hiExhausted.Load() { // an import of a lower /hi cannot do it; a replace of the store can
		r.hiExhausted.Store(false)
	}
	return Outcome{Number: n, Counted: true}, nil
}

// HiExhausted returns store.ErrHiExhausted while /hi is refused because
// its counter has handed out store.MaxHits (the last /hi was refused so,
// and none has counted since), and nil otherwise, for /healthz.
func (r *Recorder) HiExhausted() error {
	if r.hiExhausted.Load() {
		return store.ErrHiExhausted
	}
	return nil
}

// read returns v's counts without counting a visit.
func (r *Recorder) read(ctx context.Context, v *Visit, now time.Time, o Outcome) (Outcome, error) {
	c, err := r.Store.Get(ctx, v.Key)
	if err != nil {
		return o, err
	}
	o.Counts = c
	if v.Unique {
		o.Unique = r.Uniques.Today(v.Key, now)
	}
	return o, nil
}

// refuse answers a visit a rule does not count, for why.
func (r *Recorder) refuse(ctx context.Context, v *Visit, now time.Time, why Reason) (Outcome, error) {
	return r.read(ctx, v, now, Outcome{Refused: true, NotCounted: why})
}
