// Package servertest builds the real visitors binary and runs it on free
// loopback ports for end-to-end tests, the way httptest runs a handler.
package servertest

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Build compiles ./cmd/visitors of the module that holds the calling
// package into dir and returns the binary's path.
func Build(dir string) (string, error) { return BuildAs(dir, "visitors") }

// Main is the TestMain of a package whose tests run the real binary:
// it builds the binary once into a new temporary directory named after
// pattern, as os.MkdirTemp names it, sets *bin to its path, runs the
// tests, calls each of after, removes the directory and exits with the
// tests' code. A failed build exits 1 with go build's message.
func Main(m *testing.M, pattern string, bin *string, after ...func()) {
	dir, err := os.MkdirTemp("", pattern)
	if err == nil {
		*bin, err = Build(dir)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	for _, f := range after {
		f()
	}
	os.RemoveAll(dir)
	os.Exit(code)
}

// BuildAs compiles ./cmd/visitors into dir/name with the extra go build
// flags, such as -pgo=off, and returns the binary's path. In a git
// checkout the binary carries the checkout's revision, as -version and
// visitors_build_info report it: it is set with the linker, since go
// build stamps none in a git worktree (golang/go#58218) or with
// -buildvcs=false. A -ldflags among flags replaces that stamp.
func BuildAs(dir, name string, flags ...string) (string, error) {
	root, err := ModuleRoot()
	if err != nil {
		return "", err
	}
	bin := filepath.Join(dir, name)
	args := append(append(append([]string{"build"}, vcsStamp(root)...), flags...), "-o", bin, "./cmd/visitors")
	cmd := exec.Command("go", args...)
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return bin, nil
}

// ModuleRoot returns the directory of the module of the working
// directory (a test runs in its package's): where go env GOMOD finds its
// go.mod, not this file's path, which go build -trimpath
// (./scripts/test.sh) leaves relative to the module. Not go list -m's
// answer: in a workspace (go.work) that names every module of it.
func ModuleRoot() (string, error) {
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		var stderr []byte
		if ee := (*exec.ExitError)(nil); errors.As(err, &ee) {
			stderr = ee.Stderr
		}
		return "", fmt.Errorf("go env GOMOD: %v\n%s", err, stderr)
	}
	gomod := strings.TrimSpace(string(out))
	if gomod == "" || gomod == os.DevNull {
		return "", fmt.Errorf("go env GOMOD = %q: the working directory is in no module", gomod)
	}
	return filepath.Dir(gomod), nil
}

// vcsStamp returns the -ldflags that set the revision of the git
// checkout at root, its commit time and whether it is modified, or none
// outside a git checkout.
func vcsStamp(root string) []string {
	git := func(args ...string) (string, error) {
		cmd := exec.Command("git", args...)
		cmd.Dir = root
		out, err := cmd.Output()
		return strings.TrimSpace(string(out)), err
	}
	rev, err := git("rev-parse", "HEAD")
	if err != nil {
		return nil
	}
	const pkg = "visitors/internal/buildinfo."
	ld := "-X " + pkg + "Revision=" + rev
	if t, err := git("show", "-s", "--format=%ct", "HEAD"); err == nil {
		if sec, err := strconv.ParseInt(t, 10, 64); err == nil {
			ld += " -X " + pkg + "Time=" + time.Unix(sec, 0).UTC().Format(time.RFC3339)
		}
	}
	if st, err := git("status", "--porcelain"); err == nil {
		ld += " -X " + pkg + "Modified=" + strconv.FormatBool(st != "")
	}
	return []string{"-ldflags=" + ld}
}

// Proc is a running visitors process. Its methods may be called
// concurrently.
type Proc struct {
	Cmd       *exec.Cmd
	Addr      string // public listener, host:port
	AdminAddr string // admin listener, host:port; "" if disabled

	mu     sync.Mutex // guards stdout and stderr
	stdout bytes.Buffer
	stderr bytes.Buffer
	exited chan struct{}
	err    error // Wait's result; read after exited is closed
}

// Start runs bin with args and the extra environment env, on a public
// and an admin listener on free loopback ports, and waits until both
// serve HTTP. The listeners are made here and passed to the process as
// file descriptors 3 and 4 (-addr fd:3 -admin-addr fd:4), so no other
// process can take a port between its choice and its use. The process
// is killed when the test ends, if it is still running.
func Start(tb testing.TB, bin string, env []string, args ...string) *Proc {
	tb.Helper()
	return StartWrapped(tb, nil, bin, env, args...)
}

// StartWrapped is [Start] with the binary run through a wrapper command,
// such as unshare: wrapper's words come first, then bin and its args.
func StartWrapped(tb testing.TB, wrapper []string, bin string, env []string, args ...string) *Proc {
	tb.Helper()
	return startTB(tb, wrapper, bin, env, nil, args...)
}

// StartFiles is [Start] with more listening sockets, such as
// [ListenFile]'s, passed to the process as file descriptors 5, 6 and on,
// for flags that take fd:N. The caller may close its copies once
// StartFiles returns.
func StartFiles(tb testing.TB, bin string, env []string, files []*os.File, args ...string) *Proc {
	tb.Helper()
	return startTB(tb, nil, bin, env, files, args...)
}

