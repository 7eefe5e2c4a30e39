// Package servertest builds the real visitors binary and runs it on free
// loopback ports for end-to-end tests, the way httptest runs a handler.
package servertest

import (
	"bytes"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Build compiles ./cmd/visitors of the module that holds the calling
// package into dir and returns the binary's path.
func Build(dir string) (string, error) {
	_, file, _, _ := runtime.Caller(0)
	root := filepath.Join(filepath.Dir(file), "..", "..")
	bin := filepath.Join(dir, "visitors")
	cmd := exec.Command("go", "build", "-o", bin, "./cmd/visitors")
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build ./cmd/visitors: %v\n%s", err, out)
	}
	return bin, nil
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

// Start runs bin with args, -addr and -admin-addr set to free loopback
// ports, and the extra environment env, and waits until both ports accept
// connections. The process is killed when the test ends, if it is still
// running.
func Start(tb testing.TB, bin string, env []string, args ...string) *Proc {
	tb.Helper()
	return StartWrapped(tb, nil, bin, env, args...)
}

// StartWrapped is [Start] with the binary run through a wrapper command,
// such as unshare: wrapper's words come first, then bin and its args.
func StartWrapped(tb testing.TB, wrapper []string, bin string, env []string, args ...string) *Proc {
	tb.Helper()
	p, err := start(wrapper, bin, env, args...)
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
	return start(nil, bin, env, args...)
}

func start(wrapper []string, bin string, env []string, args ...string) (*Proc, error) {
	addr, err := FreeAddr()
	if err != nil {
		return nil, err
	}
	admin, err := FreeAddr()
	if err != nil {
		return nil, err
	}
	argv := append(append(append([]string{}, wrapper...), bin, "-addr", addr, "-admin-addr", admin), args...)
	p := &Proc{Cmd: exec.Command(argv[0], argv[1:]...), Addr: addr, AdminAddr: admin, exited: make(chan struct{})}
	p.Cmd.Env = append(os.Environ(), env...)
	p.Cmd.Stdout = lockedWriter{&p.mu, &p.stdout}
	p.Cmd.Stderr = lockedWriter{&p.mu, &p.stderr}
	if err := p.Cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", bin, err)
	}
	go func() {
		p.err = p.Cmd.Wait()
		close(p.exited)
	}()
	deadline := time.Now().Add(30 * time.Second)
	for _, a := range []string{addr, admin} {
		for {
			c, err := net.DialTimeout("tcp", a, time.Second)
			if err == nil {
				c.Close()
				break
			}
			select {
			case <-p.exited:
				return nil, fmt.Errorf("%s exited before listening on %s: %v\nstderr: %s", bin, a, p.err, p.Stderr())
			case <-time.After(10 * time.Millisecond):
			}
			if time.Now().After(deadline) {
				p.Cmd.Process.Kill()
				return nil, fmt.Errorf("%s did not listen on %s within 30s\nstderr: %s", bin, a, p.Stderr())
			}
		}
	}
	return p, nil
}

// FreeAddr returns a loopback address with a port that was free a moment
// ago. Another process could take it first, so this is for tests only.
func FreeAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", fmt.Errorf("find a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().String(), nil
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
