package web

import (
	"net/http"

	"visitors/internal/badge"
)

// Client messages of the logo parameters.
const (
	msgLogo      = "Optional logo: " + "unknown; it must be the name of a Simple Icons logo, such as github, go or docker"
	msgLogoBadge = "unknown logo" // the value of the error badge
)

// errorColor is the value box of an error badge: shields.io's red.
var errorColor = []byte("#e05d44")

// parseLogo parses the optional logo and logo_color parameters of query
// q into b, returning the client's message if one is bad.
func parseLogo(sc *scratch, q string, b *badge.Badge) string {
	var msg string
	if b.LogoColor, msg = parseColorParam(&sc.logoColor, q, "logo_color", nil); msg != "" {
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

// writeLogoError answers a badge request whose logo is unknown with a
// 400 that is still a badge, in the style and label asked for, so that a
// README shows what is wrong instead of a broken image.
func writeLogoError(w http.ResponseWriter, sc *scratch, b *badge.Badge) int {
	b.Value = append(sc.value[:0], msgLogoBadge...)
	b.Color = errorColor
	b.Logo = nil
	sc.body = badge.AppendSVG(sc.body[:0], b)
	h := w.Header()
	setImageHeaders(h)
	h["X-Content-Type-Options"] = nosniff
	w.WriteHeader(http.StatusBadRequest)
	w.Write(sc.body)
	return http.StatusBadRequest
}
