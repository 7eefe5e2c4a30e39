package dashboard

import (
	"html/template"
	"net/url"
	"strconv"
)

func itoa(n int) string { return strconv.Itoa(n) }

// funcs are the templates' functions.
var funcs = template.FuncMap{
	"counterURL": CounterURL,
	"formKey":    FormKey,
	"date":       func(t interface{ Format(string) string }) string { return t.Format("2006-01-02 15:04 UTC") },
}

// FormKey returns key as the forms carry it, query-escaped: a page
// cannot carry every byte a key may hold (a NUL becomes U+FFFD in HTML),
// and a form must act on the key the page shows, not on another.
func FormKey(key string) string { return url.QueryEscape(key) }
