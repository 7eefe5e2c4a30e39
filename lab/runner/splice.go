package runner

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"
)

// Markers returns the lines that open and close the generated section of
// case name in its page, docs/lab/<name>.md, or of the section name
// (provenance, closing) in docs/lab.md.
func Markers(name string) (begin, end string) {
	return fmt.Sprintf("<!-- BEGIN go run ./cmd/lab: %s -->", name),
		fmt.Sprintf("<!-- END go run ./cmd/lab: %s -->", name)
}

// Splice rewrites, in the Markdown file path, the text between each
// case's markers with sections[case]. A case whose markers are missing
// gets them, with its section, at the end; a missing file is created.
func Splice(path string, sections map[string]string, cases []Case) error {
	b, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("read %s: %w", path, err)
	}
	doc := string(b)
	for _, c := range cases {
		s, ok := sections[c.Name]
		if !ok {
			continue
		}
		doc = splice(doc, c.Name, s)
	}
	if err := os.WriteFile(path, []byte(doc), 0o644); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

func splice(doc, name, section string) string {
	begin, end := Markers(name)
	block := begin + "\n\n" + strings.TrimSpace(section) + "\n\n" + end
	i := strings.Index(doc, begin)
	j := strings.Index(doc, end)
	if i < 0 || j < i {
		if doc != "" && !strings.HasSuffix(doc, "\n") {
			doc += "\n"
		}
		return doc + "\n" + block + "\n"
	}
	return doc[:i] + block + doc[j+len(end):]
}
