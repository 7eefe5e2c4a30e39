package dashboard

import (
	"container/heap"
	"context"
	"fmt"
	"html/template"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"visitors/internal/httperr"
	"visitors/internal/store"
)

// Overview limits.
const (
	// PageSize is how many counters a page of the overview shows.
	PageSize = 50
	// MaxRankedPages is how deep the pages sorted by a count go: a
	// ranking keeps (page+1)*PageSize counters while it reads every key
	// in scope.
	MaxRankedPages = 200
	// SparkDays is how many days a sparkline shows.
	SparkDays = 30
)

// Sort orders the overview.
type Sort string

// The overview's orders.
const (
	ByName  Sort = "name"  // key order, paged by cursor: as fast for 1M keys as for 10
	ByTotal Sort = "total" // largest total first: reads every key in scope
	ByToday Sort = "today" // most visits today first: reads every key in scope
)

// Row is one counter of the overview.
type Row struct {
	Key    string
	URL    string
	Total  uint64
	Today  uint64
	Unique uint64
	Locked bool
	Spark  template.HTML
}

// Overview is the overview page's own data.
type Overview struct {
	Rows      []Row
	Sort      Sort
	Prefix    string
	Scope     string // the token's prefix: what it may see
	Exact     bool   // the token's one key
	Uniques   bool
	Next      string // the next page's URL, "" for none
	Prev      string
	Page      int
	BackupOne bool   // a backup token: export only
	RankedAt  string // when the ranking of a sort by count was made
}

// overview serves GET /dashboard: the counters the token may see.
func (h *Handler) overview(rq *request) {
	q, err := url.ParseQuery(rq.r.URL.RawQuery)
	if err != nil {
		h.fail(rq.w, rq.r, rq, &httperr.HTTPError{Code: http.StatusBadRequest, Msg: "the query could not be read"})
		return
	}
	o := Overview{Sort: ByName, Prefix: q.Get("prefix"), Scope: rq.who.Prefix, Exact: rq.who.Exact, Uniques: h.c.Uniques != nil}
	d := pageData{Title: "Counters", Body: &o}
	d.set(rq)
	if rq.who.Backup {
		o.BackupOne = true
		h.render(rq.w, http.StatusOK, "overview", d)
		return
	}
	switch s := Sort(q.Get("sort")); s {
	case "", ByName:
	case ByTotal, ByToday:
		o.Sort = s
	default:
		h.fail(rq.w, rq.r, rq, &httperr.HTTPError{Code: http.StatusBadRequest, Msg: "sort: want name, total or today"})
		return
	}
	if !store.ValidKey([]byte(o.Prefix)) {
		h.fail(rq.w, rq.r, rq, &httperr.HTTPError{Code: http.StatusBadRequest, Msg: fmt.Sprintf("prefix: at most %d bytes of valid UTF-8", store.MaxKeyBytes)})
		return
	}
	ctx := rq.r.Context()
	var es []store.Entry
	switch {
	case rq.who.Exact:
		if strings.HasPrefix(rq.who.Prefix, o.Prefix) {
			c, err := h.c.Store.Get(ctx, []byte(rq.who.Prefix))
			if err != nil {
				h.fail(rq.w, rq.r, rq, err)
				return
			}
			es = []store.Entry{{Key: []byte(rq.who.Prefix), Counts: c}}
		}
	default:
		prefix, ok := rq.who.ListPrefix(o.Prefix)
		if !ok {
			break // outside the scope: nothing to show
		}
		if o.Sort == ByName {
			es, o.Next, err = h.byName(ctx, prefix, q)
		} else {
			var at time.Time
			es, o.Page, at, err = h.ranked(ctx, prefix, o.Sort, q)
			o.RankedAt = at.UTC().Format("15:04:05 UTC")
			base := "/dashboard?sort=" + string(o.Sort) + "&prefix=" + url.QueryEscape(o.Prefix) + "&page="
			if len(es) == PageSize && o.Page+1 < MaxRankedPages {
				o.Next = base + strconv.Itoa(o.Page+1)
			}
			if o.Page > 0 {
				o.Prev = base + strconv.Itoa(o.Page-1)
			}
		}
		if err != nil {
			h.fail(rq.w, rq.r, rq, err)
			return
		}
		if o.Sort == ByName && o.Next != "" {
			o.Next = "/dashboard?sort=name&prefix=" + url.QueryEscape(o.Prefix) + "&after=" + url.QueryEscape(o.Next)
		}
	}
	if o.Rows, err = h.rows(ctx, es, o.Sort != ByName); err != nil {
		h.fail(rq.w, rq.r, rq, err)
		return
	}
	h.render(rq.w, http.StatusOK, "overview", d)
}

