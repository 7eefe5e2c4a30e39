package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"visitors/internal/servertest"
	"visitors/internal/store"
	"visitors/internal/store/storetest"
)

// TestEmptyNameKeepsCountsDurable is the review's reproduction on the
// real binary: /hello with no name must not stop counts reaching disk.
func TestEmptyNameKeepsCountsDurable(t *testing.T) {
	data := t.TempDir()
	p := servertest.Start(t, bin, rulesOff, "-data", data, "-log-level", "warn")
	if code, _, body := mustGet(t, p.URL("/counter/a.json")); code != 200 || !strings.Contains(body, `"total":1`) {
		t.Fatalf("/counter/a.json = %d %s", code, body)
	}
	if code, _, body := mustGet(t, p.URL("/hello")); code != 200 || !strings.Contains(body, "Count: 1") {
		t.Fatalf("/hello = %d %s", code, body)
	}
	time.Sleep(300 * time.Millisecond) // a few flush intervals
	if code, _, body := mustGet(t, p.AdminURL("/healthz")); code != 200 {
		t.Fatalf("/healthz after /hello with no name = %d %s, want 200", code, body)
	}
	stop(t, p)
	p = servertest.Start(t, bin, rulesOff, "-data", data, "-log-level", "warn")
	if code, _, body := mustGet(t, p.URL("/counter/a.json?count=false")); !strings.Contains(body, `"total":1`) {
		t.Errorf("after a restart /counter/a.json?count=false = %d %s, want total 1", code, body)
	}
	if _, _, body := mustGet(t, p.URL("/hello")); !strings.Contains(body, "Count: 2") {
		t.Errorf("after a restart /hello = %s, want Count: 2", body)
	}
	stop(t, p)
}

func stop(t *testing.T, p *servertest.Proc) {
	t.Helper()
	if err := p.Stop(syscall.SIGTERM, 15*time.Second); err != nil {
		t.Fatalf("SIGTERM: %v\n%s", err, p.Stderr())
	}
}

