package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCSVImportRefusesUnreachableCompatKeys: a CSV row whose key is in a
// closed service's namespace but is not a key any of its URLs counts
// into (the URL written as it is, not escaped; a segment too many; a
// lower-case escape) is refused naming its line and the key meant, and
// changes nothing. Before the check "hits/https://github.com/o/r,910"
// was imported into a key nothing shows, the badge of that URL starting
// again from 1 / 1.
func TestCSVImportRefusesUnreachableCompatKeys(t *testing.T) {
	dir := t.TempDir()
	data := filepath.Join(dir, "data")
	f := filepath.Join(dir, "c.csv")
	if out, err := command(t, bin, "import", "-data", data, "-format", "csv", write(t, f, "countapi/ns/a,1\nb c,2\n")).CombinedOutput(); err != nil {
		t.Fatalf("import of a good CSV: %v %s", err, out)
	}
	export := func() string {
		out, err := command(t, bin, "export", "-data", data).Output()
		if err != nil {
			t.Fatalf("export: %v", err)
		}
		return string(out)
	}
	before := export()
	for _, tt := range []struct{ name, csv, want string }{
		{"raw URL", "countapi/ns/a,1\nhits/https://github.com/o/r,910\n", `line 2: key "hits/https://github.com/o/r": no URL of hits counts into it`},
		{"the key meant", "countapi/ns/a,1\nhits/https://github.com/o/r,910\n", `did you mean "hits/https~3A~2F~2Fgithub.com~2Fo~2Fr"?`},
		{"space", "ghpvc/Octo Cat,5\n", `line 1: key "ghpvc/Octo Cat": no URL of ghpvc counts into it`},
		{"space, the key meant", "ghpvc/Octo Cat,5\n", `did you mean "ghpvc/Octo~20Cat"?`},
		{"three segments", "countapi/ns/a,1\ncountapi/a/b/c,3\n", `line 2: key "countapi/a/b/c": no URL of countapi counts into it`},
		{"lower-case escape", "visitor-badge/a~2fb,3\n", `line 1: key "visitor-badge/a~2fb": no URL of visitor-badge`},
		{"route name unescaped", "ghpvc/x,1\nvisitor-badge/graphs,1\nvisitor-badge/~2E,1\nghpvc/~67raph,1\nghpvc/graph~,1\n", `line 5: key "ghpvc/graph~"`},
	} {
		out, err := command(t, bin, "import", "-data", data, "-format", "csv", write(t, f, tt.csv)).CombinedOutput()
		if err == nil || !strings.Contains(string(out), tt.want) || !strings.Contains(string(out), "the store was not changed") {
			t.Errorf("%s: import = %v %q, want a refusal with %q", tt.name, err, out, tt.want)
		}
	}
	if after := export(); after != before {
		t.Errorf("a refused CSV changed the store:\n%s\n%s", before, after)
	}
}

// write writes body to the file f and returns f.
func write(t *testing.T, f, body string) string {
	t.Helper()
	if err := os.WriteFile(f, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return f
}
