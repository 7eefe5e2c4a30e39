// Package redistest runs throwaway redis-server processes, standalone or
// as a Redis Cluster, on free loopback ports for tests, the way
// httptest runs a handler. It never touches a Redis it did not start.
package redistest

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"visitors/internal/servertest"
)

// Binaries the tests need; scripts/install-deps.sh installs them.
const (
	ServerBin = "redis-server"
	CLIBin    = "redis-cli"
)

// Server is one redis-server process. Its methods may be called
// concurrently.
type Server struct {
	Addr string // 127.0.0.1:port
	Dir  string // its working directory: the append-only file, if on

	args []string
	mu   sync.Mutex // guards cmd and exited
	cmd  *exec.Cmd
	exit chan struct{}
	log  *bytes.Buffer
}

// freePort returns a loopback TCP port nothing listens on now, below
// the ephemeral range (servertest.FreePort).
func freePort() (int, error) { return servertest.FreePort() }

// Start runs redis-server in dir on a free loopback port with the extra
// config args (such as "--appendonly", "yes") and waits until it answers
// PING. The caller must call Close.
func Start(dir string, args ...string) (*Server, error) {
	if _, err := exec.LookPath(ServerBin); err != nil {
		return nil, fmt.Errorf("%s not found (scripts/install-deps.sh installs it): %w", ServerBin, err)
	}
	var last error
	for range 5 { // a port taken between its choice and its use: try another
		port, err := freePort()
		if err != nil {
			return nil, err
		}
		s := &Server{Addr: "127.0.0.1:" + strconv.Itoa(port), Dir: dir}
		s.args = append([]string{
			"--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--dir", dir,
			"--save", "", "--appendonly", "no", "--daemonize", "no",
			"--logfile", "", "--loglevel", "warning",
		}, args...)
		if last = s.start(); last == nil {
			return s, nil
		}
	}
	return nil, last
}

// StartTest is [Start] for one test: the server runs in a directory of
// t's own, with the extra config args, and is closed when t ends. It
// fails t if the server does not start.
func StartTest(t testing.TB, args ...string) *Server {
	t.Helper()
	s, err := Start(t.TempDir(), args...)
	if err != nil {
		t.Fatalf("start %s: %v", ServerBin, err)
	}
	t.Cleanup(s.Close)
	return s
}

func (s *Server) start() error {
	cmd := exec.Command(ServerBin, s.args...)
	cmd.Dir = s.Dir
	// A test binary that dies (a panic skips TestMain's Close) takes its
	// servers with it, on Linux.
	cmd.SysProcAttr = procAttr()
	log := new(bytes.Buffer)
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		return err
	}
	exit := make(chan struct{})
	go func() { cmd.Wait(); close(exit) }()
	s.mu.Lock()
	s.cmd, s.exit, s.log = cmd, exit, log
	s.mu.Unlock()
	deadline := time.Now().Add(20 * time.Second)
	for {
		// A PONG may come from another process's server, one that took
		// the port between its choice and its use (another go test
		// process's): ours then cannot bind it, and exits.
		if ping(s.Addr) == nil {
			if pid, err := serverPID(s.Addr); err == nil && pid == cmd.Process.Pid {
				return nil
			}
		}
		select {
		case <-exit:
			return fmt.Errorf("redis-server %s exited: %s", strings.Join(s.args, " "), log.String())
		case <-time.After(10 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			s.Kill()
			return fmt.Errorf("redis-server on %s did not answer PING within 20s", s.Addr)
		}
	}
}

// serverPID asks the server at addr for its process id (INFO server).
func serverPID(addr string) (int, error) {
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return 0, err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(2 * time.Second))
	if _, err := c.Write([]byte("INFO server\r\n")); err != nil {
		return 0, err
	}
	r := bufio.NewReader(c)
	head, err := r.ReadString('\n')
	if err != nil {
		return 0, err
	}
	n, err := strconv.Atoi(strings.TrimSuffix(strings.TrimPrefix(head, "$"), "\r\n"))
	if err != nil || !strings.HasPrefix(head, "$") {
		return 0, fmt.Errorf("INFO server: %q", head)
	}
	info := make([]byte, n)
	if _, err := io.ReadFull(r, info); err != nil {
		return 0, err
	}
	for line := range strings.Lines(string(info)) {
		if v, ok := strings.CutPrefix(line, "process_id:"); ok {
			return strconv.Atoi(strings.TrimSpace(v))
		}
	}
	return 0, errors.New("INFO server: no process_id")
}

