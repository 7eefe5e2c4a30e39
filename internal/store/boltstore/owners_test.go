package boltstore

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"visitors/internal/store"
	"visitors/internal/store/storetest"
)

// ownerChildEnv names the directory the child of
// TestOwnerOpsSurviveSIGKILL writes its store in.
const ownerChildEnv = "BOLTSTORE_OWNER_KILL_DIR"

// ownerKillChild is the child's part: a sync store whose file never
// catches up on its own, visits in the log, then a Set to a lower total
// and a Delete; it says "ready" once both have returned, and waits for
// its SIGKILL.
func ownerKillChild(dir string) {
	s, err := Open(Options{Dir: dir, Durability: store.Sync, FlushInterval: time.Hour})
	if err != nil {
		fmt.Println("open:", err)
		os.Exit(2)
	}
	incr := func(key string, n int) {
		for range n {
			if _, err := storetest.Incr(ctx, s, []byte(key)); err != nil {
				fmt.Println("incr:", err)
				os.Exit(2)
			}
		}
	}
	incr("lowered", 50)
	incr("deleted", 20)
	incr("kept", 7)
	if _, err := s.Set(ctx, []byte("lowered"), 3); err != nil {
		fmt.Println("set:", err)
		os.Exit(2)
	}
	if _, err := s.Delete(ctx, []byte("deleted")); err != nil {
		fmt.Println("delete:", err)
		os.Exit(2)
	}
	incr("lowered", 1) // after the Set: in the log alone
	incr("kept", 1)
	fmt.Println("ready")
	select {} // until the SIGKILL
}

