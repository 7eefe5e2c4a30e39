package dashboard

import (
	"context"
	"sync"
	"time"

	"visitors/internal/store"
)

// DefaultRankTTL is how long a ranking of every key in a scope (the
// overview sorted by total or today) is reused: reading 1,000,000 keys
// takes about a second (BenchmarkOverview), so it is done at most once
// per scope and order in this time, however many owners look.
const DefaultRankTTL = 10 * time.Second

// maxRankings is the most rankings held at once; each holds at most
// MaxRankedPages*PageSize entries.
const maxRankings = 16

// rankKey names one ranking: a scope and an order.
type rankKey struct {
	prefix string
	by     Sort
}

// ranking is one ranking, being made (done open) or made.
type ranking struct {
	done chan struct{} // closed once es and err are set
	at   time.Time
	es   []store.Entry
	err  error
}

// rankings reuses rankings for ttl, and makes one ranking at a time per
// key: callers asking while it is made wait for it. It is safe for
// concurrent use.
type rankings struct {
	ttl time.Duration // <= 0: nothing reused
	mu  sync.Mutex    // guards m
	m   map[rankKey]*ranking
}

// get returns the ranking of k, made by fill if none younger than ttl
// at now is held or being made.
func (r *rankings) get(ctx context.Context, k rankKey, now time.Time, fill func(context.Context) ([]store.Entry, error)) ([]store.Entry, time.Time, error) {
	if r.ttl <= 0 {
		es, err := fill(ctx)
		return es, now, err
	}
	r.mu.Lock()
	rk := r.m[k]
	if rk != nil {
		select {
		case <-rk.done:
			if rk.err != nil || now.Sub(rk.at) >= r.ttl || now.Before(rk.at) {
				rk = nil
			}
		default: // being made: wait for it
		}
	}
	mine := rk == nil
	if mine {
		if len(r.m) >= maxRankings {
			r.evict()
		}
		rk = &ranking{done: make(chan struct{}), at: now}
		r.m[k] = rk
	}
	r.mu.Unlock()
	if mine {
		// Not the caller's context: those who wait on it would fail with
		// a caller that went away.
		mctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
		rk.es, rk.err = fill(mctx)
		cancel()
		close(rk.done)
	}
	select {
	case <-rk.done:
		return rk.es, rk.at, rk.err
	case <-ctx.Done():
		return nil, now, ctx.Err()
	}
}

// evict drops the oldest made ranking. r.mu is held.
func (r *rankings) evict() {
	var oldest rankKey
	var at time.Time
	found := false
	for k, rk := range r.m {
		select {
		case <-rk.done:
		default:
			continue
		}
		if !found || rk.at.Before(at) {
			oldest, at, found = k, rk.at, true
		}
	}
	if found {
		delete(r.m, oldest)
	}
}