// ping sends PING to addr and expects +PONG.
func ping(addr string) error {
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(2 * time.Second))
	if _, err := c.Write([]byte("PING\r\n")); err != nil {
		return err
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		return err
	}
	if line != "+PONG\r\n" {
		return fmt.Errorf("PING: %q", line)
	}
	return nil
}

// URL returns the server's redis:// URL for database 0.
func (s *Server) URL() string { return "redis://" + s.Addr + "/0" }

// Kill stops the server with SIGKILL, as a crash would, and waits for it
// to exit.
func (s *Server) Kill() {
	s.mu.Lock()
	cmd, exit := s.cmd, s.exit
	s.mu.Unlock()
	if cmd == nil {
		return
	}
	cmd.Process.Kill()
	<-exit
}

// Restart starts the killed server again on the same port and directory,
// so that it reads back its append-only file if it kept one.
func (s *Server) Restart() error {
	var err error
	for range 50 { // the port may linger a moment after the kill
		if err = s.start(); err == nil {
			return nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	return err
}

// Close kills the server.
func (s *Server) Close() { s.Kill() }

// Pin moves every thread of the server to the CPUs in list, as taskset
// -c takes them; load tests keep it off the cores they measure.
func (s *Server) Pin(list string) error {
	s.mu.Lock()
	pid := s.cmd.Process.Pid
	s.mu.Unlock()
	if out, err := exec.Command("taskset", "-a", "-pc", list, strconv.Itoa(pid)).CombinedOutput(); err != nil {
		return fmt.Errorf("taskset -a -pc %s %d: %v\n%s", list, pid, err, out)
	}
	return nil
}

// CLI runs redis-cli against the server with args and returns its output.
func (s *Server) CLI(args ...string) (string, error) {
	host, port, _ := net.SplitHostPort(s.Addr)
	out, err := exec.Command(CLIBin, append([]string{"-h", host, "-p", port}, args...)...).CombinedOutput()
	return string(out), err
}

// Cluster is a Redis Cluster of servers with one master each, no
// replicas.
type Cluster struct {
	Servers []*Server
}

// StartCluster runs n (at least 3) redis-server processes in cluster
// mode under dir, joins them with redis-cli --cluster create, and waits
// until every node says the cluster is ok. The caller must call Close.
func StartCluster(dir string, n int) (*Cluster, error) {
	c := &Cluster{}
	for i := range n {
		d := filepath.Join(dir, "node"+strconv.Itoa(i))
		if err := os.MkdirAll(d, 0o755); err != nil {
			c.Close()
			return nil, err
		}
		bus, err := freePort()
		if err != nil {
			c.Close()
			return nil, err
		}
		s, err := Start(d, "--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf",
			"--cluster-port", strconv.Itoa(bus), "--cluster-node-timeout", "5000")
		if err != nil {
			c.Close()
			return nil, err
		}
		c.Servers = append(c.Servers, s)
	}
	args := []string{"--cluster", "create"}
	args = append(args, c.Addrs()...)
	args = append(args, "--cluster-replicas", "0", "--cluster-yes")
	if out, err := exec.Command(CLIBin, args...).CombinedOutput(); err != nil {
		c.Close()
		return nil, fmt.Errorf("redis-cli %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	deadline := time.Now().Add(30 * time.Second)
	for _, s := range c.Servers {
		for {
			out, _ := s.CLI("cluster", "info")
			if strings.Contains(out, "cluster_state:ok") {
				break
			}
			if time.Now().After(deadline) {
				c.Close()
				return nil, errors.New("the cluster did not reach cluster_state:ok within 30s: " + out)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	return c, nil
}

// Addrs returns the nodes' host:port addresses.
func (c *Cluster) Addrs() []string {
	var a []string
	for _, s := range c.Servers {
		a = append(a, s.Addr)
	}
	return a
}

// Close kills every node.
func (c *Cluster) Close() {
	for _, s := range c.Servers {
		s.Close()
	}
}