// TestOwnerOpsSurviveSIGKILL: in sync mode a Set to a lower total and a
// Delete are durable when they return, and the log's replay (which
// takes the larger of a record and the file) does not undo them: the
// process is killed with SIGKILL right after they return, while the log
// still holds records with the old, higher counts.
func TestOwnerOpsSurviveSIGKILL(t *testing.T) {
	if dir := os.Getenv(ownerChildEnv); dir != "" {
		ownerKillChild(dir)
		return
	}
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^TestOwnerOpsSurviveSIGKILL$")
	cmd.Env = append(os.Environ(), ownerChildEnv+"="+dir)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	if line != "ready\n" {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("the child said %q (%v), want ready", line, err)
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()

	// The log still holds records of lowered at 50 and deleted at 20.
	var oldRecords bool
	s := mustOpen(t, Options{Dir: dir})
	defer mustClose(t, s)
	if s.Stats().Replayed == 0 {
		t.Error("no log record was replayed: the visits after the Set were in the log alone")
	}
	data, err := os.ReadFile(filepath.Join(dir, LogName))
	if err != nil {
		t.Fatal(err)
	}
	oldRecords = bytes.Contains(data, []byte("deleted"))
	if !oldRecords {
		t.Error("the log holds no record of the deleted key: the test would not see a replay undo the Delete")
	}
	wantTotals(t, s, "after SIGKILL and restart", map[string]uint64{"lowered": 4, "deleted": 0, "kept": 8})
	if d := mustDays(t, s, []byte("deleted"), 2); !slices.Equal(d.Counts, []uint64{0, 0}) {
		t.Errorf("Days(deleted) = %v after restart, want zeros", d.Counts)
	}
	if d := mustDays(t, s, []byte("lowered"), 1); d.Counts[0] != 1 {
		t.Errorf("today's count of lowered = %d after restart, want 1 (Set cleared the days)", d.Counts[0])
	}
	if s.Keys() != 2 {
		t.Errorf("Keys() = %d after restart, want 2", s.Keys())
	}
}

// TestOwnerOpsWhileAKeyFails: while one key cannot be written the file
// stays behind the log (the key's acknowledged visits are in the log
// alone), so the full commit before an operation does not retire the old
// records; floors must keep their replay from raising a lowered key
// again or bringing a deleted one back, while the failing key's visits
// still replay.
func TestOwnerOpsWhileAKeyFails(t *testing.T) {
	s := openWithAFailingKey(t, t.TempDir(), "bad")
	mustIncrN(t, s, "bad", 2)
	mustIncrN(t, s, "lowered", 30)
	mustIncrN(t, s, "deleted", 5)
	mustSet(t, s, "lowered", 4)
	if _, err := s.Delete(ctx, []byte("deleted")); err != nil {
		t.Fatal(err)
	}
	if s.log.seq == s.log.applied {
		t.Fatal("the file caught up with the log although bad fails: the test sees no floor")
	}
	mustIncrN(t, s, "lowered", 1)
	crashed := crashCopy(t, s)
	var out bytes.Buffer
	if err := Check(crashed, &out, 0); err != nil {
		t.Errorf("Check of a store with floors: %v\n%s", err, out.String())
	}

	r := mustOpen(t, Options{Dir: crashed})
	wantTotals(t, r, "after a crash while bad failed,", map[string]uint64{"bad": 2, "lowered": 5, "deleted": 0})
	floors := countBucket(t, r.db, bucketFloors)
	mustClose(t, r)
	if floors != 0 {
		t.Errorf("%d floors left after the replay applied every record, want 0", floors)
	}

	// Once the key is written again the file holds every record, and the
	// floors go.
	setHooks(s, func(h *hooks) { h.putFault = nil })
	if err := s.Flush(); err != nil {
		t.Fatal(err)
	}
	if n := countBucket(t, s.db, bucketFloors); n != 0 {
		t.Errorf("%d floors left once the file caught up, want 0", n)
	}
	mustClose(t, s)
}

func countBucket(t *testing.T, db *bolt.DB, name []byte) int {
	t.Helper()
	n := 0
	err := db.View(func(tx *bolt.Tx) error {
		return tx.Bucket(name).ForEach(func(_, _ []byte) error { n++; return nil })
	})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func mustSet(t *testing.T, s *Store, key string, total uint64) store.Counts {
	t.Helper()
	c, err := s.Set(ctx, []byte(key), total)
	if err != nil {
		t.Fatalf("Set(%q, %d): %v", key, total, err)
	}
	return c
}

// TestLockedIncrTakesNoPass: a visit to a locked key is answered from
// memory in both modes: no pass, no sync visit counted.
func TestLockedIncrTakesNoPass(t *testing.T) {
	for _, d := range []store.Durability{store.Batch, store.Sync} {
		t.Run(d.String(), func(t *testing.T) {
			s := mustOpen(t, Options{Dir: t.TempDir(), Durability: d, FlushInterval: time.Hour})
			defer mustClose(t, s)
			mustIncrN(t, s, "k", 2)
			if _, err := s.Lock(ctx, []byte("k"), true); err != nil {
				t.Fatal(err)
			}
			before := s.Stats()
			for range 10 {
				if c := mustIncr(t, s, []byte("k")); c != (store.Counts{Total: 2, Today: 2, Locked: true}) {
					t.Fatalf("Incr(locked) = %+v", c)
				}
			}
			if after := s.Stats(); after.Passes != before.Passes || after.SyncVisits != before.SyncVisits {
				t.Errorf("10 visits to a locked key: stats %+v -> %+v, want no pass", before, after)
			}
		})
	}
}

// TestDeleteRemovesSketches: a key's unique-visitor sketches of every day
// go with it; another key's stay.
func TestDeleteRemovesSketches(t *testing.T) {
	s := mustOpen(t, Options{Dir: t.TempDir()})
	defer mustClose(t, s)
	day := store.DayOf(time.Now())
	for _, d := range []store.Day{day - 400, day - 1, day} {
		err := s.PutSketches(d, []store.Sketch{{Key: []byte("a"), Data: []byte("sa")}, {Key: []byte("a\x00"), Data: []byte("sb")}, {Key: []byte{}, Data: []byte("se")}})
		if err != nil {
			t.Fatal(err)
		}
	}
	mustIncrN(t, s, "a", 1)
	if ok, err := s.Delete(ctx, []byte("a")); err != nil || !ok {
		t.Fatalf("Delete(a) = %v, %v", ok, err)
	}
	wantSketches(t, s, "after Delete(a)", day, 401, []int{0, 399, 400}, map[string]bool{"a": false, "a\x00": true, "": true})
}

// wantSketches checks, for each key of present, that its sketch is there
// or not as present says on the days at the indexes in days of the n
// SketchDays returns from day. when says after what, for the error.
func wantSketches(t *testing.T, s *Store, when string, day store.Day, n int, days []int, present map[string]bool) {
	t.Helper()
	for key, want := range present {
		got, err := s.SketchDays([]byte(key), day, n)
		if err != nil {
			t.Fatal(err)
		}
		for _, i := range days {
			if (got[i] != nil) != want {
				t.Errorf("%s, the sketch of %q on day %d: %q, want present %v", when, key, i, got[i], want)
			}
		}
	}
}

// ownedDir returns the directory of a closed store filled by fillOwned,
// and its clock.
func ownedDir(t *testing.T) (string, *storetest.Clock) {
	t.Helper()
	dir := t.TempDir()
	clock := storetest.NewClock(storetest.At(0, "12:00"))
	s := mustOpen(t, Options{Dir: dir, Now: clock.Now})
	fillOwned(t, s, clock)
	mustClose(t, s)
	return dir, clock
}

// fillOwned makes a store in both modes' shape: keys over two days, a
// locked key, a key set lower, a deleted key, tokens and /hi numbers.
func fillOwned(t *testing.T, s *Store, clock *storetest.Clock) {
	t.Helper()
	mustIncrN(t, s, "a", 3)
	mustIncrN(t, s, "b", 2)
	mustIncrN(t, s, "gone", 2)
	clock.Add(24 * time.Hour)
	s.Rollover()
	mustIncrN(t, s, "a", 1)
	mustIncrN(t, s, "", 1)
	mustIncrN(t, s, "set", 9)
	mustSet(t, s, "set", 4)
	if _, err := s.Lock(ctx, []byte("b"), true); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Lock(ctx, []byte("locked-new"), true); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Delete(ctx, []byte("gone")); err != nil {
		t.Fatal(err)
	}
	for range 5 {
		mustHit(t, s)
	}
	tk := store.Token{ID: "t1", Name: "ci", Prefix: "a", Hash: sha256.Sum256([]byte("x")), Created: clock.Now()}
	if err := s.PutToken(ctx, tk); err != nil {
		t.Fatal(err)
	}
}

// TestOnlineExportEqualsOffline: a store at rest exports the same dump
// online as the offline command does after it stops, locks included.
func TestOnlineExportEqualsOffline(t *testing.T) {
	for _, d := range []store.Durability{store.Batch, store.Sync} {
		t.Run(d.String(), func(t *testing.T) {
			dir := t.TempDir()
			clock := storetest.NewClock(storetest.At(0, "12:00"))
			s := mustOpen(t, Options{Dir: dir, Durability: d, Now: clock.Now, FlushInterval: time.Hour})
			fillOwned(t, s, clock)
			var online, offline bytes.Buffer
			if err := s.Export(ctx, &online); err != nil {
				t.Fatal(err)
			}
			mustClose(t, s)
			if err := (Offline{Dir: dir}).Export(&offline); err != nil {
				t.Fatal(err)
			}
			if online.String() != offline.String() {
				t.Errorf("online export:\n%s\noffline export:\n%s", online.String(), offline.String())
			}
			for _, want := range []string{`"hits":5`, storetest.Dated(`{"key":"b","total":2,"days":{"$D":2},"locked":true}`), `{"key":"locked-new","total":0,"locked":true}`, `{"key":"set","total":4}`} {
				if !strings.Contains(online.String(), want) {
					t.Errorf("the export lacks %s:\n%s", want, online.String())
				}
			}
			for _, not := range []string{`"gone"`, `t1`} {
				if strings.Contains(online.String(), not) {
					t.Errorf("the export holds %s:\n%s", not, online.String())
				}
			}
			entries, err := os.ReadDir(dir)
			if err != nil {
				t.Fatal(err)
			}
			for _, e := range entries {
				if strings.HasSuffix(e.Name(), ".tmp") {
					t.Errorf("export left %s behind", e.Name())
				}
			}
		})
	}
}

// exportOf returns the online export of s.
func exportOf(t *testing.T, s *Store) string {
	t.Helper()
	var b bytes.Buffer
	if err := s.Export(ctx, &b); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// TestOnlineImportRefusesAsAWhole: a dump refused anywhere, by syntax,
// by a check of one key, or by a count the addition would overflow (a
// refusal only the store's own counts can make), changes nothing and
// says ErrInvalidDump.
func TestOnlineImportRefusesAsAWhole(t *testing.T) {
	good := storetest.Dated(`{"key":"a","total":5,"days":{"$D+1":5},"locked":true},{"key":"new","total":1}`)
	tests := []struct{ name, dump string }{
		{"not JSON", `hello`},
		{"unknown field", `{"format":"visitors-export-1","hits":1,"keys":[` + good + `],"extra":1}`},
		{"a bad key after good ones", `{"format":"visitors-export-1","hits":1,"keys":[` + good + `,{"key":"` + strings.Repeat("k", 129) + `","total":1}]}`},
		{"days above the total", `{"format":"visitors-export-1","hits":1,"keys":[` + good + storetest.Dated(`,{"key":"x","total":1,"days":{"$D+1":2}}]}`)},
		{"a bad date", `{"format":"visitors-export-1","hits":1,"keys":[` + good + `,{"key":"x","total":1,"days":{"2026-13-01":1}}]}`},
		{"a merge that overflows", `{"format":"visitors-export-1","hits":1,"keys":[` + good + `,{"key":"full","total":10}]}`},
		{"more after the end", `{"format":"visitors-export-1","hits":1,"keys":[` + good + `]} {}`},
		{"no format", `{"hits":1,"keys":[` + good + `]}`},
		{"the wrong format", `{"format":"visitors-export-9","hits":1,"keys":[]}`},
		{"a lock that is not a bool", `{"format":"visitors-export-1","hits":1,"keys":[{"key":"a","total":1,"locked":1}]}`},
	}
	for _, d := range []store.Durability{store.Batch, store.Sync} {
		t.Run(d.String(), func(t *testing.T) {
			dir := t.TempDir()
			clock := storetest.NewClock(storetest.At(0, "12:00"))
			s := mustOpen(t, Options{Dir: dir, Durability: d, Now: clock.Now, FlushInterval: time.Hour})
			defer mustClose(t, s)
			fillOwned(t, s, clock)
			mustSet(t, s, "full", store.MaxTotal-5)
			before := exportOf(t, s)
			for _, tt := range tests {
				for _, replace := range []bool{false, true} {
					if tt.name == "a merge that overflows" && replace {
						continue // replacing does not add
					}
					err := s.Import(ctx, strings.NewReader(tt.dump), replace)
					if !errors.Is(err, store.ErrInvalidDump) {
						t.Errorf("%s (replace %v): Import = %v, want ErrInvalidDump", tt.name, replace, err)
					}
					if after := exportOf(t, s); after != before {
						t.Errorf("%s (replace %v): a refused import changed the store:\n%s\nwas:\n%s", tt.name, replace, after, before)
					}
					if s.Keys() != 6 {
						t.Errorf("%s: Keys() = %d after a refused import, want 6", tt.name, s.Keys())
					}
				}
			}
			if err := s.Health(); err != nil {
				t.Errorf("Health() = %v after refused imports, want nil: the input's fault, not the store's", err)
			}
			entries, _ := os.ReadDir(dir)
			for _, e := range entries {
				if strings.HasSuffix(e.Name(), ".tmp") {
					t.Errorf("import left %s behind", e.Name())
				}
			}
		})
	}
}

// TestOnlineImportMergeAndReplace: merge adds counts and joins locks;
// replace makes the store the dump (keys not in it deleted, with their
// sketches), keeps the tokens; the /hi counter is the larger; all of it
// survives a restart, and in sync mode a crash.
func TestOnlineImportMergeAndReplace(t *testing.T) {
	dump := storetest.Dated(`{"format":"visitors-export-1","hits":100,"keys":[
{"key":"a","total":5,"days":{"$D":2,"$D+1":3}},
{"key":"c","total":1,"days":{"$D+1":1},"locked":true}
]}`)
	type want struct {
		total, today uint64
		locked       bool
	}
	tests := []struct {
		replace bool
		keys    map[string]want
		days    []uint64 // a's last two days
	}{
		{false, map[string]want{"a": {9, 4, false}, "b": {2, 0, true}, "c": {1, 1, true}, "set": {4, 0, false}, "": {1, 1, false}, "locked-new": {0, 0, true}}, []uint64{5, 4}},
		{true, map[string]want{"a": {5, 3, false}, "c": {1, 1, true}}, []uint64{2, 3}},
	}
	for _, d := range []store.Durability{store.Batch, store.Sync} {
		for _, tt := range tests {
			t.Run(fmt.Sprintf("%s/replace=%v", d, tt.replace), func(t *testing.T) {
				tt.keys, tt.days = maps.Clone(tt.keys), slices.Clone(tt.days)
				dir := t.TempDir()
				clock := storetest.NewClock(storetest.At(0, "12:00"))
				o := Options{Dir: dir, Durability: d, Now: clock.Now, FlushInterval: time.Hour}
				s := mustOpen(t, o)
				fillOwned(t, s, clock)
				today := store.DayOf(clock.Now())
				if err := s.PutSketches(today, []store.Sketch{{Key: []byte("a"), Data: []byte("sa")}, {Key: []byte("b"), Data: []byte("sb")}}); err != nil {
					t.Fatal(err)
				}
				if err := s.Import(ctx, strings.NewReader(dump), tt.replace); err != nil {
					t.Fatal(err)
				}
				check := func(when string, s *Store) {
					t.Helper()
					for k, w := range tt.keys {
						if c := mustGet(t, s, []byte(k)); c != (store.Counts{Total: w.total, Today: w.today, Locked: w.locked}) {
							t.Errorf("%s: Get(%q) = %+v, want %+v", when, k, c, w)
						}
					}
					if s.Keys() != len(tt.keys) {
						t.Errorf("%s: Keys() = %d, want %d", when, s.Keys(), len(tt.keys))
					}
					if dd := mustDays(t, s, []byte("a"), 2); !slices.Equal(dd.Counts, tt.days) {
						t.Errorf("%s: Days(a) = %v, want %v", when, dd.Counts, tt.days)
					}
					if tks, _ := s.Tokens(ctx); len(tks) != 1 {
						t.Errorf("%s: %d tokens, want the 1 kept", when, len(tks))
					}
					sk, err := s.SketchDays([]byte("b"), today, 1)
					if err != nil {
						t.Fatal(err)
					}
					if (sk[0] != nil) == tt.replace {
						t.Errorf("%s: b's sketch %q; a replace drops it, a merge keeps it", when, sk[0])
					}
				}
				check("after the import", s)
				if n := mustHit(t, s); n != 101 {
					t.Errorf("Hit() after importing hits 100 onto 5 = %d, want 101", n)
				}
				mustIncrN(t, s, "a", 1)
				tt.keys["a"] = want{tt.keys["a"].total + 1, tt.keys["a"].today + 1, false}
				tt.days[1]++
				if d == store.Sync {
					crashed := crashCopy(t, s)
					r := mustOpen(t, Options{Dir: crashed, Now: clock.Now})
					check("after a crash", r)
					mustClose(t, r)
				}
				mustClose(t, s)
				s = mustOpen(t, o)
				defer mustClose(t, s)
				check("after a restart", s)
				if n := mustHit(t, s); n != 102 {
					t.Errorf("Hit() after the restart = %d, want 102", n)
				}
			})
		}
	}
}

// TestOnlineImportMergeLosesNoRacingVisit: batch visits to a key keep
// coming while a merge import adds to it; every acknowledged visit is
// counted, before the import or forwarded after it.
func TestOnlineImportMergeLosesNoRacingVisit(t *testing.T) {
	storetest.NoDate(t)
	dir := t.TempDir()
	s := mustOpen(t, Options{Dir: dir, FlushInterval: time.Millisecond})
	mustIncrN(t, s, "a", 3)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	acked := storetest.VisitUntil(t, s, []byte("a"), stop, &wg, nil)
	dump := `{"format":"visitors-export-1","hits":0,"keys":[{"key":"a","total":1000}]}`
	for range 5 {
		time.Sleep(2 * time.Millisecond)
		if err := s.Import(ctx, strings.NewReader(dump), false); err != nil {
			t.Fatal(err)
		}
	}
	close(stop)
	wg.Wait()
	if err := s.Flush(); err != nil { // forwards what raced with the last import
		t.Fatal(err)
	}
	want := 3 + uint64(acked.Load()) + 5000
	if c := mustGet(t, s, []byte("a")); c.Total != want {
		t.Errorf("a = %d, want %d (3 + %d acknowledged visits + 5 imports of 1000)", c.Total, want, acked.Load())
	}
	mustClose(t, s)
	if n := readTotal(t, dir, "a"); n != want {
		t.Errorf("after a restart a = %d, want %d", n, want)
	}
}

// TestOfflineBackupCarriesLocks: the offline export writes locks, the
// offline import restores them (a merge keeps a lock either side has),
// and an offline replace keeps the tokens.
func TestOfflineBackupCarriesLocks(t *testing.T) {
	src, clock := ownedDir(t)
	var dump bytes.Buffer
	if err := (Offline{Dir: src}).Export(&dump); err != nil {
		t.Fatal(err)
	}
	for _, replace := range []bool{false, true} {
		dst := t.TempDir()
		d := mustOpen(t, Options{Dir: dst, Now: clock.Now})
		mustIncrN(t, d, "z", 1)
		if _, err := d.Lock(ctx, []byte("z"), true); err != nil {
			t.Fatal(err)
		}
		if err := d.PutToken(ctx, store.Token{ID: "mine", Created: clock.Now()}); err != nil {
			t.Fatal(err)
		}
		mustClose(t, d)
		if err := (Offline{Dir: dst}).Import(bytes.NewReader(dump.Bytes()), replace); err != nil {
			t.Fatal(err)
		}
		d = mustOpen(t, Options{Dir: dst, Now: clock.Now})
		for k, locked := range map[string]bool{"a": false, "b": true, "locked-new": true} {
			if c := mustGet(t, d, []byte(k)); c.Locked != locked {
				t.Errorf("replace %v: %s locked = %v, want %v", replace, k, c.Locked, locked)
			}
		}
		if c := mustGet(t, d, []byte("z")); c.Locked == replace {
			t.Errorf("replace %v: z = %+v: a merge keeps its lock, a replace deletes it", replace, c)
		}
		if tks, _ := d.Tokens(ctx); len(tks) != 1 || tks[0].ID != "mine" {
			t.Errorf("replace %v: tokens %v, want the store's own kept", replace, tks)
		}
		mustClose(t, d)
	}
}

// TestCheckSeesLocksAndTokens: check accepts a store with locks and
// tokens and counts them; a flipped bit in a lock or a token record is
// reported, naming it.
func TestCheckSeesLocksAndTokens(t *testing.T) {
	for _, tc := range []struct {
		name string
		rec  func() []byte // the stored record to damage
		want string
	}{
		{"lock", func() []byte { kp := keyPrefix([]byte("b")); return record(tagLocks, kp, 1) }, `the lock of key "b"`},
		{"token", func() []byte {
			kp := keyPrefix([]byte("t1"))
			return encodeToken(kp, store.Token{ID: "t1", Name: "ci", Prefix: "a", Hash: sha256.Sum256([]byte("x")), Created: storetest.At(1, "12:00")})
		}, `the token "t1"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir, _ := ownedDir(t)
			var out bytes.Buffer
			if err := Check(dir, &out, 0); err != nil || !strings.Contains(out.String(), "2 locked keys, 1 tokens") {
				t.Fatalf("Check of a sound store with locks and tokens = %v, %q", err, out.String())
			}
			flipAll(t, filepath.Join(dir, FileName), tc.rec(), len(tc.rec())-6)
			out.Reset()
			err := Check(dir, &out, 0)
			if err == nil || !strings.Contains(out.String(), tc.want) {
				t.Errorf("Check of a damaged %s record = %v, %q; want it named: %s", tc.name, err, out.String(), tc.want)
			}
			if _, err := Open(Options{Dir: dir}); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Open of a damaged %s record = %v, want it refused, naming %s", tc.name, err, tc.want)
			}
		})
	}
}

// flipAll flips the low bit of byte i of every place where the file at
// path holds want (a freed page may hold an old copy).
func flipAll(t *testing.T, path string, want []byte, i int) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for at := 0; ; {
		j := bytes.Index(b[at:], want)
		if j < 0 {
			break
		}
		b[at+j+i] ^= 1
		at += j + len(want)
		n++
	}
	if n == 0 {
		t.Fatalf("%s does not hold %q", path, want)
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestTokenEncoding: every token reads back as it was stored; a record
// cut short or with trailing bytes is refused.
func TestTokenEncoding(t *testing.T) {
	tests := []store.Token{
		{},
		{ID: "a", Name: "日本 \x00", Prefix: "octocat/", Hash: sha256.Sum256([]byte("s")), Created: storetest.At(0, "12:00:00.000000123")},
		{ID: strings.Repeat("i", store.MaxKeyBytes), Name: strings.Repeat("n", maxTokenField), Created: time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC)},
		{ID: "old", Created: time.Date(1960, 1, 1, 0, 0, 0, 999999999, time.UTC)},
	}
	for _, tk := range tests {
		k := keyPrefix([]byte(tk.ID))
		v := encodeToken(k, tk)
		got, err := decodeToken(k, v)
		if err != nil || got.ID != tk.ID || got.Name != tk.Name || got.Prefix != tk.Prefix || got.Hash != tk.Hash || !got.Created.Equal(tk.Created) {
			t.Errorf("decode(encode(%+v)) = %+v, %v", tk, got, err)
		}
		if _, err := decodeToken(k, v[:len(v)-5]); err == nil {
			t.Errorf("a record of %q cut short was accepted", tk.ID)
		}
		if _, err := decodeToken(keyPrefix([]byte(tk.ID+"x")), v); err == nil {
			t.Errorf("a record of %q under another id was accepted", tk.ID)
		}
	}
}

// BenchmarkList is a page of the owner's listing from a store of a
// million keys: one walk of the map. With -short (./scripts/test.sh's
// pass that runs every benchmark once) the store holds 10,000: making a
// million and writing them at Close took 79 s of that pass on a busy
// machine. Its prefix then is a digit shorter, so that it lists 11 keys
// at either size, not none.
func BenchmarkList(b *testing.B) {
	s := openBench(b, Options{FlushInterval: time.Hour})
	keys, prefix := 1_000_000, "user12345"
	if testing.Short() {
		keys, prefix = 10_000, "user123"
	}
	for i := range keys {
		if _, err := storetest.Incr(ctx, s, fmt.Appendf(nil, "user%d/repo", i)); err != nil {
			b.Fatal(err)
		}
	}
	for _, bc := range []struct {
		name          string
		prefix, after []byte
		limit, want   int // want: the keys listed
	}{
		{"first100", nil, nil, 100, 100},
		{"max", nil, nil, store.MaxList, store.MaxList},
		{"prefix", []byte(prefix), nil, 100, 11},
		{"after", nil, []byte("user5"), 100, 100},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			var page []store.Entry
			for b.Loop() {
				var err error
				if page, err = s.List(ctx, bc.prefix, bc.after, bc.limit); err != nil {
					b.Fatal(err)
				}
			}
			if len(page) != bc.want {
				b.Fatalf("List(%q, %q, %d) listed %d keys, want %d", bc.prefix, bc.after, bc.limit, len(page), bc.want)
			}
		})
	}
}

// TestRetiredEntryIsNeverWritten: a batch visit that loaded a key's
// entry before Delete (or Set) and counts on it after is never written
// back by a later pass: it is ordered before the operation.
func TestRetiredEntryIsNeverWritten(t *testing.T) {
	for _, op := range []string{"delete", "set"} {
		t.Run(op, func(t *testing.T) {
			dir := t.TempDir()
			s := mustOpen(t, Options{Dir: dir, FlushInterval: time.Hour})
			mustIncrN(t, s, "k", 5)
			e := s.keys.Load([]byte("k")) // a visit in flight holds it
			if op == "delete" {
				if _, err := s.Delete(ctx, []byte("k")); err != nil {
					t.Fatal(err)
				}
			} else {
				mustSet(t, s, "k", 1)
			}
			e.Add(s.cal.Today()) // the visit counts now, on the entry it loaded
			s.markDirty(e)
			if err := s.Flush(); err != nil {
				t.Fatal(err)
			}
			want := map[string]uint64{"delete": 0, "set": 1}[op]
			if c := mustGet(t, s, []byte("k")); c.Total != want {
				t.Errorf("after the visit in flight and a pass, k = %d, want %d", c.Total, want)
			}
			mustClose(t, s)
			if n := readTotal(t, dir, "k"); n != want {
				t.Errorf("on disk k = %d, want %d: a pass wrote the retired entry", n, want)
			}
		})
	}
}

// TestCompareFileIsTheFileOrder: the order a pass writes its keys in is
// the order of their records in the file (bbolt's byte order of
// keyPrefix), for the hostile keys, both sides of the uvarint's second
// byte (127 and 128 bytes), and random keys.
func TestCompareFileIsTheFileOrder(t *testing.T) {
	keys := storetest.HostileKeys()
	keys = append(keys, bytes.Repeat([]byte("z"), 127), bytes.Repeat([]byte("a"), 128), bytes.Repeat([]byte("\xff"), 1))
	rng := rand.New(rand.NewPCG(1, 2))
	for range 300 {
		k := make([]byte, rng.IntN(store.MaxKeyBytes+1))
		for i := range k {
			k[i] = byte(rng.IntN(256))
		}
		keys = append(keys, k)
	}
	for _, a := range keys {
		for _, b := range keys {
			want := bytes.Compare(keyPrefix(a), keyPrefix(b))
			if got := compareFile(string(a), string(b)); got != want {
				t.Fatalf("compareFile(%q, %q) = %d, want %d as the file orders them", a, b, got, want)
			}
		}
	}
}

// TestOnlineImportInAnyOrder: a dump whose keys come in any order (a
// Redis export's, a hand-made one) imports
// whole: every key's total, days and lock, and the file, read back after
// a reopen, holds the same.
func TestOnlineImportInAnyOrder(t *testing.T) {
	dir := t.TempDir()
	s := mustOpen(t, Options{Dir: dir, FlushInterval: time.Hour})
	rng := rand.New(rand.NewPCG(3, 4))
	keys := storetest.HostileKeys()
	seen := map[string]bool{}
	for i := range 300 {
		k := fmt.Appendf(nil, "k%d/%s", rng.IntN(1000), strings.Repeat("x", i%40))
		if !seen[string(k)] { // a dump gives each key once
			seen[string(k)] = true
			keys = append(keys, k)
		}
	}
	rng.Shuffle(len(keys), func(i, j int) { keys[i], keys[j] = keys[j], keys[i] })
	want := map[string]uint64{}
	var b strings.Builder
	b.WriteString(`{"format":"visitors-export-1","hits":7,"keys":[`)
	for i, k := range keys {
		if i > 0 {
			b.WriteString(",")
		}
		kj, _ := json.Marshal(string(k))
		fmt.Fprintf(&b, "\n{\"key\":%s,\"total\":%d,\"days\":{\"%s\":1},\"locked\":%v}", kj, i+1, storetest.Date(0), i%7 == 0)
		want[string(k)] += uint64(i + 1)
	}
	b.WriteString("\n]}")
	if err := s.Import(ctx, strings.NewReader(b.String()), false); err != nil {
		t.Fatal(err)
	}
	check := func(when string) {
		t.Helper()
		for k, total := range want {
			if got := mustGet(t, s, []byte(k)); got.Total != total {
				t.Errorf("%s: Get(%q) = %+v, want total %d", when, k, got, total)
			}
		}
		wantKeys(t, s, len(want), when)
	}
	check("after the import")
	s = reopen(t, s, Options{Dir: dir, FlushInterval: time.Hour})
	defer mustClose(t, s)
	check("after reopening")
}

// TestTokenRecordVersions: a token record of version 1, as every
// visitors before exact tokens wrote it (built here byte by byte), reads
// back as a prefix token; a prefix token is still written as version 1,
// which those read; an exact one is version 2 and keeps its flag; flags
// this version does not know are refused.
func TestTokenRecordVersions(t *testing.T) {
	k := keyPrefix([]byte("0cd87274d67084ca"))
	var hash [32]byte
	for i := range hash {
		hash[i] = byte(i)
	}
	created := storetest.At(0, "12:00:00.000000005")
	v1 := []byte{1, 2, 'c', 'i', 8}
	v1 = append(v1, "octocat/"...)
	v1 = append(v1, hash[:]...)
	v1 = binary.AppendVarint(v1, created.Unix())
	v1 = binary.AppendUvarint(v1, 5)
	v1 = binary.BigEndian.AppendUint32(v1, tokenSum(k, v1))
	got, err := decodeToken(k, v1)
	want := store.Token{ID: "0cd87274d67084ca", Name: "ci", Prefix: "octocat/", Hash: hash, Created: created}
	if err != nil || got != want {
		t.Fatalf("decodeToken(version 1) = %+v, %v; want %+v", got, err, want)
	}
	if enc := encodeToken(k, want); !bytes.Equal(enc, v1) {
		t.Errorf("encodeToken(a prefix token) = %x, want version 1 %x", enc, v1)
	}
	exact := want
	exact.Exact = true
	enc := encodeToken(k, exact)
	if enc[0] != 2 {
		t.Errorf("encodeToken(an exact token) is version %d, want 2", enc[0])
	}
	if got, err := decodeToken(k, enc); err != nil || got != exact {
		t.Errorf("decodeToken(encodeToken(exact)) = %+v, %v; want %+v", got, err, exact)
	}
	bad := slices.Clone(enc[:len(enc)-4])
	bad[1+1+2+1+8] = 3 // the flags byte: a bit not known
	bad = binary.BigEndian.AppendUint32(bad, tokenSum(k, bad))
	if _, err := decodeToken(k, bad); err == nil {
		t.Errorf("decodeToken(unknown flags) = nil error, want a refusal")
	}
}

// TestNegativeAddWhileAKeyFailsSurvivesACrash: a negative Add lowers a
// key as Set does, and needs the same floor: while another key cannot be
// written the file stays behind the log, whose records of the key hold
// its counts from before the Add; without the floor a crash replays
// them over the lowered counts (the Add is undone).
// Found by review (was TestReviewNegativeAddWhileAKeyFails).
func TestNegativeAddWhileAKeyFailsSurvivesACrash(t *testing.T) {
	s := openWithAFailingKey(t, t.TempDir(), "bad")
	mustIncrN(t, s, "bad", 2)
	mustIncrN(t, s, "lowered", 30)
	if c, err := s.Add(ctx, []byte("lowered"), -26); err != nil || c.Total != 4 {
		t.Fatalf("Add(-26) = %+v, %v; want a total of 4", c, err)
	}
	if s.log.seq == s.log.applied {
		t.Fatal("the file caught up with the log although bad fails: the test sees no floor")
	}
	mustIncrN(t, s, "lowered", 1)
	crashed := crashCopy(t, s)
	r := mustOpen(t, Options{Dir: crashed})
	for k, want := range map[string]uint64{"bad": 2, "lowered": 5} {
		if c := mustGet(t, r, []byte(k)); c.Total != want || k == "lowered" && c.Today != want {
			t.Errorf("after a crash while bad failed, %s = %+v, want a total and today of %d", k, c, want)
		}
	}
	mustClose(t, r)
	setHooks(s, func(h *hooks) { h.putFault = nil })
	mustClose(t, s)
}

// TestPositiveAddWhileAKeyFailsCountsOnceAfterACrash: a positive Add
// while another key cannot be written (the file behind the log) is
// neither lost nor counted twice by the replay after a crash.
// Found by review (was TestReviewPositiveAddWhileAKeyFails).
func TestPositiveAddWhileAKeyFailsCountsOnceAfterACrash(t *testing.T) {
	s := openWithAFailingKey(t, t.TempDir(), "bad")
	mustIncrN(t, s, "bad", 2)
	mustIncrN(t, s, "raised", 30)
	if c, err := s.Add(ctx, []byte("raised"), 5); err != nil || c.Total != 35 {
		t.Fatalf("Add(5) = %+v, %v; want a total of 35", c, err)
	}
	mustIncrN(t, s, "raised", 1)
	if _, err := s.Add(ctx, []byte("fresh"), 7); err != nil {
		t.Fatal(err)
	}
	mustIncrN(t, s, "fresh", 1)
	crashed := crashCopy(t, s)
	r := mustOpen(t, Options{Dir: crashed})
	for k, want := range map[string]uint64{"bad": 2, "raised": 36, "fresh": 8} {
		if c := mustGet(t, r, []byte(k)); c.Total != want || k != "bad" && c.Today != want {
			t.Errorf("after a crash while bad failed, %s = %+v, want a total and today of %d", k, c, want)
		}
	}
	mustClose(t, r)
	setHooks(s, func(h *hooks) { h.putFault = nil })
	mustClose(t, s)
}

// Token records (found by mutation testing, issue 16): each test below
// states the promise a surviving mutant broke unseen.

// TestTokenRecordsRefused: a token record whose checksum is right but
// whose fields are not (another version, a field longer than the record,
// a short hash, a missing or extra field, nanoseconds past a second) is
// refused, never read as a token; the shortest well-formed record and
// the largest nanoseconds are read.
func TestTokenRecordsRefused(t *testing.T) {
	k := keyPrefix([]byte("id"))
	seal := func(data []byte) []byte {
		return binary.BigEndian.AppendUint32(bytes.Clone(data), tokenSum(k, data))
	}
	hash := bytes.Repeat([]byte{7}, 32)
	// fields: version, name, prefix, hash, seconds, nanoseconds.
	rec := func(version byte, name, prefix string, h []byte, tail ...[]byte) []byte {
		v := []byte{version}
		v = binary.AppendUvarint(v, uint64(len(name)))
		v = append(v, name...)
		v = binary.AppendUvarint(v, uint64(len(prefix)))
		v = append(v, prefix...)
		v = append(v, h...)
		for _, b := range tail {
			v = append(v, b...)
		}
		return v
	}
	sec := binary.AppendVarint(nil, 1_700_000_000)
	nsec := func(n uint64) []byte { return binary.AppendUvarint(nil, n) }

	good := []struct {
		name string
		data []byte
		want store.Token
	}{
		{"shortest", rec(1, "", "", hash, sec, nsec(0)), store.Token{ID: "id", Hash: [32]byte(hash), Created: time.Unix(1_700_000_000, 0).UTC()}},
		{"last nanosecond", rec(1, "n", "p/", hash, sec, nsec(999_999_999)), store.Token{ID: "id", Name: "n", Prefix: "p/", Hash: [32]byte(hash), Created: time.Unix(1_700_000_000, 999_999_999).UTC()}},
	}
	for _, tt := range good {
		got, err := decodeToken(k, seal(tt.data))
		if err != nil || got != tt.want {
			t.Errorf("%s: decodeToken = %+v, %v; want %+v", tt.name, got, err, tt.want)
		}
	}

	bad := []struct {
		name string
		data []byte
	}{
		{"version 2", rec(2, "", "", hash, sec, nsec(0))},
		{"version 0", rec(0, "", "", hash, sec, nsec(0))},
		{"name longer than the record", append([]byte{1, 5}, "abc"...)},
		{"name one byte longer than the rest", append([]byte{1, 4}, "abc"...)},
		{"no name length", []byte{1}},
		{"prefix longer than the record", append([]byte{1, 0, 40}, hash...)},
		{"hash of 31 bytes", rec(1, "", "", hash[:31])},
		{"hash and nothing after", rec(1, "", "", hash)},
		{"no nanoseconds", rec(1, "", "", hash, sec)},
		{"a second of nanoseconds", rec(1, "", "", hash, sec, nsec(1_000_000_000))},
		{"a byte after the nanoseconds", rec(1, "", "", hash, sec, nsec(5), []byte{0})},
		{"seconds cut", rec(1, "", "", hash, []byte{0x80})},
	}
	for _, tt := range bad {
		if got, err := decodeToken(k, seal(tt.data)); err == nil {
			t.Errorf("%s: decodeToken(% x) = %+v, want an error", tt.name, tt.data, got)
		}
	}
	for n := range 5 {
		if _, err := decodeToken(k, make([]byte, n)); err == nil {
			t.Errorf("decodeToken of %d zero bytes: no error", n)
		}
	}
}

// TestPutTokenBounds: an id of store.MaxKeyBytes and a name and prefix of
// maxTokenField bytes are stored and read back after a restart, and
// DeleteToken deletes it; one byte more of any is refused and stores
// nothing.
func TestPutTokenBounds(t *testing.T) {
	dir := t.TempDir()
	s := mustOpen(t, Options{Dir: dir})
	longest := store.Token{
		ID:      strings.Repeat("i", store.MaxKeyBytes),
		Name:    strings.Repeat("n", maxTokenField),
		Prefix:  strings.Repeat("p", maxTokenField),
		Created: storetest.At(4, "00:00"),
	}
	if err := s.PutToken(ctx, longest); err != nil {
		t.Fatalf("PutToken of the longest fields: %v", err)
	}
	for _, tk := range []store.Token{
		{ID: longest.ID + "i"},
		{ID: "name", Name: longest.Name + "n"},
		{ID: "prefix", Prefix: longest.Prefix + "p"},
	} {
		if err := s.PutToken(ctx, tk); err == nil {
			t.Errorf("PutToken(id %d bytes, name %d, prefix %d) = nil, want an error", len(tk.ID), len(tk.Name), len(tk.Prefix))
		}
	}
	s = reopen(t, s, Options{Dir: dir})
	defer mustClose(t, s)
	got, err := s.Tokens(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0] != longest {
		t.Errorf("Tokens after a restart = %d tokens, want only the longest one", len(got))
	}
	if found, err := s.DeleteToken(ctx, longest.ID); err != nil || !found {
		t.Errorf("DeleteToken of an id of %d bytes = %v, %v; want true", len(longest.ID), found, err)
	}
	if got, err := s.Tokens(ctx); err != nil || len(got) != 0 {
		t.Errorf("Tokens after DeleteToken = %d tokens, %v; want none", len(got), err)
	}
}
