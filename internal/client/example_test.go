package client_test

import (
	"fmt"
	"net/http"

	"visitors/internal/client"
)

// Identify names the client a request counts as: the peer, or the
// address a trusted proxy forwards, an IPv6 one grouped by its /64.
func ExampleIdentify() {
	var trusted client.Proxies
	if err := trusted.Set("10.0.0.1"); err != nil {
		panic(err)
	}
	h := http.Header{"X-Forwarded-For": {"198.51.100.7"}}
	fmt.Println(client.Identify("10.0.0.1:5000", h, &trusted))        // a trusted proxy
	fmt.Println(client.Identify("192.0.2.1:5000", h, &trusted))       // anyone else: the peer
	fmt.Println(client.Identify("[2001:db8::1]:5000", nil, &trusted)) // its /64
	// Output:
	// 198.51.100.7
	// 192.0.2.1
	// 2001:db8::
}
