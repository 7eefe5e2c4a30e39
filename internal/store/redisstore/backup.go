package redisstore

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/redis/rueidis"

	"visitors/internal/store"
	"visitors/internal/store/dump"
)

// backupTimeout bounds each round trip of an export or import.
const backupTimeout = 30 * time.Second

// connectNames connects to the Redis of o and returns the names of the
// store under o.Prefix (DefaultPrefix if empty), which must be valid,
// with the keys of an older store migrated as Open does.
func connectNames(o Options) (rueidis.Client, names, error) {
	if o.Prefix == "" {
		o.Prefix = DefaultPrefix
	}
	if err := checkPrefix(o.Prefix); err != nil {
		return nil, names{}, err
	}
	c, err := Connect(o)
	if err != nil {
		return nil, names{}, err
	}
	n := newNames(o.Prefix)
	ctx, cancel := context.WithTimeout(context.Background(), backupTimeout)
	defer cancel()
	if _, err := migrate(ctx, c, n); err != nil {
		c.Close()
		return nil, names{}, fmt.Errorf("redis: move the set of keys to a sorted set: %w", err)
	}
	return c, n, nil
}

// Offline is the Redis store Options names, read and written through a
// connection of its own rather than through a running instance: what
// the CLI's "visitors export" and "visitors import" use. Instances may
// keep counting during an export; during an import they should be
// stopped, or they show the old counts until their next read. A running
// instance exports and imports online instead, [Store.Export] and
// [Store.Import] (the owner API's /api/v1/export and /api/v1/import): it
// sends its pending visits first and reads the counts back. An Offline
// holds nothing open between calls.
type Offline struct {
	// Options says where the store is and how to reach it (URL,
	// Password, Cluster, Prefix, Timeout), the most keys an import may
	// take it to (MaxKeys) and the clock that says which day it is (Now);
	// its other fields are a running instance's.
	Options Options
	TmpDir  string // where Import spools the dump; empty: os.TempDir
}

// now is the time on o's clock.
func (o Offline) now() time.Time {
	if o.Options.Now != nil {
		return o.Options.Now()
	}
	return time.Now()
}

// Export writes every counter under o.Options.Prefix, totals, locks and
// the daily counts Redis still holds (the last DayTTL), as one JSON
// [dump.Dump] to w, one key a line in byte order, streaming.
// Instances may keep counting meanwhile: each key is read at one moment,
// not the whole store.
func (o Offline) Export(w io.Writer) error {
	now := o.now()
	c, n, err := connectNames(o.Options)
	if err != nil {
		return err
	}
	defer c.Close()
	return export(context.Background(), c, n, w, store.DayOf(now))
}

// export writes the dump of the store named n on c, with today as the
// last day.
func export(ctx context.Context, c rueidis.Client, n names, w io.Writer, today store.Day) error {
	tctx, cancel := context.WithTimeout(ctx, backupTimeout)
	hits, err := c.Do(tctx, c.B().Get().Key(n.hi).Build()).AsUint64()
	cancel()
	if err != nil && !rueidis.IsRedisNil(err) {
		return fmt.Errorf("export: read /hi: %w", err)
	}
	enc := dump.NewEncoder(w, hits)
	const window = DayTTL / 86400
	lo := "-"
	for {
		tctx, cancel := context.WithTimeout(ctx, backupTimeout)
		keys, err := c.Do(tctx, c.B().Zrange().Key(n.index).Min(lo).Max("+").Bylex().Limit(0, 200).Build()).AsStrSlice()
		if err != nil {
			cancel()
			return fmt.Errorf("export: list keys: %w", err)
		}
		cmds := make(rueidis.Commands, 0, len(keys))
		for _, k := range keys {
			tag := n.tag([]byte(k))
			names := []string{total(tag), lockKey(tag)}
			for d := today - window + 1; d <= today; d++ {
				names = append(names, dayKey(tag, d))
			}
			cmds = append(cmds, c.B().Mget().Key(names...).Build())
		}
		res := c.DoMulti(tctx, cmds...)
		cancel()
		for i, k := range keys {
			vs, err := res[i].ToArray()
			if err != nil {
				return fmt.Errorf("export: read key %q: %w", k, err)
			}
			kd := dump.Key{Key: k, Days: map[string]uint64{}}
			for j, v := range vs {
				if v.IsNil() {
					continue
				}
				s, err := v.ToString()
				if err != nil {
					return fmt.Errorf("export: read key %q: %w", k, err)
				}
				x, err := strconv.ParseUint(s, 10, 64)
				if err != nil {
					return fmt.Errorf("export: key %q: %q is not a count", k, s)
				}
				switch {
				case j == 0:
					kd.Total = x
				case j == 1:
					kd.Locked = x != 0
				case x > 0:
					kd.Days[(today - window + store.Day(j-1)).Time().Format(dump.DateLayout)] = x
				}
			}
			if err := enc.Encode(&kd); err != nil {
				return err
			}
		}
		if len(keys) < 200 {
			break
		}
		lo = "(" + keys[len(keys)-1]
	}
	return enc.Close()
}