// byName returns a page of the keys under prefix in key order, from the
// cursor after, and the cursor of the next page ("" for none).
func (h *Handler) byName(ctx context.Context, prefix string, q url.Values) ([]store.Entry, string, error) {
	var after []byte
	if q.Has("after") {
		after = []byte(q.Get("after"))
	}
	es, err := h.c.Store.List(ctx, []byte(prefix), after, PageSize+1)
	if err != nil {
		return nil, "", err
	}
	if len(es) <= PageSize {
		return es, "", nil
	}
	es = es[:PageSize]
	return es, string(es[PageSize-1].Key), nil
}

// ranked returns the page q names of the keys under prefix, largest
// count by first (ties in key order), the page's number and when the
// ranking was made: a ranking is reused for Config.RankTTL (rankings).
// The counts shown are read again (rows).
func (h *Handler) ranked(ctx context.Context, prefix string, by Sort, q url.Values) ([]store.Entry, int, time.Time, error) {
	page := 0
	if v := q.Get("page"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 || n >= MaxRankedPages {
			return nil, 0, time.Time{}, &httperr.HTTPError{Code: http.StatusBadRequest, Msg: fmt.Sprintf("page: want a whole number from 0 to %d", MaxRankedPages-1)}
		}
		page = n
	}
	all, at, err := h.rankings.get(ctx, rankKey{prefix, by}, h.c.API.Now(), func(ctx context.Context) ([]store.Entry, error) {
		return h.rank(ctx, prefix, by)
	})
	if err != nil {
		return nil, 0, at, err
	}
	lo := min(page*PageSize, len(all))
	return all[lo:min(lo+PageSize, len(all))], page, at, nil
}

// rank reads every key under prefix, MaxList at a time, and returns the
// MaxRankedPages*PageSize largest by by, largest first: O(keys *
// log(kept)) time, O(kept) memory.
func (h *Handler) rank(ctx context.Context, prefix string, by Sort) ([]store.Entry, error) {
	top := Rank(by, MaxRankedPages*PageSize)
	var after []byte
	for {
		es, err := h.c.Store.List(ctx, []byte(prefix), after, store.MaxList)
		if err != nil {
			return nil, err
		}
		for i := range es {
			top.Offer(&es[i])
		}
		if len(es) < store.MaxList {
			return top.Sorted(), nil
		}
		after = es[len(es)-1].Key
		if err := ctx.Err(); err != nil {
			return nil, err
		}
	}
}

// Ranking keeps the n largest entries it is offered by a count. It is
// not safe for concurrent use.
type Ranking struct {
	by Sort
	n  int
	h  entryHeap
}

// Rank returns a Ranking of the n largest entries by by.
func Rank(by Sort, n int) *Ranking {
	return &Ranking{by: by, n: n, h: entryHeap{by: by}}
}

// Offer offers e, which the Ranking copies if it keeps it.
func (r *Ranking) Offer(e *store.Entry) {
	if len(r.h.es) < r.n {
		heap.Push(&r.h, store.Entry{Key: slices.Clone(e.Key), Counts: e.Counts})
		return
	}
	if r.h.less(&r.h.es[0], e) { // e beats the smallest kept
		r.h.es[0] = store.Entry{Key: slices.Clone(e.Key), Counts: e.Counts}
		heap.Fix(&r.h, 0)
	}
}