func startTB(tb testing.TB, wrapper []string, bin string, env []string, extra []*os.File, args ...string) *Proc {
	tb.Helper()
	p, err := start(wrapper, bin, env, extra, args...)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		p.Cmd.Process.Kill()
		<-p.exited
	})
	return p
}

// StartErr is [Start] for callers without a testing.TB, such as a load
// test. The caller must stop the process.
func StartErr(bin string, env []string, args ...string) (*Proc, error) {
	return start(nil, bin, env, nil, args...)
}

// StartWrappedErr is [StartWrapped] for callers without a testing.TB,
// such as a load test that pins servers with taskset. The caller must
// stop the process.
func StartWrappedErr(wrapper []string, bin string, env []string, args ...string) (*Proc, error) {
	return start(wrapper, bin, env, nil, args...)
}

func start(wrapper []string, bin string, env []string, extra []*os.File, args ...string) (*Proc, error) {
	var files []*os.File
	defer func() {
		for _, f := range files {
			f.Close() // the process holds its own copies
		}
	}()
	var addrs []string
	for range 2 {
		f, addr, err := ListenFile()
		if err != nil {
			return nil, err
		}
		files = append(files, f)
		addrs = append(addrs, addr)
	}
	argv := append(append(append([]string{}, wrapper...), bin, "-addr", "fd:3", "-admin-addr", "fd:4"), args...)
	p := &Proc{Cmd: exec.Command(argv[0], argv[1:]...), Addr: addrs[0], AdminAddr: addrs[1], exited: make(chan struct{})}
	p.Cmd.Env = append(os.Environ(), env...)
	p.Cmd.ExtraFiles = append(files[:2:2], extra...) // fd 3 and 4 in the process, then extra
	p.Cmd.Stdout = lockedWriter{&p.mu, &p.stdout}
	p.Cmd.Stderr = lockedWriter{&p.mu, &p.stderr}
	if err := p.Cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", bin, err)
	}
	go func() {
		p.err = p.Cmd.Wait()
		close(p.exited)
	}()
	// The sockets accept connections from the start; the process serves
	// once it has opened its store. Any HTTP answer means it serves.
	client := &http.Client{Timeout: time.Second}
	deadline := time.Now().Add(30 * time.Second)
	for _, url := range []string{p.URL("/servertest-ready"), p.AdminURL("/healthz")} {
		for {
			resp, err := client.Get(url)
			if err == nil {
				resp.Body.Close()
				break
			}
			select {
			case <-p.exited:
				return nil, fmt.Errorf("%s exited before serving %s: %v\nstderr: %s", bin, url, p.err, p.Stderr())
			case <-time.After(10 * time.Millisecond):
			}
			if time.Now().After(deadline) {
				p.Cmd.Process.Kill()
				<-p.exited
				return nil, fmt.Errorf("%s did not serve %s within 30s: %v\nstderr: %s", bin, url, err, p.Stderr())
			}
		}
	}
	return p, nil
}

// ListenFile listens on a free loopback port and returns the socket as a
// file, to be passed to a process, and its address.
func ListenFile() (*os.File, string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, "", fmt.Errorf("listen on a free port: %w", err)
	}
	defer l.Close() // the file is a copy of the socket
	f, err := l.(*net.TCPListener).File()
	if err != nil {
		return nil, "", fmt.Errorf("listener file: %w", err)
	}
	return f, l.Addr().String(), nil
}

// ListenFD listens on a free loopback port and returns the socket's file
// descriptor, for a server in this process to take with -addr fd:N, and
// its address. The server owns the descriptor from then on and closes
// it; the socket listens all along, so no port is closed and reused.
func ListenFD() (fd int, addr string, err error) {
	f, addr, err := ListenFile()
	if err != nil {
		return -1, "", err
	}
	defer f.Close()
	nfd, err := dupCloexec(f)
	if err != nil {
		return -1, "", err
	}
	return nfd, addr, nil
}

// URL returns the public URL of path.
func (p *Proc) URL(path string) string { return "http://" + p.Addr + path }

// AdminURL returns the admin URL of path.
func (p *Proc) AdminURL(path string) string { return "http://" + p.AdminAddr + path }

// Stdout returns what the process has written to stdout so far.
func (p *Proc) Stdout() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.stdout.String()
}

// Stderr returns what the process has written to stderr so far.
func (p *Proc) Stderr() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.stderr.String()
}

// Stop sends sig and waits up to timeout for the process to exit,
// returning its exit status (nil for exit code 0).
func (p *Proc) Stop(sig syscall.Signal, timeout time.Duration) error {
	if err := p.Cmd.Process.Signal(sig); err != nil {
		return fmt.Errorf("signal %v: %w", sig, err)
	}
	select {
	case <-p.exited:
		return p.err
	case <-time.After(timeout):
		return fmt.Errorf("process did not exit within %v of %v", timeout, sig)
	}
}

// Kill sends SIGKILL, as a crash or power loss would end the process,
// and waits for it to exit.
func (p *Proc) Kill() error {
	if err := p.Cmd.Process.Kill(); err != nil {
		return fmt.Errorf("kill: %w", err)
	}
	<-p.exited
	return nil
}

type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (l lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// Buffer is a bytes.Buffer that a server may write to while a test reads
// it, such as a log. It is safe for concurrent use.
type Buffer struct {
	mu sync.Mutex // guards b
	b  bytes.Buffer
}

// Write appends p.
func (b *Buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

// String returns what was written so far.
func (b *Buffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}
