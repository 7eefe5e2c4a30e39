package api

import (
	"crypto/rand"
	"testing"
	"time"
)

// TestPrincipalScope: May and ListPrefix, the rules the dashboard
// applies with the API's, for root, prefix, exact and backup tokens.
func TestPrincipalScope(t *testing.T) {
	root := Principal{Name: "root", Root: true}
	pre := Principal{Prefix: "octo/"}
	exact := Principal{Prefix: "octo", Exact: true}
	backup := Principal{Backup: true, Prefix: "(backup)"}
	mays := []struct {
		p    Principal
		key  string
		want bool
	}{
		{root, "", true}, {root, "anything", true},
		{pre, "octo/a", true}, {pre, "octo/", true}, {pre, "octo", false}, {pre, "other", false},
		{exact, "octo", true}, {exact, "octo/a", false},
		{backup, "(backup)", false}, {backup, "", false},
	}
	for _, tt := range mays {
		if got := tt.p.May(tt.key); got != tt.want {
			t.Errorf("%+v.May(%q) = %v, want %v", tt.p, tt.key, got, tt.want)
		}
	}
	lists := []struct {
		p      Principal
		prefix string
		want   string
		ok     bool
	}{
		{root, "", "", true}, {root, "a", "a", true},
		{pre, "", "octo/", true}, {pre, "oc", "octo/", true}, {pre, "octo/a", "octo/a", true}, {pre, "other", "", false},
		{exact, "", "", false}, {backup, "", "", false},
	}
	for _, tt := range lists {
		if got, ok := tt.p.ListPrefix(tt.prefix); got != tt.want || ok != tt.ok {
			t.Errorf("%+v.ListPrefix(%q) = %q, %v, want %q, %v", tt.p, tt.prefix, got, ok, tt.want, tt.ok)
		}
	}
}

// TestMakeTokenChecksAsTheAPI: MakeToken refuses what POST
// /api/v1/tokens refuses, and makes a token whose secret names its id.
func TestMakeTokenChecksAsTheAPI(t *testing.T) {
	tests := []struct {
		name, prefix string
		backup       bool
		ok           bool
	}{
		{"ci", "octo/", false, true},
		{"ci", "", true, true},
		{"", "octo/", false, false},
		{"ci", "", false, false},
		{"ci", "octo/", true, false},
		{"ci", string([]byte{0xff}), false, false},
	}
	for _, tt := range tests {
		tok, secret, err := MakeToken(rand.Reader, tt.name, tt.prefix, tt.backup, time.Now())
		if (err == nil) != tt.ok {
			t.Errorf("MakeToken(%q, %q, %v) = %v, want ok %v", tt.name, tt.prefix, tt.backup, err, tt.ok)
			continue
		}
		if err != nil {
			continue
		}
		if id, ok := secretID(secret); !ok || id != tok.ID || tok.Backup() != tt.backup {
			t.Errorf("MakeToken(%q, %q, %v): secret names %q, token %q, backup %v", tt.name, tt.prefix, tt.backup, id, tok.ID, tok.Backup())
		}
	}
}