// TestEveryInputClassThroughEveryBackend sends each class of name and key
// the web layer accepts through each backend; the durable ones must give
// every count back after a restart, and /hi continue without a gap.
func TestEveryInputClassThroughEveryBackend(t *testing.T) {
	var names []string
	for _, k := range storetest.HostileKeys() {
		names = append(names, string(k))
	}
	// Counter keys apart from the names above: the two share counters.
	keys := []string{"c", "c/" + strings.Repeat("k", 126), "c/octocat/hello-world", "c.b_c~d-e/f", "C/B/C/D"}
	backends := []struct {
		name    string
		args    []string
		durable bool
	}{
		{"memory", []string{"-store", "memory"}, false},
		{"embedded-batch", []string{"-durability", "batch"}, true},
		{"embedded-sync", []string{"-durability", "sync"}, true},
		{"redis-batch", []string{"-durability", "batch"}, true},
		{"redis-sync", []string{"-durability", "sync"}, true},
		{"redis-cluster-batch", []string{"-durability", "batch"}, true},
		{"redis-cluster-sync", []string{"-durability", "sync"}, true},
	}
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			data := t.TempDir()
			args := append([]string{"-data", data, "-log-level", "warn"}, b.args...)
			if strings.HasPrefix(b.name, "redis") {
				args = append(args, redisArgs(t, strings.HasPrefix(b.name, "redis-cluster"))...)
			}
			p := servertest.Start(t, bin, rulesOff, args...)
			for i, n := range names {
				for j := range i + 1 {
					code, _, body := mustGet(t, p.URL("/hello?name="+url.QueryEscape(n)))
					if want := fmt.Sprintf("Count: %d<", j+1); code != 200 || !strings.Contains(body, want) {
						t.Fatalf("/hello?name=%q visit %d = %d %q", n, j+1, code, body)
					}
				}
			}
			for i, k := range keys {
				for range i + 1 {
					if code, _, body := mustGet(t, p.URL("/counter/"+k+".svg")); code != 200 {
						t.Fatalf("/counter/%s.svg = %d %s", k, code, body)
					}
				}
			}
			var last uint64
			for range 5 {
				_, _, body := mustGet(t, p.URL("/hi"))
				var err error
				if last, err = numberAfter(body, "number "); err != nil {
					t.Fatal(err)
				}
			}
			if last != 5 {
				t.Fatalf("fifth /hi = %d", last)
			}
			if code, _, body := mustGet(t, p.AdminURL("/healthz")); code != 200 {
				t.Fatalf("/healthz = %d %s", code, body)
			}
			if b.name == "embedded-sync" {
				// Every visit went through a flusher pass, and the
				// counters on the admin listener say so.
				var vars struct {
					Visitors struct {
						Store struct{ Passes, SyncVisits, KeyErrors uint64 }
					}
				}
				_, _, body := mustGet(t, p.AdminURL("/debug/vars"))
				if err := json.Unmarshal([]byte(body), &vars); err != nil {
					t.Fatal(err)
				}
				visits := uint64(len(names)*(len(names)+1)/2 + len(keys)*(len(keys)+1)/2)
				if st := vars.Visitors.Store; st.SyncVisits != visits || st.Passes == 0 || st.KeyErrors != 0 {
					t.Errorf("/debug/vars store = %+v, want %d sync visits in some passes, no key errors", st, visits)
				}
			}
			if !b.durable {
				stop(t, p)
				return
			}
			stop(t, p)
			p = servertest.Start(t, bin, rulesOff, args...)
			defer stop(t, p)
			for i, k := range keys {
				want := fmt.Sprintf(`"total":%d,"today":%d,"unique_today":1}`, i+1, i+1) // one visitor, its sketch kept
				if strings.HasPrefix(b.name, "redis") {
					// The Redis store keeps no unique-visitor sketches yet
					// (README: they live in each instance's memory).
					want = fmt.Sprintf(`"total":%d,"today":%d,`, i+1, i+1)
				}
				if code, _, body := mustGet(t, p.URL("/counter/"+k+".json?count=false")); code != 200 || !strings.Contains(body, want) {
					t.Errorf("after a restart /counter/%s.json?count=false = %d %s, want %s", k, code, body, want)
				}
			}
			for i, n := range names {
				// The name's counter is the counter API's too; names that
				// are not valid keys are read by counting once more.
				want := fmt.Sprintf("Count: %d<", i+2)
				if _, _, body := mustGet(t, p.URL("/hello?name="+url.QueryEscape(n))); !strings.Contains(body, want) {
					t.Errorf("after a restart /hello?name=%q = %q, want %s", n, body, want)
				}
			}
			if _, _, body := mustGet(t, p.URL("/hi")); !strings.Contains(body, "number 6!") {
				t.Errorf("after a clean restart /hi = %q, want number 6 (no gap)", body)
			}
		})
	}
}

