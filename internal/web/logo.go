package web

import "visitors/internal/badge"

// Client messages of the logo parameters.
const (
	msgLogo      = "Optional logo: " + "unknown; it must be the name of a Simple Icons logo, such as github, go or docker"
	msgLogoBadge = "unknown logo" // the value of the error badge
)

// parseLogo parses the optional logo and logo_color (or logoColor) parameters of query
// q into b, returning the client's message if one is bad.
func parseLogo(sc *scratch, q string, b *badge.Badge) string {
	var msg string
	if b.LogoColor, msg = parseColorParam(&sc.logoColor, q, "logo_color", "logoColor", nil); msg != "" {
		return msg
	}
	raw, found := queryValue(q, "logo")
	if !found || raw == "" {
		return ""
	}
	if len(raw) > 3*badge.MaxLogoBytes {
		return msgLogo
	}
	var tmp [3 * badge.MaxLogoBytes]byte
	name, err := appendUnescape(tmp[:0], raw)
	if err != nil {
		return msgEscape
	}
	if b.Logo, err = badge.LookupLogo(name); err != nil {
		return msgLogo
	}
	return ""
}
