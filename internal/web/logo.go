package web

import (
	"visitors/internal/badge"
	"visitors/internal/httperr"
)

// Client messages of the logo parameters.
const (
	msgLogo      = "Optional logo: " + "unknown; it must be the name of a Simple Icons logo, such as github, go or docker"
	msgLogoBadge = "unknown logo" // the value of the error badge
)

// errLogo is the client's error for a logo Simple Icons does not have.
var errLogo = badRequest(msgLogo, msgLogoBadge)

// parseLogo parses the optional logo and logo_color (or logoColor) parameters of query
// q into b, returning the client's error if one is bad.
func parseLogo(sc *scratch, q string, b *badge.Badge) *httperr.HTTPError {
	var herr *httperr.HTTPError
	if b.LogoColor, herr = parseColorParam(&sc.logoColor, q, "logo_color", "logoColor", nil); herr != nil {
		return herr
	}
	raw, found := queryValue(q, "logo")
	if !found || raw == "" {
		return nil
	}
	if len(raw) > 3*badge.MaxLogoBytes {
		return errLogo
	}
	var tmp [3 * badge.MaxLogoBytes]byte
	name, err := appendUnescape(tmp[:0], raw)
	if err != nil {
		return errQueryEscape
	}
	if b.Logo, err = badge.LookupLogo(name); err != nil {
		return errLogo
	}
	return nil
}
