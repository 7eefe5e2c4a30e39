package app

import (
	"testing"
)

// TestTLSAddrDefault: -addr is :443 when HTTPS is on and -addr is not
// given, by flag or environment, and :8080 otherwise. It catches HTTPS
// on :8080 by default, and a given -addr overridden.
func TestTLSAddrDefault(t *testing.T) {
	tests := []struct {
		name string
		args []string
		env  map[string]string
		want string
	}{
		{"plain", nil, nil, ":8080"},
		{"acme", []string{"-tls-domains", "a.example"}, nil, ":443"},
		{"files", []string{"-tls-cert", "c.pem", "-tls-key", "k.pem"}, nil, ":443"},
		{"acme and -addr", []string{"-tls-domains", "a.example", "-addr", ":8443"}, nil, ":8443"},
		{"acme and env", []string{"-tls-domains", "a.example"}, map[string]string{"VISITORS_ADDR": "fd:3"}, "fd:3"},
		{"acme by env", nil, map[string]string{"VISITORS_TLS_DOMAINS": "a.example"}, ":443"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			args := append([]string{"-data", t.TempDir()}, tt.args...)
			c, err := ParseFlags(args, func(k string) string { return tt.env[k] }, t.Output())
			if err != nil {
				t.Fatalf("ParseFlags(%q) = %v", args, err)
			}
			if c.Addr != tt.want {
				t.Errorf("ParseFlags(%q, %v).Addr = %q, want %q", args, tt.env, c.Addr, tt.want)
			}
		})
	}
}
