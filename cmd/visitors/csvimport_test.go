package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"visitors/internal/servertest"
	"visitors/internal/store/dump"
)

// hostileCSVs are CSVs every import refuses whole, naming the line: each
// with the line and text its refusal must hold. The first rows of most
// are good, so that a refusal that came after writing them would show.
func hostileCSVs() []struct{ name, csv, want string } {
	today := time.Now().UTC().Format(dump.DateLayout)
	return []struct{ name, csv, want string }{
		{"bad key", "key,total\ncountapi/ns/a,1\nns/graph,2\n", "line 3: key \"ns/graph\": not a key the service accepts"},
		{"key too long", "countapi/ns/a,1\n" + strings.Repeat("k", 129) + ",1\n", "line 2: key \"kkk"},
		{"key not UTF-8", "countapi/ns/a,1\nb\xff,1\n", "line 2: key"},
		{"negative count", "countapi/ns/a,1\nb,-3\n", `line 2: key "b": total "-3" is not a count`},
		{"huge count", "countapi/ns/a,1\nb,4611686018427387905\n", `line 2: key "b": total "4611686018427387905" is not a count`},
		{"huge day", "countapi/ns/a,1\nb," + today + ",549755813889\n", "line 2: key \"b\": day " + today},
		{"duplicate key", "countapi/ns/a,1\nb,2\ncountapi/ns/a,3\n", `line 3: key "countapi/ns/a": total given twice (first on line 1)`},
		{"duplicate day", "b," + today + ",1\nb," + today + ",1\n", "line 2: key \"b\": day " + today + " given twice"},
		{"BOM inside", "countapi/ns/a,1\n\uFEFFb,2\n", "line 2: a byte order mark"},
		{"wrong column count", "countapi/ns/a,1\nb,2,3,4\n", "line 2: 4 fields"},
		{"one column", "countapi/ns/a,1\nb\n", "line 2: 1 fields"},
		{"bad date", "countapi/ns/a,1\nb,2026-13-01,1\n", `line 2: key "b": day "2026-13-01": want YYYY-MM-DD`},
		{"days above total", "b,1\nb," + today + ",2\n", `line 2: key "b": the days add up to 2, more than the total 1`},
		{"bare quote", "countapi/ns/a,1\nb\"c,1\n", "line 2: bare \""},
		{"empty", "", "line 1: no counts"},
	}
}

// goodCSV carries counts over from each closed service, with a BOM and
// CRLF line ends as a spreadsheet writes them.
func goodCSV() string {
	yesterday := time.Now().UTC().AddDate(0, 0, -1).Format(dump.DateLayout)
	return "\uFEFFkey,total\r\n" +
		"countapi/mysite.com/visits,41\r\n" +
		"ghpvc/octo,1000\r\n" +
		"visitor-badge/octo.repo,7\r\n" +
		"hits/https~3A~2F~2Fgithub.com~2Focto~2Frepo,120\r\n" +
		"hits/https~3A~2F~2Fgithub.com~2Focto~2Frepo," + yesterday + ",4\r\n"
}

