package redistest

import (
	"bufio"
	"fmt"
	"net"
	"strconv"
	"strings"
	"testing"
)

// TestStartTakesNoOtherServer: a Redis that already answers on the port
// start was given (another test process's, which took the port between
// its choice and its use) is not taken for the server start ran: start
// fails, and Start tries another port, rather than hand a test a Redis
// that another process's tests write to. Fails if start trusts any PONG
// on its port.
func TestStartTakesNoOtherServer(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go answerAsAnotherRedis(c)
		}
	}()
	port := l.Addr().(*net.TCPAddr).Port
	dir := t.TempDir()
	s := &Server{Addr: l.Addr().String(), Dir: dir, args: []string{
		"--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--dir", dir,
		"--save", "", "--appendonly", "no", "--daemonize", "no", "--logfile", "",
	}}
	if err := s.start(); err == nil {
		s.Close()
		t.Fatalf("start on %s, where another Redis answers, = nil, want an error", s.Addr)
	}
}

// answerAsAnotherRedis answers c's inline commands as a Redis of
// another process would: PONG to PING, process_id 1 in INFO.
func answerAsAnotherRedis(c net.Conn) {
	defer c.Close()
	r := bufio.NewReader(c)
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			return
		}
		switch cmd := strings.ToUpper(strings.Fields(line + " x")[0]); cmd {
		case "PING":
			fmt.Fprint(c, "+PONG\r\n")
		case "INFO":
			info := "# Server\r\nredis_version:7.0.0\r\nprocess_id:1\r\n"
			fmt.Fprintf(c, "$%d\r\n%s\r\n", len(info), info)
		default:
			fmt.Fprintf(c, "-ERR unknown command '%s'\r\n", cmd)
		}
	}
}
