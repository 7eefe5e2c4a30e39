package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestDocsLinksResolve: every relative link of README.md and docs/, and
// every #anchor into a Markdown file, names something that exists.
func TestDocsLinksResolve(t *testing.T) {
	if err := CheckLinks(filepath.Join("..", "..")); err != nil {
		t.Error(err)
	}
}

func TestCheckLinks(t *testing.T) {
	tests := []struct {
		name  string
		files map[string]string
		want  []string // in the error, or none when nil
	}{
		{"all resolve", map[string]string{
			"README.md":     "[a](docs/a.md#the-b-heading), [self](#top), ![i](docs/i.svg), [web](https://example.com/x), `[no](code.md)`\n# Top\n",
			"docs/a.md":     "# A\n\n## The `b` heading!\n\n[up](../README.md) [sub](sub/c.md#c) [id](#here) <a id=\"here\"></a>\n```\n[fenced](nowhere.md)\n```\n",
			"docs/i.svg":    "<svg/>",
			"docs/sub/c.md": "# C\n[twice](#d-1)\n## D\n## D\n[html](../a.md)\n",
		}, nil},
		{"missing file", map[string]string{
			"README.md": "[gone](docs/gone.md)\n",
		}, []string{"README.md:1: docs/gone.md: no such file"}},
		{"missing anchor", map[string]string{
			"README.md": "# Title\n",
			"docs/a.md": "[bad](../README.md#nope) and [self](#also-nope)\n",
		}, []string{`docs/a.md:1: ../README.md#nope: no heading or id "nope" in README.md`, `docs/a.md:1: #also-nope: no heading or id "also-nope" in docs/a.md`}},
		{"outside the repository", map[string]string{
			"README.md": "[up](../elsewhere.md)\n",
		}, []string{"README.md:1: ../elsewhere.md: outside the repository"}},
		{"reference and html links", map[string]string{
			"README.md": "[r]: docs/r.md\n<img src=\"docs/p.png\">\n",
		}, []string{"docs/r.md: no such file", "docs/p.png: no such file"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := t.TempDir()
			if err := os.Mkdir(filepath.Join(root, "docs"), 0o755); err != nil {
				t.Fatal(err)
			}
			for name, text := range tt.files {
				p := filepath.Join(root, name)
				if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			err := CheckLinks(root)
			if tt.want == nil {
				if err != nil {
					t.Errorf("CheckLinks = %v, want nil", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("CheckLinks = nil, want an error naming %q", tt.want)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("CheckLinks = %v, want it to name %q", err, w)
				}
			}
		})
	}
}

func TestSlug(t *testing.T) {
	tests := []struct{ heading, want string }{
		{"The per-request overhead of /hi and the badge: deadlines and the clock (2026-11-27, evening)", "the-per-request-overhead-of-hi-and-the-badge-deadlines-and-the-clock-2026-11-27-evening"},
		{"A slow request, after the fact: the flight recorder", "a-slow-request-after-the-fact-the-flight-recorder"},
		{"`-store` and [its link](x.md)", "-store-and-its-link"},
		{"Metrics and the flight recorder ##", "metrics-and-the-flight-recorder"},
	}
	for _, tt := range tests {
		if got := Slug(tt.heading); got != tt.want {
			t.Errorf("Slug(%q) = %q, want %q", tt.heading, got, tt.want)
		}
	}
}