// TestCSVImportOffline: "visitors import -format csv" carries counts
// over into the embedded store, where the URLs of the closed services
// go on counting from them; each hostile CSV is refused naming its line
// and changes nothing (the export is the same byte for byte); -replace
// is refused with CSV.
func TestCSVImportOffline(t *testing.T) {
	dir := t.TempDir()
	data := filepath.Join(dir, "data")
	write := func(name, body string) string {
		f := filepath.Join(dir, name)
		if err := os.WriteFile(f, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return f
	}
	if out, err := command(t, bin, "import", "-data", data, "-format", "csv", write("good.csv", goodCSV())).CombinedOutput(); err != nil {
		t.Fatalf("import -format csv good.csv: %v %s", err, out)
	}
	export := func() string {
		out, err := command(t, bin, "export", "-data", data).Output()
		if err != nil {
			t.Fatalf("export: %v", err)
		}
		return string(out)
	}
	before := export()
	for _, h := range hostileCSVs() {
		out, err := command(t, bin, "import", "-data", data, "-format", "csv", write("hostile.csv", h.csv)).CombinedOutput()
		if err == nil || !strings.Contains(string(out), h.want) || !strings.Contains(string(out), "the store was not changed") {
			t.Errorf("%s: import = %v %q, want a refusal with %q", h.name, err, out, h.want)
		}
	}
	if out, err := command(t, bin, "import", "-data", data, "-format", "csv", "-replace", write("r.csv", "a,1\n")).CombinedOutput(); err == nil || !strings.Contains(string(out), "cannot -replace") {
		t.Errorf("import -format csv -replace = %v %q, want a refusal", err, out)
	}
	if out, err := command(t, bin, "import", "-data", data, "-format", "xml", write("x.csv", "a,1\n")).CombinedOutput(); err == nil || !strings.Contains(string(out), `-format "xml": want json or csv`) {
		t.Errorf("import -format xml = %v %q, want a refusal", err, out)
	}
	if after := export(); after != before {
		t.Errorf("a refused CSV changed the store:\n%s\n%s", before, after)
	}

	p := servertest.Start(t, bin, nil, "-data", data, "-log-level", "off", "-trusted-proxies", "127.0.0.1")
	tests := []struct{ path, want string }{
		{"/hit/mysite.com/visits", `{"value":42}` + "\n"},
		{"/get/mysite.com/visits", `{"value":42}` + "\n"},
		{"/ghpvc/?username=octo", `aria-label="Profile views: 1001"`},
		{"/badge?page_id=octo.repo", `aria-label="visitors: 8"`},
		{"/api/count/incr/badge.svg?" + urlHITS, `aria-label="hits: 1 / 121"`},
	}
	for i, tt := range tests {
		if code, _, body := fetch(t, p.URL(tt.path), browserUA, fmt.Sprintf("198.51.100.%d", i+1)); code != 200 || !strings.Contains(body, tt.want) {
			t.Errorf("GET %s after the import = %d %q, want %q", tt.path, code, body, tt.want)
		}
	}
	if err := p.Stop(syscall.SIGTERM, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	if out := export(); !strings.Contains(out, `"key":"hits/https~3A~2F~2Fgithub.com~2Focto~2Frepo","total":121`) {
		t.Errorf("export after the visits lacks the HITS key at 121:\n%s", out)
	}
}

// TestCSVImportAPI: POST /api/v1/import?format=csv adds counts while the
// service runs; each hostile CSV is a 400 naming its line that changes
// nothing; replace with CSV, an unknown format and a CSV past
// -import-max-bytes are refused.
func TestCSVImportAPI(t *testing.T) {
	p := servertest.Start(t, bin, apiEnv, "-data", t.TempDir(), "-import-max-bytes", "4096")
	mustGet(t, p.URL("/hit/mysite.com/visits")) // rulesOff: counted, 1
	if r := apiDo(t, p, "POST", "/api/v1/import?format=csv", apiRoot, goodCSV()); r.code != 200 || !strings.Contains(r.body, `"imported": true`) {
		t.Fatalf("POST /api/v1/import?format=csv = %d %s", r.code, r.body)
	}
	if _, _, body := mustGet(t, p.URL("/get/mysite.com/visits")); body != `{"value":42}`+"\n" {
		t.Errorf("/get after a CSV import that added 41 to 1 = %q, want 42", body)
	}
	before := fmt.Sprintf("%+v", listAll(t, p, apiRoot))
	for _, h := range hostileCSVs() {
		r := apiDo(t, p, "POST", "/api/v1/import?format=csv", apiRoot, h.csv)
		var e struct{ Error string }
		r.decode(t, &e)
		if r.code != 400 || !strings.Contains(e.Error, h.want) {
			t.Errorf("%s: POST = %d %s, want 400 with %q", h.name, r.code, r.body, h.want)
		}
	}
	for _, tt := range []struct {
		path, body string
		code       int
		want       string
	}{
		{"/api/v1/import?format=csv&replace=true", "a,1\n", 400, "cannot replace"},
		{"/api/v1/import?format=xml", "a,1\n", 400, "parameter format: want json or csv"},
		{"/api/v1/import?format=csv", strings.Repeat("a,1\n", 2000), 413, "-import-max-bytes"},
	} {
		if r := apiDo(t, p, "POST", tt.path, apiRoot, tt.body); r.code != tt.code || !strings.Contains(r.body, tt.want) {
			t.Errorf("POST %s = %d %s, want %d with %q", tt.path, r.code, r.body, tt.code, tt.want)
		}
	}
	if after := fmt.Sprintf("%+v", listAll(t, p, apiRoot)); after != before {
		t.Errorf("a refused CSV changed the counters:\n%s\n%s", before, after)
	}
}
