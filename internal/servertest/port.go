package servertest

import (
	"errors"
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"strings"
)

// FreePort returns a TCP port on 127.0.0.1 that nothing listens on now,
// for a program that takes a port number, not a socket (redis-server,
// podman, pebble): it binds the port itself, a moment later.
//
// The port is chosen below the kernel's ephemeral range
// (net.ipv4.ip_local_port_range, 32768-60999 by default), from which the
// kernel takes the local end of every outgoing connection and every
// listen on port 0. A port taken from that range, by net.Listen on
// ":0", was now and then the local end of another test's connection by
// the time the program bound it ("address already in use": podman's
// port mapping and pebble's DNS server, each once in a full run under
// load, 2026-11-27). Below the range only a test that asks for a port
// number can take it.
func FreePort() (int, error) {
	lo := ephemeralLow()
	for range 100 {
		port := 10000 + rand.IntN(lo-10000)
		l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
		if err != nil {
			continue // in use: another
		}
		l.Close()
		return port, nil
	}
	return 0, errors.New("no free port below the ephemeral range in 100 tries")
}

// ephemeralLow is the first port of the kernel's ephemeral range, or
// Linux's default 32768 where it cannot be read (another system).
func ephemeralLow() int {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return 32768
	}
	f := strings.Fields(string(b))
	if len(f) != 2 {
		return 32768
	}
	lo, err := strconv.Atoi(f[0])
	if err != nil || lo <= 10000+1000 {
		return 32768
	}
	return lo
}
