package app

import (
	"fmt"
	"net"
	"net/netip"
	"os"
	"runtime"
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
	if runtime.GOOS == "windows" {
		return nil, fmt.Errorf("%q: a listener passed by file descriptor is a Unix feature; give an address such as :8080", addr)
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

// notLoopback returns a, as text, if it is an address other hosts may
// reach: a TCP address that is not loopback (the unspecified address,
// every interface, included). It returns "" for a loopback address and
// for a Unix socket. It judges the address the listener is bound to,
// so it holds for fd:N too: a socket passed by a supervisor is judged
// by where it listens.
func notLoopback(a net.Addr) string {
	t, ok := a.(*net.TCPAddr)
	if !ok { // a Unix socket: local by nature
		return ""
	}
	if ip, ok := netip.AddrFromSlice(t.IP); ok && ip.Unmap().IsLoopback() {
		return ""
	}
	return a.String()
}
