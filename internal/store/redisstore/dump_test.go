package redisstore

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"visitors/internal/store/storetest"
)

// TestOfflineImportIsStrict: the offline import refuses each of
// storetest.StrictDumps (a field, a key or a date given twice, a /hi
// counter above its bound), adding and replacing, naming the line, and
// changes nothing. (Before issue 23 every one was taken: a key's field
// given twice imported into the last, a key twice added up.)
func TestOfflineImportIsStrict(t *testing.T) {
	for _, where := range []string{"standalone", "cluster"} {
		t.Run(where, func(t *testing.T) {
			o := Options{Prefix: prefixOf(t.Name())}
			if where == "cluster" {
				o.Cluster = cluster.Addrs()
			} else {
				o.URL = standalone.URL()
			}
			now := time.Now()
			mustImportOpts(t, o, `{"format":"visitors-export-1","hits":3,"keys":[{"key":"a","total":2}]}`, true, now)
			before := mustExportOpts(t, o, now)
			for _, d := range storetest.StrictDumps(now.UTC().Format(dateLayout)) {
				for _, replace := range []bool{false, true} {
					err := Import(o, strings.NewReader(d.Dump), replace, t.TempDir(), now)
					if err == nil || !strings.Contains(err.Error(), d.Want) {
						t.Errorf("%s: Import(replace=%v) = %v, want an error saying %q", d.Name, replace, err, d.Want)
					}
					if after := mustExportOpts(t, o, now); after != before {
						t.Errorf("%s: a refused import changed the store:\n%s\n%s", d.Name, before, after)
						before = after
					}
				}
			}
		})
	}
}

// mustImportOpts runs the offline Import of dump into the store of o.
func mustImportOpts(t *testing.T, o Options, dump string, replace bool, now time.Time) {
	t.Helper()
	if err := Import(o, strings.NewReader(dump), replace, t.TempDir(), now); err != nil {
		t.Fatalf("Import: %v", err)
	}
}

// mustExportOpts returns the offline Export of the store of o.
func mustExportOpts(t *testing.T, o Options, now time.Time) string {
	t.Helper()
	var w bytes.Buffer
	if err := Export(o, &w, now); err != nil {
		t.Fatalf("Export: %v", err)
	}
	return w.String()
}
