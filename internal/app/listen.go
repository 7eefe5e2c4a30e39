package app

import (
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
)

// Listen opens the listener for an -addr or -admin-addr value: a TCP
// address such as :8080, or fd:N for a listening socket that the parent
// process passed as file descriptor N, as a supervisor or a test does.
// With fd:N no port is chosen, closed and chosen again: the socket
// listens from the moment the parent made it.
func Listen(addr string) (net.Listener, error) {
	n, ok := strings.CutPrefix(addr, "fd:")
	if !ok {
		return net.Listen("tcp", addr)
	}
	fd, err := strconv.Atoi(n)
	if err != nil || fd <= 2 { // not stdin, stdout or stderr
		return nil, fmt.Errorf("%q: want fd:N with N a file descriptor of 3 or more", addr)
	}
	f := os.NewFile(uintptr(fd), addr)
	defer f.Close() // FileListener holds its own copy
	l, err := net.FileListener(f)
	if err != nil {
		return nil, fmt.Errorf("%s: not a listening socket: %w", addr, err)
	}
	return l, nil
}
