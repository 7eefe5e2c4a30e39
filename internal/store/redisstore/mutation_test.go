package redisstore

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"visitors/internal/store"
	"visitors/internal/store/boltstore"
)

// Tests of issue 16 (mutation testing): each states the promise a
// surviving mutant broke unseen.

// mustParseDump decodes an export, failing the test if it is not one.
func mustParseDump(t *testing.T, b []byte) boltstore.Dump {
	t.Helper()
	var d boltstore.Dump
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatalf("export is not JSON: %v\n%s", err, b)
	}
	return d
}

// TestOfflineBackupDefaultPrefixAndDays: the offline Export and Import
// with no prefix work on the store under DefaultPrefix, the one Open
// uses then; an import writes the days Redis keeps (the last DayTTL,
// today and the 399 days before it) and leaves out older ones, whose
// visits stay in the total; an export gives those days back under their
// dates, with the lock and the /hi counter.
func TestOfflineBackupDefaultPrefixAndDays(t *testing.T) {
	now := time.Now().UTC()
	today := store.DayOf(now)
	date := func(d store.Day) string { return d.Time().Format(dateLayout) }
	window := store.Day(DayTTL / 86400)
	in := boltstore.Dump{Format: boltstore.ExportFormat, Hits: 77, Keys: []boltstore.KeyDump{
		{Key: "a", Total: 20, Locked: true, Days: map[string]uint64{
			date(today): 3, date(today - 1): 2, date(today - window + 1): 1, date(today - window): 4,
		}},
		{Key: "b", Total: 1, Days: map[string]uint64{date(today): 1}},
	}}
	b, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	// replace: the test may run again on the same server.
	if err := Import(Options{URL: standalone.URL()}, bytes.NewReader(b), true, t.TempDir(), now); err != nil {
		t.Fatal(err)
	}

	st, err := Open(Options{URL: standalone.URL(), Prefix: DefaultPrefix, Durability: store.Sync})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	m := musts{t}
	if got := m.c(st.Get(t.Context(), []byte("a"))); got != (store.Counts{Total: 20, Today: 3, Locked: true}) {
		t.Errorf("Get(a) under %q after an import with no prefix = %+v, want total 20, today 3, locked", DefaultPrefix, got)
	}
	if n := m.n(st.Hit(t.Context())); n != 78 {
		t.Errorf("Hit after importing hits 77 = %d, want 78", n)
	}

	var out bytes.Buffer
	if err := Export(Options{URL: standalone.URL()}, &out, now); err != nil {
		t.Fatal(err)
	}
	got := mustParseDump(t, out.Bytes())
	want := boltstore.Dump{Format: boltstore.ExportFormat, Hits: 78, Keys: []boltstore.KeyDump{
		{Key: "a", Total: 20, Locked: true, Days: map[string]uint64{
			date(today): 3, date(today - 1): 2, date(today - window + 1): 1,
		}},
		{Key: "b", Total: 1, Days: map[string]uint64{date(today): 1}},
	}}
	gj, _ := json.Marshal(got)
	wj, _ := json.Marshal(want)
	if !bytes.Equal(gj, wj) {
		t.Errorf("Export with no prefix =\n%s\nwant\n%s", gj, wj)
	}
}

// TestExportEveryPage: an export lists keys 200 at a time; every key is
// in it once, in byte order, when they fill pages exactly (400) or not
// (401), online and offline.
func TestExportEveryPage(t *testing.T) {
	for _, n := range []int{400, 401} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			prefix := prefixOf(t.TempDir())
			var dump strings.Builder
			fmt.Fprintf(&dump, `{"format":%q,"hits":0,"keys":[`, boltstore.ExportFormat)
			var want []string
			for i := range n {
				k := fmt.Sprintf("k%04d", i)
				want = append(want, k)
				if i > 0 {
					dump.WriteString(",")
				}
				fmt.Fprintf(&dump, `{"key":%q,"total":%d}`, k, i+1)
			}
			dump.WriteString("]}")
			if err := Import(Options{URL: standalone.URL(), Prefix: prefix}, strings.NewReader(dump.String()), false, t.TempDir(), time.Now()); err != nil {
				t.Fatal(err)
			}
			check := func(how string, b []byte) {
				t.Helper()
				d := mustParseDump(t, b)
				var got []string
				for i, kd := range d.Keys {
					got = append(got, kd.Key)
					if kd.Key == fmt.Sprintf("k%04d", i) && kd.Total != uint64(i+1) {
						t.Errorf("%s: key %q total %d, want %d", how, kd.Key, kd.Total, i+1)
					}
				}
				if !slices.Equal(got, want) {
					t.Errorf("%s of %d keys gave %d keys (first %v, last %v), want each once in byte order", how, n, len(got), got[:min(2, len(got))], got[max(0, len(got)-2):])
				}
			}
			var off bytes.Buffer
			if err := Export(Options{URL: standalone.URL(), Prefix: prefix}, &off, time.Now()); err != nil {
				t.Fatal(err)
			}
			check("offline Export", off.Bytes())
			st := instance(t, "standalone", prefix, store.Batch)
			var on bytes.Buffer
			if err := st.Export(t.Context(), &on); err != nil {
				t.Fatal(err)
			}
			check("online Export", on.Bytes())
		})
	}
}
