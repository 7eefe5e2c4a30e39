package store

import "testing"

// TestKeyIsRoute: a key whose last segment is a route's name is one; a
// route name elsewhere, or inside a segment, is not.
func TestKeyIsRoute(t *testing.T) {
	tests := []struct {
		key  string
		want bool
	}{
		{"ns/graph", true},
		{"ns/daily", true},
		{"ns/stream", true},
		{"a/b/graph", true},
		{"graph", true},
		{"/graph", true},
		{"", false},
		{"ns", false},
		{"graph/ns", false},
		{"ns/graphs", false},
		{"ns/Graph", false},
		{"ns/graph/", false},
		{"ns/my-daily", false},
	}
	for _, tt := range tests {
		if got := KeyIsRoute(tt.key); got != tt.want {
			t.Errorf("KeyIsRoute(%q) = %v, want %v", tt.key, got, tt.want)
		}
		if got := KeyIsRoute([]byte(tt.key)); got != tt.want {
			t.Errorf("KeyIsRoute([]byte(%q)) = %v, want %v", tt.key, got, tt.want)
		}
	}
}

// TestBackupPrefixCoversNoKey: a backup token acts on no key, even the
// longest, in any visitors that reads it.
func TestBackupPrefixCoversNoKey(t *testing.T) {
	if len(BackupPrefix) <= MaxKeyBytes {
		t.Fatalf("len(BackupPrefix) = %d, want more than MaxKeyBytes (%d): a key could start with it", len(BackupPrefix), MaxKeyBytes)
	}
	tok := Token{Prefix: BackupPrefix}
	for _, key := range []string{"", "a", BackupPrefix[:MaxKeyBytes]} {
		if tok.Covers(key) {
			t.Errorf("a backup token covers %q", key)
		}
	}
	if !tok.Backup() || (&Token{Prefix: ""}).Backup() {
		t.Errorf("Backup() is wrong")
	}
}
