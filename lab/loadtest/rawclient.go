package loadtest

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"time"
)

// rawConn is one keep-alive HTTP/1.1 connection that sends one fixed GET
// and reads its response with a single buffered reader: far less work per
// request than net/http's client, so that one core can offer a server on
// the other core its full rate. It is not safe for concurrent use.
type rawConn struct {
	addr string
	req  []byte
	c    net.Conn
	r    *bufio.Reader
}

func newRawConn(rawURL string) (*rawConn, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return nil, err
	}
	if u.Scheme != "http" {
		return nil, fmt.Errorf("raw client: %s: only http", rawURL)
	}
	req := fmt.Sprintf("GET %s HTTP/1.1\r\nHost: %s\r\nUser-Agent: visitors-loadtest\r\n\r\n", u.RequestURI(), u.Host)
	return &rawConn{addr: u.Host, req: []byte(req)}, nil
}

var errStatus = errors.New("status is not 200")

// get sends the request and reads the whole response, reconnecting if the
// server closed the connection.
func (rc *rawConn) get() error {
	if rc.c == nil {
		c, err := net.DialTimeout("tcp", rc.addr, 5*time.Second)
		if err != nil {
			return err
		}
		rc.c = c
		if rc.r == nil {
			rc.r = bufio.NewReaderSize(c, 16<<10)
		} else {
			rc.r.Reset(c)
		}
	}
	rc.c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := rc.c.Write(rc.req); err != nil {
		rc.close()
		return err
	}
	err := rc.readResponse()
	if err != nil && !errors.Is(err, errStatus) {
		rc.close()
	}
	return err
}

func (rc *rawConn) readResponse() error {
	line, err := rc.r.ReadSlice('\n')
	if err != nil {
		return err
	}
	ok := bytes.HasPrefix(line, []byte("HTTP/1.1 200 "))
	length := -1
	for {
		h, err := rc.r.ReadSlice('\n')
		if err != nil {
			return err
		}
		if len(h) <= 2 { // the blank line
			break
		}
		if k, v, found := bytes.Cut(h, []byte(":")); found && bytes.EqualFold(k, []byte("Content-Length")) {
			if length, err = strconv.Atoi(string(bytes.TrimSpace(v))); err != nil {
				return fmt.Errorf("Content-Length %q: %w", v, err)
			}
		}
	}
	if length < 0 {
		return errors.New("response without Content-Length")
	}
	if _, err := rc.r.Discard(length); err != nil {
		return err
	}
	if !ok {
		return errStatus
	}
	return nil
}

func (rc *rawConn) close() {
	if rc.c != nil {
		rc.c.Close()
		rc.c = nil
	}
}
