// Package client tells visitors' clients apart and limits what each may
// do: [Identify] names the client of a request (its address, IPv6
// grouped by /64, read through trusted reverse proxies only), and
// [Limiter] keeps a token bucket per client for counted visits and
// another for new keys, in a table of bounded size.
package client

import (
	"fmt"
	"net/http"
	"net/netip"
	"strings"
)

// MaxHops is how many addresses of a forwarding header [Identify] reads,
// from the right. A longer chain of trusted proxies ends at the last one
// read.
const MaxHops = 32

// Ranges is a set of address ranges, such as -trusted-proxies or
// -camo-ranges. The zero Ranges holds no address. With String and Set,
// *Ranges is a flag.Value, so a flag of ranges is parsed once, at the
// edge. A Ranges may be read concurrently once set.
type Ranges struct {
	prefixes []netip.Prefix
}

// Proxies is the set of address ranges whose forwarding headers are
// believed: the reverse proxies in front of visitors. The zero Proxies
// trusts nobody.
type Proxies = Ranges

// Set parses a comma-separated list of CIDR ranges or single addresses
// and replaces p's ranges with them; "" holds none.
func (p *Ranges) Set(s string) error {
	var ps []netip.Prefix
	for f := range strings.SplitSeq(s, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		if !strings.Contains(f, "/") {
			a, err := netip.ParseAddr(f)
			if err != nil || a.Zone() != "" {
				return fmt.Errorf("%q: want a CIDR range such as 10.0.0.0/8 or an address", f)
			}
			a = a.Unmap()
			ps = append(ps, netip.PrefixFrom(a, a.BitLen()))
			continue
		}
		pr, err := netip.ParsePrefix(f)
		if err != nil {
			return fmt.Errorf("%q: want a CIDR range such as 10.0.0.0/8: %w", f, err)
		}
		if pr.Addr().Is4In6() {
			if pr.Bits() < 96 {
				return fmt.Errorf("%q: an IPv4-mapped range needs at least /96", f)
			}
			pr = netip.PrefixFrom(pr.Addr().Unmap(), pr.Bits()-96)
		}
		ps = append(ps, pr.Masked())
	}
	p.prefixes = ps
	return nil
}

// String returns the ranges as Set takes them.
func (p *Ranges) String() string {
	if p == nil {
		return ""
	}
	s := make([]string, len(p.prefixes))
	for i, pr := range p.prefixes {
		s[i] = pr.String()
	}
	return strings.Join(s, ",")
}

// Empty reports whether p holds no address.
func (p *Ranges) Empty() bool { return p == nil || len(p.prefixes) == 0 }

// Contains reports whether a (unmapped) is in one of p's ranges.
func (p *Ranges) Contains(a netip.Addr) bool {
	if p == nil {
		return false
	}
	for _, pr := range p.prefixes {
		if pr.Contains(a) {
			return true
		}
	}
	return false
}

// Group returns the identity of address a: a itself for IPv4 (an
// IPv4-mapped IPv6 address is its IPv4 address), and the /64 network for
// IPv6, since one subscriber commonly holds a whole /64.
func Group(a netip.Addr) netip.Addr {
	a = a.Unmap().WithZone("")
	if a.Is6() {
		p, _ := a.Prefix(64)
		return p.Addr()
	}
	return a
}

// Identify returns the identity of the client of a request that came
// from remoteAddr (as http.Request.RemoteAddr has it) with header h.
//
// Unless the peer is a trusted proxy, the identity is the peer's address
// and the forwarding headers are ignored: a client cannot choose its
// identity. From a trusted proxy, X-Forwarded-For and Forwarded are read
// from the right, and the identity is the first address that is not a
// trusted proxy. An address that does not parse (garbage, "unknown", an
// obfuscated identifier) ends the walk at the proxy that passed it on,
// so that a client who sends nonsense shares the proxy's identity with
// everyone else who does. When both headers are present and disagree,
// the proxy cannot be told from a client that forged one of them, and
// the identity is the peer's. The result is grouped by [Group]; a peer
// address that does not parse is the zero Addr, one identity for all.
// Identify allocates nothing.
func Identify(remoteAddr string, h http.Header, trusted *Proxies) netip.Addr {
	return Group(Address(remoteAddr, h, trusted))
}

// Address returns the address of the client of a request, as [Identify]
// reads it, before it is grouped: the address to look up in a set of
// ranges, such as -camo-ranges. It is unmapped and has no zone; it is
// the zero Addr if the peer address does not parse. Address allocates
// nothing.
func Address(remoteAddr string, h http.Header, trusted *Proxies) netip.Addr {
	peer, ok := parseHostPort(remoteAddr)
	if !ok {
		return netip.Addr{}
	}
	if !trusted.Contains(peer) {
		return peer
	}
	xff, forwarded := h["X-Forwarded-For"], h["Forwarded"]
	id := peer
	switch {
	case len(xff) > 0 && len(forwarded) > 0:
		a := walk(xff, false, peer, trusted)
		b := walk(forwarded, true, peer, trusted)
		if a == b {
			id = a
		}
	case len(xff) > 0:
		id = walk(xff, false, peer, trusted)
	case len(forwarded) > 0:
		id = walk(forwarded, true, peer, trusted)
	}
	return id
}

// ForwardedUntrusted reports whether a request from remoteAddr carries
// X-Forwarded-For or Forwarded in h while its peer is not in trusted:
// headers that [Identify] ignores, which a reverse proxy not listed in
// -trusted-proxies sends with every request (and then every visitor
// behind it is one client). It also returns the peer. Without the
// headers it looks at nothing else. ForwardedUntrusted allocates
// nothing.
func ForwardedUntrusted(remoteAddr string, h http.Header, trusted *Proxies) (netip.Addr, bool) {
	if len(h["X-Forwarded-For"]) == 0 && len(h["Forwarded"]) == 0 {
		return netip.Addr{}, false
	}
	peer, ok := parseHostPort(remoteAddr)
	if !ok || trusted.Contains(peer) {
		return netip.Addr{}, false
	}
	return peer, true
}