// Sorted returns the entries kept, largest first, ties in key order.
func (r *Ranking) Sorted() []store.Entry {
	es := slices.Clone(r.h.es)
	slices.SortFunc(es, func(a, b store.Entry) int {
		switch {
		case r.h.less(&a, &b):
			return 1
		case r.h.less(&b, &a):
			return -1
		}
		return 0
	})
	return es
}

// entryHeap is a min-heap of entries: the root is the one ranked last.
type entryHeap struct {
	by Sort
	es []store.Entry
}

func (h *entryHeap) count(e *store.Entry) uint64 {
	if h.by == ByToday {
		return e.Today
	}
	return e.Total
}

// less reports whether a ranks below b: a smaller count, or the same
// count and a later key.
func (h *entryHeap) less(a, b *store.Entry) bool {
	ca, cb := h.count(a), h.count(b)
	if ca != cb {
		return ca < cb
	}
	return string(a.Key) > string(b.Key)
}

func (h *entryHeap) Len() int           { return len(h.es) }
func (h *entryHeap) Less(i, j int) bool { return h.less(&h.es[i], &h.es[j]) }
func (h *entryHeap) Swap(i, j int)      { h.es[i], h.es[j] = h.es[j], h.es[i] }
func (h *entryHeap) Push(x any)         { h.es = append(h.es, x.(store.Entry)) }
func (h *entryHeap) Pop() any {
	e := h.es[len(h.es)-1]
	h.es = h.es[:len(h.es)-1]
	return e
}

// rows returns the overview's rows of es: unique visitors today and a
// sparkline of the last SparkDays days each; with fresh, the counts are
// read again (a ranking may be some seconds old).
func (h *Handler) rows(ctx context.Context, es []store.Entry, fresh bool) ([]Row, error) {
	now := h.c.API.Now()
	rows := make([]Row, len(es))
	for i, e := range es {
		if fresh {
			c, err := h.c.Store.Get(ctx, e.Key)
			if err != nil {
				return nil, err
			}
			e.Counts = c
		}
		d, err := h.c.Store.Days(ctx, e.Key, SparkDays)
		if err != nil {
			return nil, err
		}
		k := string(e.Key)
		rows[i] = Row{Key: k, URL: CounterURL(k), Total: e.Total, Today: e.Today, Locked: e.Locked, Spark: Sparkline(d.Counts)}
		if h.c.Uniques != nil {
			rows[i].Unique = h.c.Uniques.Today(e.Key, now)
		}
	}
	return rows, nil
}

// Sparkline returns counts as a small inline SVG line, drawn in the
// text's color: numbers only, so it is safe HTML.
func Sparkline(counts []uint64) template.HTML {
	const w, hgt = 90, 20
	var peak uint64
	for _, n := range counts {
		peak = max(peak, n)
	}
	var b strings.Builder
	fmt.Fprintf(&b, `<svg class="spark" width="%d" height="%d" viewBox="0 0 %d %d" role="img" aria-label="last %d days">`, w, hgt, w, hgt, len(counts))
	b.WriteString(`<polyline fill="none" stroke="currentColor" stroke-width="1.5" points="`)
	for i, n := range counts {
		x := 0.0
		if len(counts) > 1 {
			x = float64(i) * float64(w-2) / float64(len(counts)-1)
		}
		y := float64(hgt - 2)
		if peak > 0 {
			y -= float64(hgt-4) * float64(n) / float64(peak)
		}
		if i > 0 {
			b.WriteByte(' ')
		}
		fmt.Fprintf(&b, "%.1f,%.1f", x+1, y)
	}
	b.WriteString(`"/></svg>`)
	return template.HTML(b.String())
}