// TestBinaryRefusesDamagedFiles runs the real binary, and visitors check,
// on each kind of damaged file: each exits with status 1 (not a signal),
// says in one line which file and what to do, and leaves it unchanged.
func TestBinaryRefusesDamagedFiles(t *testing.T) {
	sound := t.TempDir()
	p := servertest.Start(t, bin, rulesOff, "-data", sound, "-log-level", "off")
	for i := range 300 {
		mustGet(t, p.URL(fmt.Sprintf("/hello?name=name-%d", i)))
	}
	stop(t, p)
	good, err := os.ReadFile(filepath.Join(sound, "visitors.db"))
	if err != nil {
		t.Fatal(err)
	}
	if out, err := command(t, bin, "check", "-data", sound).CombinedOutput(); err != nil || !strings.Contains(string(out), "ok: ") {
		t.Fatalf("visitors check on a sound store = %v\n%s", err, out)
	}

	// name-7's total: its key, then the total (dated or not, it begins
	// so). A page of totals, which the start reads: a page of days is
	// checked after the start (TestBinaryStartsOnDamagedHistoryThenRefusesWrites).
	totalRecord := []byte("name-7\x00\x00\x00\x00\x00\x00\x00\x01")
	record := pageInUse(t, filepath.Join(sound, "visitors.db"), totalRecord)
	page := record
	tests := []struct {
		name   string
		damage func([]byte) []byte
		want   string
	}{
		{"empty", func([]byte) []byte { return nil }, "empty"},
		{"truncated to 8 KiB", func(b []byte) []byte { return b[:8<<10] }, "truncated"},
		{"a bad page header", func(b []byte) []byte {
			for i := range 16 {
				b[page*4096+i] ^= 0xA5
			}
			return b
		}, "damaged"},
		{"a flipped byte in a count", func(b []byte) []byte {
			// name-7's total record, on the live page that holds it: its
			// key is followed by the value.
			live := b[record*4096 : (record+1)*4096]
			i := bytes.Index(live, totalRecord)
			live[i+len("name-7")+7] ^= 2
			return b
		}, `key "name-7"`},
		{"both meta pages", func(b []byte) []byte {
			for i := range 2 * 4096 {
				b[i] ^= 0x5A
			}
			return b
		}, "visitors.db"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "visitors.db")
			if err := os.WriteFile(path, tt.damage(bytes.Clone(good)), 0o644); err != nil {
				t.Fatal(err)
			}
			before := sum(t, path)
			for _, args := range [][]string{
				{"-addr", "127.0.0.1:0", "-admin-addr", "", "-data", dir},
				{"check", "-data", dir},
				{"export", "-data", dir},
			} {
				// A binary that served a damaged file instead of refusing it
				// would run until killed: fail then, do not hang.
				ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
				defer cancel()
				cmd := exec.CommandContext(ctx, bin, args...)
				var stderr bytes.Buffer
				cmd.Stderr = &stderr
				err := cmd.Run()
				var ee *exec.ExitError
				if !errors.As(err, &ee) || ee.ExitCode() != 1 {
					t.Fatalf("visitors %s: %v (a signal shows as -1), want exit status 1; stderr:\n%s", strings.Join(args, " "), err, stderr.String())
				}
				last := lastLine(stderr.String())
				if !strings.Contains(last, path) || !strings.Contains(last, tt.want) {
					t.Errorf("visitors %s: last line %q, want it to name %s and say %q", args[0], last, path, tt.want)
				}
				if args[0] != "export" && !strings.Contains(last, "restore") && !strings.Contains(last, "refusing") {
					t.Errorf("visitors %s: %q does not say what to do", args[0], last)
				}
				if sum(t, path) != before {
					t.Fatalf("visitors %s changed the damaged file", args[0])
				}
			}
		})
	}
}

// pageInUse returns the number of a leaf page of the bbolt file at path
// that holds needle and is in use: the first copy of a key in the file
// may be on a page bbolt has freed (it copies pages on write), and a
// damaged free page is harmless, so the test must damage a live one.
func pageInUse(t *testing.T, path string, needle []byte) int {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	db, err := bolt.Open(path, 0o644, &bolt.Options{ReadOnly: true, PreLoadFreelist: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	page := -1
	db.View(func(tx *bolt.Tx) error {
		size := tx.DB().Info().PageSize
		for id := 2; (id+1)*size <= len(raw); id++ {
			info, err := tx.Page(id)
			if err != nil || info == nil || info.Type != "leaf" {
				continue
			}
			if bytes.Contains(raw[id*size:(id+1)*size], needle) {
				page = id
				return nil
			}
		}
		return nil
	})
	if page < 0 {
		t.Fatalf("no leaf page in use holds %q", needle)
	}
	return page
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}

func sum(t *testing.T, path string) [32]byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return sha256.Sum256(b)
}

// TestBinaryImportIsStrict feeds the real import a dump with one bad key
// among good ones: nothing is written and the message names the line.
func TestBinaryImportIsStrict(t *testing.T) {
	data := t.TempDir()
	dump := `{"format":"visitors-export-1","hits":3,"keys":[` + "\n" +
		`{"key":"good","total":1},` + "\n" +
		`{"key":"bad","total":1,"days":{"10000-01-01":1}}` + "\n]}\n"
	cmd := command(t, bin, "import", "-data", data)
	cmd.Stdin = strings.NewReader(dump)
	out, err := cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(out), "line 3") {
		t.Fatalf("import of a bad dump = %v\n%s\nwant an error naming line 3", err, out)
	}
	// Nothing was written: not even an empty store.
	if entries, err := os.ReadDir(data); err != nil || len(entries) != 0 {
		t.Errorf("after a refused import the data directory holds %v (%v), want nothing", entries, err)
	}
}