// walk reads the addresses of a forwarding header's values from the
// right, starting from the trusted peer, and returns the first that is
// not trusted, or the last trusted one when the chain ends, breaks or
// grows past MaxHops.
func walk(vals []string, forwarded bool, peer netip.Addr, trusted *Proxies) netip.Addr {
	cur := peer
	hops := 0
	for i := len(vals) - 1; i >= 0; i-- {
		v := vals[i]
		for {
			elem := v
			j := strings.LastIndexByte(v, ',')
			if j >= 0 {
				elem, v = v[j+1:], v[:j]
			}
			if hops++; hops > MaxHops {
				return cur
			}
			var a netip.Addr
			var ok bool
			if forwarded {
				a, ok = forwardedFor(elem)
			} else {
				a, ok = parseNode(elem)
			}
			if !ok {
				return cur
			}
			if !trusted.Contains(a) {
				return a
			}
			cur = a
			if j < 0 {
				break
			}
		}
	}
	return cur
}

// forwardedFor returns the address of the for= parameter of one element
// of a Forwarded header (RFC 7239), such as for=192.0.2.1;proto=https or
// for="[2001:db8::1]:4711".
func forwardedFor(elem string) (netip.Addr, bool) {
	for elem != "" {
		pair := elem
		if j := strings.IndexByte(elem, ';'); j >= 0 {
			pair, elem = elem[:j], elem[j+1:]
		} else {
			elem = ""
		}
		pair = trimOWS(pair)
		if len(pair) > 4 && strings.EqualFold(pair[:4], "for=") {
			v := pair[4:]
			if len(v) >= 2 && v[0] == '"' && v[len(v)-1] == '"' {
				v = v[1 : len(v)-1]
			}
			return parseNode(v)
		}
	}
	return netip.Addr{}, false
}

// parseNode parses one address of a forwarding header: 192.0.2.1,
// 192.0.2.1:80, 2001:db8::1 or [2001:db8::1]:80, with optional spaces
// around it. Zones are refused.
func parseNode(s string) (netip.Addr, bool) {
	s = trimOWS(s)
	if s == "" {
		return netip.Addr{}, false
	}
	if s[0] == '[' {
		end := strings.IndexByte(s, ']')
		if end < 0 {
			return netip.Addr{}, false
		}
		rest := s[end+1:]
		if rest != "" && !validPort(rest) {
			return netip.Addr{}, false
		}
		s = s[1:end]
	} else if strings.Count(s, ":") == 1 { // IPv4 with a port
		i := strings.IndexByte(s, ':')
		if !validPort(s[i:]) {
			return netip.Addr{}, false
		}
		s = s[:i]
	}
	if strings.IndexByte(s, '%') >= 0 {
		return netip.Addr{}, false
	}
	a, err := netip.ParseAddr(s)
	if err != nil {
		return netip.Addr{}, false
	}
	return a.Unmap(), true
}

// validPort reports whether s is ":" and 1 to 5 digits.
func validPort(s string) bool {
	if len(s) < 2 || len(s) > 6 || s[0] != ':' {
		return false
	}
	for i := 1; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// parseHostPort parses a RemoteAddr such as 192.0.2.1:1234 or
// [2001:db8::1]:1234 (a zone is dropped). An IPv4 address with a port,
// what every request from a proxy or an IPv4 client has, takes a fast
// path (a fifth of netip.ParseAddrPort's time; FuzzParseHostPort holds
// it to netip's answers).
func parseHostPort(s string) (netip.Addr, bool) {
	if a, ok := parseIPv4Port(s); ok {
		return a, true
	}
	ap, err := netip.ParseAddrPort(s)
	if err != nil {
		return netip.Addr{}, false
	}
	return ap.Addr().Unmap().WithZone(""), true
}

// trimOWS trims the spaces and tabs HTTP allows around list elements.
func trimOWS(s string) string {
	for s != "" && (s[0] == ' ' || s[0] == '\t') {
		s = s[1:]
	}
	for s != "" && (s[len(s)-1] == ' ' || s[len(s)-1] == '\t') {
		s = s[:len(s)-1]
	}
	return s
}

// parseIPv4Port parses "a.b.c.d:port" with no leading zeros, as
// net/http's RemoteAddr has it, and reports false for anything else,
// which the caller then gives to netip.
func parseIPv4Port(s string) (netip.Addr, bool) {
	var ip [4]byte
	i := 0
	for f := range 4 {
		start := i
		v := 0
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			v = v*10 + int(s[i]-'0')
			i++
			if i-start > 3 {
				return netip.Addr{}, false
			}
		}
		if i == start || v > 255 || (i-start > 1 && s[start] == '0') {
			return netip.Addr{}, false
		}
		ip[f] = byte(v)
		want := byte('.')
		if f == 3 {
			want = ':'
		}
		if i >= len(s) || s[i] != want {
			return netip.Addr{}, false
		}
		i++
	}
	port := s[i:]
	if len(port) == 0 || len(port) > 5 || (len(port) > 1 && port[0] == '0') {
		return netip.Addr{}, false
	}
	p := 0
	for j := 0; j < len(port); j++ {
		if port[j] < '0' || port[j] > '9' {
			return netip.Addr{}, false
		}
		p = p*10 + int(port[j]-'0')
	}
	if p > 65535 {
		return netip.Addr{}, false
	}
	return netip.AddrFrom4(ip), true
}
