// Package camo knows GitHub's image proxy, camo, which fetches the
// images of every README for each of its viewers, and so names none: its
// User-Agent, and the address ranges it fetches from, GitHub's published
// outbound ranges (github-hooks.txt, refreshed by
// scripts/update-camo-ranges.sh). A User-Agent is anyone's to send; only
// the address tells camo from a client that claims to be it.
package camo

import (
	_ "embed"
	"strings"
)

// UserAgentPrefix starts the User-Agent of GitHub's image proxy.
const UserAgentPrefix = "github-camo"

//go:embed github-hooks.txt
var hooks string

// IsUserAgent reports whether ua is camo's User-Agent. Anyone may send
// it: check the address too.
func IsUserAgent(ua string) bool { return strings.HasPrefix(ua, UserAgentPrefix) }

// DefaultRanges returns GitHub's published outbound ranges, as
// -camo-ranges takes them: comma-separated CIDR ranges.
func DefaultRanges() string {
	var rs []string
	for line := range strings.Lines(hooks) {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		rs = append(rs, line)
	}
	return strings.Join(rs, ",")
}