// Import reads a [dump.Dump] from r into Redis under o.Options.Prefix:
// with replace, every name under the prefix but the /hi counter and the
// tokens is deleted first; otherwise the dump's counts are added to what
// Redis holds (and a key is locked if either side has it locked). Either
// way the /hi counter becomes the larger of the two, so no number is
// handed out twice. Days older than DayTTL, which Redis would drop at
// once, are left out (their visits stay in the totals). An import that
// would take the store past o.Options.MaxKeys keys is refused whole,
// with an error wrapping [store.ErrTooManyKeys].
//
// It checks the whole dump first, as the embedded store's import does
// (dump.Decode), and writes nothing if any of it is refused: r
// is read once, into a temporary file in o.TmpDir, so memory does not
// grow with the dump. The service should be stopped (or use the online
// import, [Store.Import]), or its instances will show the old counts
// until their next read.
func (o Offline) Import(r io.Reader, replace bool) error {
	now := o.now()
	spool, err := spoolDump(context.Background(), r, o.TmpDir)
	if err != nil {
		return fmt.Errorf("import: %w", err)
	}
	defer os.Remove(spool.Name())
	defer spool.Close()
	c, n, err := connectNames(o.Options)
	if err != nil {
		return err
	}
	defer c.Close()
	ctx := context.Background()
	if err := checkRoom(ctx, c, n, spool, replace, o.Options.MaxKeys); err != nil {
		return fmt.Errorf("import: %w; nothing was changed", err)
	}
	if replace {
		keep, err := dumpTags(spool, n)
		if err != nil {
			return fmt.Errorf("import -replace: %w", err)
		}
		if err := deleteAll(ctx, c, n, keep); err != nil {
			return fmt.Errorf("import -replace: %w", err)
		}
	}
	if err := importSpool(ctx, c, n, spool, now); err != nil {
		return fmt.Errorf("import: %w", err)
	}
	return nil
}

// spoolDump reads a dump from r into a temporary file in tmpDir while
// [dump.Spool] checks all of it, and returns the file, at its start; the
// caller removes it. A dump refused is an error wrapping
// [store.ErrInvalidDump].
func spoolDump(ctx context.Context, r io.Reader, tmpDir string) (*os.File, error) {
	spool, _, err := dump.Spool(ctx, r, tmpDir, "visitors-import-*", nil)
	if errors.Is(err, store.ErrInvalidDump) {
		return nil, fmt.Errorf("%w; nothing was changed", err)
	}
	return spool, err
}

