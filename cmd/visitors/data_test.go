package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"visitors/internal/servertest"
)

func TestBinaryRefusesBadDataDirectory(t *testing.T) {
	tests := []struct {
		name  string
		setup func(t *testing.T) string // returns -data
		want  string
	}{
		{"unwritable", func(t *testing.T) string {
			f := filepath.Join(t.TempDir(), "a-file")
			os.WriteFile(f, nil, 0o644)
			return filepath.Join(f, "data") // cannot be created, even by root
		}, "create data directory"},
		{"another program's file", func(t *testing.T) string {
			dir := t.TempDir()
			os.WriteFile(filepath.Join(dir, "visitors.db"), bytes.Repeat([]byte("{\"json\": true}\n"), 500), 0o644)
			return dir
		}, "not a visitors data file"},
		{"corrupted", func(t *testing.T) string {
			dir := t.TempDir()
			p := servertest.Start(t, bin, rulesOff, "-data", dir, "-log-level", "off")
			mustGet(t, p.URL("/hello?name=x"))
			if err := p.Stop(syscall.SIGTERM, 15*time.Second); err != nil {
				t.Fatal(err)
			}
			path := filepath.Join(dir, "visitors.db")
			b, _ := os.ReadFile(path)
			for i := range b {
				b[i] ^= 0x5a
			}
			os.WriteFile(path, b, 0o644)
			return dir
		}, "visitors.db"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			data := tt.setup(t)
			out, err := command(t, bin, "-addr", "127.0.0.1:0", "-admin-addr", "", "-data", data).CombinedOutput()
			if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 {
				t.Fatalf("exit = %v, want status 1; output:\n%s", err, out)
			}
			if !strings.Contains(string(out), tt.want) || !strings.Contains(string(out), data) {
				t.Errorf("output %q does not name %s and say %q", out, data, tt.want)
			}
		})
	}
}

func TestBinaryRefusesASecondProcessOnTheSameData(t *testing.T) {
	dir := t.TempDir()
	servertest.Start(t, bin, rulesOff, "-data", dir, "-log-level", "off")
	out, err := command(t, bin, "-addr", "127.0.0.1:0", "-admin-addr", "", "-data", dir).CombinedOutput()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 {
		t.Fatalf("second process: exit = %v, want status 1; output:\n%s", err, out)
	}
	if !strings.Contains(string(out), "another process") {
		t.Errorf("second process said %q, want it to name the lock", out)
	}
}

func TestBinaryExportImport(t *testing.T) {
	src := t.TempDir()
	p := servertest.Start(t, bin, rulesOff, "-data", src, "-log-level", "off")
	for _, n := range []string{"a", "b", "a"} {
		mustGet(t, p.URL("/hello?name="+n))
	}
	mustGet(t, p.URL("/hi"))
	if err := p.Stop(syscall.SIGTERM, 15*time.Second); err != nil {
		t.Fatal(err)
	}
	dump, err := command(t, bin, "export", "-data", src).Output()
	if err != nil {
		t.Fatalf("export: %v", err)
	}
	dst := t.TempDir()
	imp := command(t, bin, "import", "-data", dst)
	imp.Stdin = bytes.NewReader(dump)
	if out, err := imp.CombinedOutput(); err != nil {
		t.Fatalf("import: %v\n%s", err, out)
	}
	again, err := command(t, bin, "export", "-data", dst).Output()
	if err != nil {
		t.Fatalf("export after import: %v", err)
	}
	if !bytes.Equal(dump, again) {
		t.Errorf("export → import → export differs:\n%s\n%s", dump, again)
	}
	// The imported store serves on: /hi continues past the old numbers.
	p = servertest.Start(t, bin, rulesOff, "-data", dst, "-log-level", "off")
	if _, _, body := mustGet(t, p.URL("/hello?name=a")); !strings.HasSuffix(body, "<p>Count: 3</p>") {
		t.Errorf("imported a, one more visit = %q, want count 3", body)
	}
	if _, _, body := mustGet(t, p.URL("/hi")); strings.HasSuffix(body, "number 1!") {
		t.Errorf("/hi after import = %q, want past the exported numbers", body)
	}
}