// numberAfter returns the decimal number that follows prefix in body.
func numberAfter(body, prefix string) (uint64, error) {
	i := strings.Index(body, prefix)
	if i < 0 {
		return 0, fmt.Errorf("%q has no %q", body, prefix)
	}
	digits := body[i+len(prefix):]
	end := strings.IndexFunc(digits, func(r rune) bool { return r < '0' || r > '9' })
	if end >= 0 {
		digits = digits[:end]
	}
	n, err := strconv.ParseUint(digits, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%q: the number after %q: %w", body, prefix, err)
	}
	return n, nil
}

// TestBinaryStartsOnDamagedHistoryThenRefusesWrites: a flipped byte in a
// day's count, on a page of history the start does not read, lets the
// binary start and answer; the check of the file after the start finds
// it: /healthz answers 503 naming it and what to do, a visit gets 503,
// nothing is written to the file, and visitors check names it.
func TestBinaryStartsOnDamagedHistoryThenRefusesWrites(t *testing.T) {
	dir := t.TempDir()
	p := servertest.Start(t, bin, rulesOff, "-data", dir, "-log-level", "off")
	for i := range 300 {
		mustGet(t, p.URL(fmt.Sprintf("/counter/name-%d.json", i)))
	}
	stop(t, p)
	path := filepath.Join(dir, "visitors.db")
	// name-7's count today: its key, the day, then the count, 1.
	day := binary.BigEndian.AppendUint32(nil, uint32(store.DayOf(time.Now())))
	dayRecord := append(append([]byte("name-7"), day...), 0, 0, 0, 0, 0, 0, 0, 1)
	page := pageInUse(t, path, dayRecord)
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	live := b[page*4096 : (page+1)*4096]
	live[bytes.Index(live, dayRecord)+len(dayRecord)-1] ^= 2
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	before := sum(t, path)

	p = servertest.Start(t, bin, rulesOff, "-data", dir, "-log-level", "error")
	if code, _, body := mustGet(t, p.URL("/counter/name-8.json")); code != 200 && code != 503 {
		t.Errorf("/counter/name-8.json at the start = %d %s, want 200 (or 503 once the check found the damage)", code, body)
	}
	var code int
	var body string
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if code, _, body = mustGet(t, p.AdminURL("/healthz")); code == 503 {
			break
		}
	}
	if code != 503 || !strings.Contains(body, `key "name-7" on`) || !strings.Contains(body, "restore") {
		t.Fatalf("/healthz = %d %q, want 503 naming name-7's day and what to do", code, body)
	}
	if code, _, body := mustGet(t, p.URL("/counter/name-9.json")); code != 503 {
		t.Errorf("a visit on a damaged store = %d %s, want 503", code, body)
	}
	if code, _, body := mustGet(t, p.URL("/counter/brand-new.json")); code != 503 {
		t.Errorf("a new key's visit on a damaged store = %d %s, want 503", code, body)
	}
	p.Stop(syscall.SIGTERM, 15*time.Second) // its last flush fails: the file is damaged
	if logged := p.Stdout() + p.Stderr(); !strings.Contains(logged, path) || !strings.Contains(logged, "restore") {
		t.Errorf("the log does not name %s and what to do:\n%s", path, logged)
	}
	if sum(t, path) != before {
		t.Fatal("the binary wrote the damaged file")
	}
	out, err := command(t, bin, "check", "-data", dir).CombinedOutput()
	if err == nil || !strings.Contains(string(out), `key "name-7" on`) {
		t.Errorf("visitors check = %v\n%s, want it to name name-7's day", err, out)
	}
}