// importSpool adds the checked dump in spool to the store named n on c,
// and raises its /hi counter to the dump's. A key imported is in the
// sorted set of every key (checkRoom checked the limit), and its
// generation, a tombstone if a replace deleted it, is kept for good.
func importSpool(ctx context.Context, c rueidis.Client, n names, spool io.Reader, now time.Time) error {
	oldest := store.DayOf(now) - DayTTL/86400 + 1
	hits, err := dump.Decode(bufio.NewReader(spool), 0, func(keys []dump.Key, _ []dump.Span) error {
		var cmds rueidis.Commands
		for _, kd := range keys {
			tag := n.tag([]byte(kd.Key))
			cmds = append(cmds, c.B().Zadd().Key(n.index).ScoreMember().ScoreMember(0, kd.Key).Build(),
				c.B().Incrby().Key(total(tag)).Increment(int64(kd.Total)).Build(),
				c.B().Persist().Key(genKey(tag)).Build())
			if kd.Locked {
				cmds = append(cmds, c.B().Set().Key(lockKey(tag)).Value("1").Build())
			}
			for date, x := range kd.Days {
				t, _ := time.Parse(dump.DateLayout, date) // checked by dump.Decode
				d := store.DayOf(t)
				if d < oldest || x == 0 {
					continue
				}
				cmds = append(cmds, c.B().Incrby().Key(dayKey(tag, d)).Increment(int64(x)).Build(),
					c.B().Expire().Key(dayKey(tag, d)).Seconds(dayTTL(d, now)).Build())
			}
		}
		tctx, cancel := context.WithTimeout(ctx, backupTimeout)
		defer cancel()
		for _, r := range c.DoMulti(tctx, cmds...) {
			if err := r.Error(); err != nil {
				return fmt.Errorf("write to redis: %w", err)
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	tctx, cancel := context.WithTimeout(ctx, backupTimeout)
	defer cancel()
	sc := script{src: atleastSrc, sha: atleastSHA, keys: []string{n.hi}, args: []string{strconv.FormatUint(hits, 10)}}
	s := &Store{c: c}
	if err := s.doScripts(tctx, []script{sc})[0].Error(); err != nil {
		return fmt.Errorf("/hi: %w", err)
	}
	return nil
}

// deleteAll deletes every name under n's prefix but the /hi counter, the
// tokens, the days' unique-visitor seeds and the unique visitors of the
// counters whose tags are in keep (as the embedded store keeps the
// sketches of the keys a replacing dump has), on every node.
func deleteAll(ctx context.Context, c rueidis.Client, n names, keep map[string]bool) error {
	// Every name of this store is the prefix and then "{" (a prefix has no
	// braces): "P{*" spares a store under a longer prefix such as
	// "Pstaging:" on the same Redis.
	pattern := strings.NewReplacer(`\`, `\\`, `*`, `\*`, `?`, `\?`, `[`, `\[`, `]`, `\]`).Replace(n.prefix) + "{*"
	for _, node := range c.Nodes() {
		var cursor uint64
		for {
			tctx, cancel := context.WithTimeout(ctx, backupTimeout)
			e, err := node.Do(tctx, node.B().Scan().Cursor(cursor).Match(pattern).Count(1000).Build()).AsScanEntry()
			if err != nil {
				cancel()
				return fmt.Errorf("scan: %w", err)
			}
			var cmds rueidis.Commands
			for _, k := range e.Elements {
				if k != n.hi && k != n.tokens && !strings.HasPrefix(k, n.prefix+"{seed}") && !keep[uniqueTag(k)] {
					cmds = append(cmds, c.B().Del().Key(k).Build())
				}
			}
			for _, r := range c.DoMulti(tctx, cmds...) {
				if err := r.Error(); err != nil {
					cancel()
					return fmt.Errorf("delete: %w", err)
				}
			}
			cancel()
			if cursor = e.Cursor; cursor == 0 {
				break
			}
		}
	}
	return nil
}

var _ store.Backup = (*Store)(nil)

// Export implements [store.Backup]: in Batch it first sends what this
// instance has counted, then writes the dump as [Offline.Export] does,
// each key read at one moment while every instance keeps counting.
func (s *Store) Export(ctx context.Context, w io.Writer) error {
	if s.o.Durability == store.Batch {
		if err := s.flush(ctx); err != nil {
			return fmt.Errorf("export: send what was counted: %w", err)
		}
	}
	return export(ctx, s.c, s.n, w, s.cal.Today())
}

// Import implements [store.Backup]. The dump is read once into a
// temporary file (os.TempDir) while it is checked; a refused dump changes
// nothing. Adding, this instance first sends what it has counted, and
// then the dump's counts are added in Redis; the other instances show
// them from their next read of each key. Replacing, every key of the
// sorted set of every key is deleted as [Store.Delete] deletes one (so
// no instance's pending visits bring one back), then the dump is added.
// Visits made meanwhile may count before or after it, or, replacing, be
// dropped. An import that would take the store past MaxKeys (the keys
// Redis holds and the dump's new ones, or the dump's alone replacing) is
// refused whole with an error wrapping [store.ErrTooManyKeys]; keys
// visits make meanwhile are not counted. A count the
// addition would raise above what Redis holds (2^63-1) fails that write
// after the others: the dump's counts stay within 2^62.
func (s *Store) Import(ctx context.Context, r io.Reader, replace bool) error {
	spool, err := spoolDump(ctx, r, "")
	if err != nil {
		return fmt.Errorf("import: %w", err)
	}
	defer os.Remove(spool.Name())
	defer spool.Close()
	if !replace && s.o.Durability == store.Batch {
		if err := s.flush(ctx); err != nil {
			return fmt.Errorf("import: send what was counted: %w", err)
		}
	}
	if err := checkRoom(ctx, s.c, s.n, spool, replace, s.o.MaxKeys); err != nil {
		return fmt.Errorf("import: %w; nothing was changed", err)
	}
	if replace {
		keep, err := dumpTags(spool, s.n)
		if err != nil {
			return fmt.Errorf("import: replace: %w", err)
		}
		if err := s.deleteEvery(ctx, keep); err != nil {
			return fmt.Errorf("import: replace: %w", err)
		}
	}
	if err := importSpool(ctx, s.c, s.n, spool, s.cal.Now()); err != nil {
		return fmt.Errorf("import: %w", err)
	}
	// This instance reads every key it holds again with its next round.
	var q []*entry
	s.entries.Range(func(_, v any) bool {
		e := v.(*entry)
		select {
		case <-e.ready:
		default:
			return true
		}
		e.mu.Lock()
		if !e.queued && e.err == nil && !e.dead.Load() {
			e.queued = true
			q = append(q, e)
		}
		e.mu.Unlock()
		return true
	})
	for _, e := range q {
		s.queue(e)
	}
	if s.o.Durability == store.Batch {
		if err := s.flush(ctx); err != nil {
			return fmt.Errorf("import: read the counts back: %w", err)
		}
	}
	s.countKeys()
	return nil
}

// deleteEvery deletes every key of the sorted set of every key, as
// Delete does, in byte order: a key visits make again behind it is a
// visit after the replace began, and stays. The unique visitors of the
// keys whose tags are in keep stay, as the embedded store keeps the
// sketches of the keys a replacing dump has.
func (s *Store) deleteEvery(ctx context.Context, keep map[string]bool) error {
	lo := "-"
	for {
		tctx, cancel := context.WithTimeout(ctx, backupTimeout)
		keys, err := s.c.Do(tctx, s.c.B().Zrange().Key(s.n.index).Min(lo).Max("+").Bylex().Limit(0, 200).Build()).AsStrSlice()
		cancel()
		if err != nil {
			return fmt.Errorf("list keys: %w", err)
		}
		for _, k := range keys {
			if _, err := s.delete(ctx, []byte(k), !keep[s.n.tag([]byte(k))]); err != nil {
				return err
			}
		}
		if len(keys) < 200 {
			return nil
		}
		lo = "(" + keys[len(keys)-1]
	}
}

// checkRoom returns an error wrapping [store.ErrTooManyKeys] if the
// checked dump in spool would take the store named n on c past limit
// distinct keys (none if limit <= 0): replacing, it would hold the
// dump's keys; adding, those it holds and the dump's that it does not.
// It rewinds spool. Keys that visits make meanwhile are not counted.
func checkRoom(ctx context.Context, c rueidis.Client, n names, spool *os.File, replace bool, limit int) error {
	if limit <= 0 {
		return nil
	}
	held := 0
	if !replace {
		tctx, cancel := context.WithTimeout(ctx, backupTimeout)
		card, err := c.Do(tctx, c.B().Zcard().Key(n.index).Build()).AsInt64()
		cancel()
		if err != nil {
			return fmt.Errorf("count the keys: %w", err)
		}
		held = int(card)
	}
	_, err := dump.Decode(bufio.NewReader(spool), 0, func(keys []dump.Key, _ []dump.Span) error {
		if replace {
			held += len(keys) // a dump gives each key once
			return nil
		}
		cmds := make(rueidis.Commands, 0, len(keys))
		for _, kd := range keys {
			cmds = append(cmds, c.B().Zscore().Key(n.index).Member(kd.Key).Build())
		}
		tctx, cancel := context.WithTimeout(ctx, backupTimeout)
		defer cancel()
		for _, r := range c.DoMulti(tctx, cmds...) {
			switch err := r.Error(); {
			case rueidis.IsRedisNil(err):
				held++
			case err != nil:
				return fmt.Errorf("count the keys: %w", err)
			}
		}
		return nil
	})
	if err == nil {
		_, err = spool.Seek(0, io.SeekStart)
	}
	if err != nil {
		return fmt.Errorf("read the dump's keys: %w", err)
	}
	if held > limit {
		return dump.TooManyKeys(held, limit)
	}
	return nil
}

// dumpTags returns the tags (P{k<hex>}) of every key of the checked dump
// in spool, and rewinds it.
func dumpTags(spool *os.File, n names) (map[string]bool, error) {
	tags := make(map[string]bool)
	_, err := dump.Decode(bufio.NewReader(spool), 0, func(keys []dump.Key, _ []dump.Span) error {
		for _, kd := range keys {
			tags[n.tag([]byte(kd.Key))] = true
		}
		return nil
	})
	if err == nil {
		_, err = spool.Seek(0, io.SeekStart)
	}
	if err != nil {
		return nil, fmt.Errorf("read the dump's keys: %w", err)
	}
	return tags, nil
}
