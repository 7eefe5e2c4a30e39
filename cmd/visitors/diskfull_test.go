//go:build linux

package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"visitors/internal/servertest"
)

// diskFullScript mounts a small tmpfs on the data directory inside a new
// user and mount namespace (no privileges needed), puts the sync mode's
// write-ahead log there at its full preallocated size (4 MiB, as
// boltstore makes it: a service that cannot preallocate it refuses to
// start), takes most of the rest with a filler file, and runs visitors.
const diskFullScript = `set -e
mount -t tmpfs -o size=5m tmpfs "$1"
head -c 4194304 /dev/zero > "$1/visitors.wal"
head -c 880000 /dev/zero > "$1/filler"
shift
exec "$@"`

// TestDiskFull fills the data directory's disk under the real binary: the
// flush fails with ENOSPC, /healthz says so with 503, batch mode keeps
// counting in memory, sync mode acknowledges only what its preallocated
// log made durable (it refuses once a pass can reach neither); once room
// is made, the retry writes everything and /healthz is 200 again.
func TestDiskFull(t *testing.T) {
	if _, err := exec.LookPath("unshare"); err != nil {
		t.Fatal("unshare (util-linux) is needed to mount a small tmpfs without privileges")
	}
	for _, durability := range []string{"batch", "sync"} {
		t.Run(durability, func(t *testing.T) { diskFull(t, durability) })
	}
}

func diskFull(t *testing.T, durability string) {
	dir := t.TempDir()
	wrapper := []string{"unshare", "--user", "--map-root-user", "--mount", "sh", "-c", diskFullScript, "sh", dir}
	p := servertest.StartWrapped(t, wrapper, bin, rulesOff, "-data", dir, "-durability", durability, "-log-level", "warn")
	// The tmpfs exists only in the process's mount namespace; reach it
	// through /proc.
	inside := filepath.Join(fmt.Sprintf("/proc/%d/root", p.Cmd.Process.Pid), dir)
	if _, err := os.Stat(filepath.Join(inside, "filler")); err != nil {
		t.Fatalf("cannot see the tmpfs from outside: %v", err)
	}

	var acked []string
	full := false
	for i := 0; i < 20000 && !full; i++ {
		name := fmt.Sprintf("%s-%05d", strings.Repeat("n", 110), i)
		code, _, body := mustGet(t, p.URL("/hello?name="+name))
		switch {
		case code == 200:
			acked = append(acked, name)
		case code == 503 && durability == "sync":
			if !strings.Contains(body, "not counted") {
				t.Fatalf("503 body %q does not say the visit was not counted", body)
			}
			full = true
		default:
			t.Fatalf("GET /hello = %d %q", code, body)
		}
		if i%50 == 49 {
			// Let a flush run first, so that what is acknowledged past
			// the point the disk filled up stays well below the room
			// the filler makes once it is removed.
			time.Sleep(150 * time.Millisecond)
			if code, _, _ := mustGet(t, p.AdminURL("/healthz")); code == 503 {
				full = true
			}
		}
	}
	if !full {
		t.Fatal("the disk never filled up")
	}
	code, _, body := mustGet(t, p.AdminURL("/healthz"))
	if code != 503 || !strings.Contains(body, "no space left on device") {
		t.Errorf("/healthz on a full disk = %d %q, want 503 naming ENOSPC", code, body)
	}
	if durability == "batch" {
		// Still counting, in memory.
		name := "while-full"
		if code, _, _ := mustGet(t, p.URL("/hello?name="+name)); code != 200 {
			t.Errorf("batch mode on a full disk: /hello = %d, want 200", code)
		}
		acked = append(acked, name)
	}

	if err := os.Remove(filepath.Join(inside, "filler")); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		if code, _, _ := mustGet(t, p.AdminURL("/healthz")); code == 200 {
			break
		}
		if time.Now().After(deadline) {
			_, _, hb := mustGet(t, p.AdminURL("/healthz"))
			fi, _ := os.Stat(filepath.Join(inside, "visitors.db"))
			var st syscall.Statfs_t
			syscall.Statfs(inside, &st)
			t.Fatalf("/healthz stayed 503 for 10s after room was made: %s; db %d bytes, free %d, acked %d", hb, fi.Size(), st.Bavail*uint64(st.Bsize), len(acked))
		}
		time.Sleep(50 * time.Millisecond)
	}
	if durability == "sync" {
		if code, _, _ := mustGet(t, p.URL("/hello?name=after")); code != 200 {
			t.Errorf("sync mode after room was made: /hello = %d, want 200", code)
		}
		acked = append(acked, "after")
	}

	// What was acknowledged is on disk: copy the file out of the tmpfs
	// (nothing is being written: every count is flushed) and export it.
	copyDir := t.TempDir()
	copyFile(t, filepath.Join(inside, "visitors.db"), filepath.Join(copyDir, "visitors.db"))
	copyFile(t, filepath.Join(inside, "visitors.wal"), filepath.Join(copyDir, "visitors.wal"))
	if err := p.Stop(syscall.SIGTERM, 15*time.Second); err != nil {
		t.Fatalf("SIGTERM: %v\n%s", err, p.Stderr())
	}
	out, err := command(t, bin, "export", "-data", copyDir).Output()
	if err != nil {
		t.Fatalf("export: %v", err)
	}
	var dump struct{ Keys []struct{ Key string } }
	if err := json.Unmarshal(out, &dump); err != nil {
		t.Fatal(err)
	}
	have := map[string]bool{}
	for _, k := range dump.Keys {
		have[k.Key] = true
	}
	for _, name := range acked {
		if !have[name] {
			t.Fatalf("acknowledged name %.20s… is not on disk after recovery (%d of %d on disk)", name, len(have), len(acked))
		}
	}
	t.Logf("%s: %d names acknowledged, all on disk after recovery", durability, len(acked))
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	src, err := os.Open(from)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	dst, err := os.Create(to)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(dst, src); err != nil {
		t.Fatal(err)
	}
	if err := dst.Close(); err != nil {
		t.Fatal(err)
	}
}
