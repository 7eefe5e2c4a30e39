package dashboard

import (
	"html/template"
	"strconv"
)

func itoa(n int) string { return strconv.Itoa(n) }

// funcs are the templates' functions.
var funcs = template.FuncMap{
	"counterURL": CounterURL,
	"date":       func(t interface{ Format(string) string }) string { return t.Format("2006-01-02 15:04 UTC") },
}
