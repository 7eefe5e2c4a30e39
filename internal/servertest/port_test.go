package servertest

import (
	"net"
	"strconv"
	"testing"
)

// TestFreePortIsBelowTheEphemeralRange: FreePort's ports are free, from
// 10000 up to the kernel's ephemeral range and never inside it, where
// the kernel hands ports to outgoing connections.
func TestFreePortIsBelowTheEphemeralRange(t *testing.T) {
	lo := ephemeralLow()
	for range 50 {
		port, err := FreePort()
		if err != nil {
			t.Fatal(err)
		}
		if port < 10000 || port >= lo {
			t.Fatalf("FreePort() = %d, want one in [10000, %d)", port, lo)
		}
		l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
		if err != nil {
			t.Fatalf("FreePort() = %d, which is not free: %v", port, err)
		}
		l.Close()
	}
}
