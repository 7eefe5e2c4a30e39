package app

import (
	"crypto/sha256"
	"encoding/json"
	"io"
	"net/http"
	"testing"
	"time"

	"visitors/internal/webtest"
)

// uniqueToday visits (count) or reads (!count) /counter/{key}.json as
// the client addr with a browser's User-Agent, behind the trusted
// loopback proxy, and returns unique_today.
func uniqueToday(t *testing.T, addr, key, client string, count bool) uint64 {
	t.Helper()
	u := "http://" + addr + "/counter/" + key + ".json"
	if !count {
		u += "?count=false"
	}
	req, err := http.NewRequest("GET", u, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("User-Agent", "Mozilla/5.0 (X11; Linux x86_64)")
	req.Header.Set("X-Forwarded-For", client)
	resp, err := webtest.Client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var c struct {
		Unique *uint64 `json:"unique_today"`
	}
	if resp.StatusCode != 200 || json.Unmarshal(b, &c) != nil || c.Unique == nil {
		t.Fatalf("GET %s = %d %s", u, resp.StatusCode, b)
	}
	return *c.Unique
}

// TestDeleteForgetsUniqueVisitors: a counter deleted through the owner
// API starts over with no unique visitors, on the memory and the
// embedded store, and after a restart: today's visitors of the deleted
// counter, held in memory, are neither shown again nor written back.
// A replacing import that drops a key forgets them too.
func TestDeleteForgetsUniqueVisitors(t *testing.T) {
	for _, st := range []StoreKind{StoreMemory, StoreEmbedded} {
		t.Run(st.String(), func(t *testing.T) {
			cfg := uniqueConfig(t, st)
			sum := sha256.Sum256([]byte(testRoot))
			cfg.API = APIConfig{RootHash: &sum, ImportMaxBytes: 1 << 20}
			r := mustStart(t, cfg, DefaultTimeouts, io.Discard)
			for _, c := range []string{"192.0.2.1", "192.0.2.2", "192.0.2.3"} {
				uniqueToday(t, r.addr, "gone", c, true)
				uniqueToday(t, r.addr, "kept", c, true)
			}
			if n := uniqueToday(t, r.addr, "gone", "192.0.2.9", false); n != 3 {
				t.Fatalf("before the delete, unique_today = %d, want 3", n)
			}
			if code, _, body := apiCall(t, r.addr, "DELETE", "/api/v1/counters/gone", testRoot, ""); code != 200 {
				t.Fatalf("DELETE = %d %s", code, body)
			}
			if n := uniqueToday(t, r.addr, "gone", "192.0.2.9", false); n != 0 {
				t.Errorf("after the delete, unique_today = %d, want 0", n)
			}
			if n := uniqueToday(t, r.addr, "gone", "192.0.2.4", true); n != 1 {
				t.Errorf("a new visitor after the delete: unique_today = %d, want 1", n)
			}
			// A replacing import of a dump without "kept" deletes it (the
			// memory store serves no import).
			if st == StoreEmbedded {
				dump := `{"format":"visitors-export-1","hits":0,"keys":[` + "\n" + `{"key":"gone","total":1}` + "\n]}\n"
				if code, _, body := apiCall(t, r.addr, "POST", "/api/v1/import?replace=true", testRoot, dump); code != 200 {
					t.Fatalf("import = %d %s", code, body)
				}
				if n := uniqueToday(t, r.addr, "kept", "192.0.2.9", false); n != 0 {
					t.Errorf("after a replacing import without the key, unique_today = %d, want 0", n)
				}
				if n := uniqueToday(t, r.addr, "gone", "192.0.2.9", false); n != 1 {
					t.Errorf("a key the replacing import kept: unique_today = %d, want 1", n)
				}
			}
			time.Sleep(1500 * time.Millisecond) // the sketches' flush interval is a second
			if err := r.stop(); err != nil {
				t.Fatal(err)
			}
			if st == StoreMemory {
				return
			}
			r = mustStart(t, cfg, DefaultTimeouts, io.Discard)
			if n := uniqueToday(t, r.addr, "gone", "192.0.2.9", false); n != 1 {
				t.Errorf("after a restart, unique_today = %d, want 1 (the one visitor since the delete)", n)
			}
		})
	}
}

// uniqueConfig is the test configuration on store st, with its data in a
// temporary directory flushed every 20ms, counting unique visitors
// behind a trusted proxy on the loopback.
func uniqueConfig(t *testing.T, st StoreKind) Config {
	t.Helper()
	cfg := testConfig()
	cfg.Store, cfg.Data, cfg.FlushInterval = st, t.TempDir(), 20*time.Millisecond
	cfg.Fair = Fair{Unique: true}
	if err := cfg.Fair.TrustedProxies.Set("127.0.0.0/8,::1/128"); err != nil {
		t.Fatal(err)
	}
	return cfg
}
