package redisstore

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/redis/rueidis"

	"visitors/internal/store"
	"visitors/internal/store/boltstore"
)

// The dump format is the embedded store's: a dump moves between stores.

const dateLayout = "2006-01-02"

// backupTimeout bounds each round trip of an export or import.
const backupTimeout = 30 * time.Second

// connectNames connects to the Redis of o and returns the names of the
// store under o.Prefix (DefaultPrefix if empty), which must be valid.
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
	return c, newNames(o.Prefix), nil
}

// Export writes every counter under o.Prefix, totals and the daily counts
// Redis still holds (the last DayTTL), as one JSON [boltstore.Dump] to w,
// one key a line, streaming. Instances may keep counting meanwhile: each
// key is read at one moment, not the whole store.
func Export(o Options, w io.Writer, now time.Time) error {
	c, n, err := connectNames(o)
	if err != nil {
		return err
	}
	defer c.Close()
	ctx := context.Background()
	tctx, cancel := context.WithTimeout(ctx, backupTimeout)
	hits, err := c.Do(tctx, c.B().Get().Key(n.hi).Build()).AsUint64()
	cancel()
	if err != nil && !rueidis.IsRedisNil(err) {
		return fmt.Errorf("export: read /hi: %w", err)
	}
	bw := bufio.NewWriter(w)
	fmt.Fprintf(bw, "{\"format\":%q,\"hits\":%d,\"keys\":[", boltstore.ExportFormat, hits)
	today := store.DayOf(now)
	const window = DayTTL / 86400
	first := true
	var cursor uint64
	for {
		tctx, cancel := context.WithTimeout(ctx, backupTimeout)
		e, err := c.Do(tctx, c.B().Sscan().Key(n.keys).Cursor(cursor).Count(200).Build()).AsScanEntry()
		if err != nil {
			cancel()
			return fmt.Errorf("export: list keys: %w", err)
		}
		cmds := make(rueidis.Commands, 0, len(e.Elements))
		for _, k := range e.Elements {
			tag := n.tag([]byte(k))
			names := []string{total(tag)}
			for d := today - window + 1; d <= today; d++ {
				names = append(names, dayKey(tag, d))
			}
			cmds = append(cmds, c.B().Mget().Key(names...).Build())
		}
		res := c.DoMulti(tctx, cmds...)
		cancel()
		for i, k := range e.Elements {
			vs, err := res[i].ToArray()
			if err != nil {
				return fmt.Errorf("export: read key %q: %w", k, err)
			}
			kd := boltstore.KeyDump{Key: k, Days: map[string]uint64{}}
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
				if j == 0 {
					kd.Total = x
				} else if x > 0 {
					kd.Days[(today - window + store.Day(j)).Time().Format(dateLayout)] = x
				}
			}
			b, err := json.Marshal(kd)
			if err != nil {
				return err
			}
			if !first {
				bw.WriteByte(',')
			}
			first = false
			bw.WriteString("\n")
			bw.Write(b)
		}
		if cursor = e.Cursor; cursor == 0 {
			break
		}
	}
	bw.WriteString("\n]}\n")
	return bw.Flush()
}

// Import reads a [boltstore.Dump] from r into Redis under o.Prefix: with
// replace, every name under the prefix is deleted first; otherwise the
// dump's counts are added to what Redis holds. Either way the /hi
// counter becomes the larger of the two, so no number is handed out
// twice. Days older than DayTTL, which Redis would drop at once, are
// left out (their visits stay in the totals).
//
// It checks the whole dump first, as the embedded store's import does
// (boltstore.DecodeDump), and writes nothing if any of it is refused: r
// is read once, into a temporary file in tmpDir, so memory does not
// grow with the dump. The service should be stopped, or its instances
// will show the old counts until their next read.
func Import(o Options, r io.Reader, replace bool, tmpDir string, now time.Time) error {
	spool, err := os.CreateTemp(tmpDir, "visitors-import-*")
	if err != nil {
		return fmt.Errorf("import: %w", err)
	}
	defer os.Remove(spool.Name())
	defer spool.Close()
	if _, err := boltstore.DecodeDump(io.TeeReader(r, spool), func([]boltstore.KeyDump) error { return nil }); err != nil {
		return fmt.Errorf("import: %w", err)
	}
	if _, err := spool.Seek(0, io.SeekStart); err != nil {
		return fmt.Errorf("import: %w", err)
	}
	c, n, err := connectNames(o)
	if err != nil {
		return err
	}
	defer c.Close()
	ctx := context.Background()
	if replace {
		if err := deleteAll(ctx, c, n); err != nil {
			return fmt.Errorf("import -replace: %w", err)
		}
	}
	oldest := store.DayOf(now) - DayTTL/86400 + 1
	hits, err := boltstore.DecodeDump(bufio.NewReader(spool), func(keys []boltstore.KeyDump) error {
		var cmds rueidis.Commands
		for _, kd := range keys {
			tag := n.tag([]byte(kd.Key))
			cmds = append(cmds, c.B().Sadd().Key(n.keys).Member(kd.Key).Build(),
				c.B().Incrby().Key(total(tag)).Increment(int64(kd.Total)).Build())
			for date, x := range kd.Days {
				t, _ := time.Parse(dateLayout, date) // checked by DecodeDump
				d := store.DayOf(t)
				if d < oldest || x == 0 {
					continue
				}
				cmds = append(cmds, c.B().Incrby().Key(dayKey(tag, d)).Increment(int64(x)).Build(),
					c.B().Expireat().Key(dayKey(tag, d)).Timestamp(dayExpiry(d)).Build())
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
		return fmt.Errorf("import: %w", err)
	}
	tctx, cancel := context.WithTimeout(ctx, backupTimeout)
	defer cancel()
	sc := script{src: atleastSrc, sha: atleastSHA, keys: []string{n.hi}, args: []string{strconv.FormatUint(hits, 10)}}
	s := &Store{c: c}
	if err := s.doScripts(tctx, []script{sc})[0].Error(); err != nil {
		return fmt.Errorf("import: /hi: %w", err)
	}
	return nil
}

// deleteAll deletes every name under n's prefix but the /hi counter, on
// every node.
func deleteAll(ctx context.Context, c rueidis.Client, n names) error {
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
				if k != n.hi {
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
