package main

import (
	"errors"
	"fmt"
	"io/fs"
	"iter"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"unicode"
)

// linkedDocs returns the Markdown files whose relative links are checked,
// relative to root: README.md and every .md file under docs/.
func linkedDocs(root string) ([]string, error) {
	names := []string{"README.md"}
	err := filepath.WalkDir(filepath.Join(root, "docs"), func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && strings.HasSuffix(path, ".md") {
			rel, err := filepath.Rel(root, path)
			if err != nil {
				return err
			}
			names = append(names, filepath.ToSlash(rel))
		}
		return nil
	})
	return names, err
}

var (
	// inlineLink matches a Markdown link or image, [text](target) or
	// [text](target "title"), whose text may hold one level of brackets.
	inlineLink = regexp.MustCompile(`\[(?:[^\[\]]|\[[^\[\]]*\])*\]\(<?([^()\s<>]*)>?(?:\s+"[^"]*")?\)`)
	// refLink matches a link reference definition: [label]: target.
	refLink = regexp.MustCompile(`(?m)^ {0,3}\[[^\]]+\]:\s+<?(\S+?)>?(?:\s|$)`)
	// htmlLink matches the target of an HTML href or src attribute.
	htmlLink = regexp.MustCompile(`(?:href|src)="([^"]*)"`)
	// htmlAnchor matches an HTML element's id or name, which a link may
	// target as #id.
	htmlAnchor = regexp.MustCompile(`<[a-zA-Z][^>]*\s(?:id|name)="([^"]+)"`)
	// codeSpan matches inline code, whose text is not a link.
	codeSpan = regexp.MustCompile("`+[^`]*`+")
	// scheme matches a target that names its own scheme (https:, mailto:).
	scheme = regexp.MustCompile(`^[a-zA-Z][a-zA-Z0-9+.-]*:`)
)

// CheckLinks reports every relative link of README.md and docs/ (under
// root) whose file does not exist, or whose #anchor names no heading or
// id of the Markdown file it points to. Links with a scheme (https:,
// mailto:) are not followed. It returns nil when every link resolves.
func CheckLinks(root string) error {
	names, err := linkedDocs(root)
	if err != nil {
		return err
	}
	anchors := map[string]map[string]bool{} // by path from root
	anchorsOf := func(rel string) (map[string]bool, error) {
		if a, ok := anchors[rel]; ok {
			return a, nil
		}
		b, err := os.ReadFile(filepath.Join(root, rel))
		if err != nil {
			return nil, err
		}
		a := Anchors(string(b))
		anchors[rel] = a
		return a, nil
	}
	var broken []string
	for _, name := range names {
		b, err := os.ReadFile(filepath.Join(root, name))
		if err != nil {
			return err
		}
		for _, l := range Links(string(b)) {
			if scheme.MatchString(l.Target) || strings.HasPrefix(l.Target, "//") {
				continue
			}
			path, anchor, _ := strings.Cut(l.Target, "#")
			target := name
			if path != "" {
				target = filepath.ToSlash(filepath.Join(filepath.Dir(name), path))
				if strings.HasPrefix(target, "../") || filepath.IsAbs(path) {
					broken = append(broken, fmt.Sprintf("%s:%d: %s: outside the repository", name, l.Line, l.Target))
					continue
				}
				if _, err := os.Stat(filepath.Join(root, target)); err != nil {
					broken = append(broken, fmt.Sprintf("%s:%d: %s: no such file", name, l.Line, l.Target))
					continue
				}
			}
			if anchor == "" || !strings.HasSuffix(target, ".md") {
				continue
			}
			a, err := anchorsOf(target)
			if err != nil {
				return err
			}
			if !a[anchor] {
				broken = append(broken, fmt.Sprintf("%s:%d: %s: no heading or id %q in %s", name, l.Line, l.Target, anchor, target))
			}
		}
	}
	if len(broken) > 0 {
		return errors.New("broken relative links:\n\t" + strings.Join(broken, "\n\t"))
	}
	return nil
}

// A Link is the target of a link in a Markdown text, and its line.
type Link struct {
	Target string
	Line   int
}

// Links returns the targets of the links of the Markdown text md: inline
// links and images, reference definitions and HTML href and src
// attributes, outside fenced code blocks and code spans.
func Links(md string) []Link {
	var links []Link
	for i, line := range prose(md) {
		text := codeSpan.ReplaceAllString(line, "``")
		for _, re := range []*regexp.Regexp{inlineLink, refLink, htmlLink} {
			for _, m := range re.FindAllStringSubmatch(text, -1) {
				if m[1] != "" {
					links = append(links, Link{Target: m[1], Line: i + 1})
				}
			}
		}
	}
	return links
}

// prose yields the lines of the Markdown text md that are outside fenced
// code blocks, with their index among all of md's lines.
func prose(md string) iter.Seq2[int, string] {
	return func(yield func(int, string) bool) {
		fence := ""
		for i, line := range strings.Split(md, "\n") {
			if f, ok := fenceOf(line); ok {
				if fence == "" {
					fence = f
				} else if strings.HasPrefix(f, fence) {
					fence = ""
				}
				continue
			}
			if fence == "" && !yield(i, line) {
				return
			}
		}
	}
}

// fenceOf returns the run of backticks or tildes that opens line as a
// code fence.
func fenceOf(line string) (string, bool) {
	t := strings.TrimLeft(line, " ")
	if len(line)-len(t) > 3 || len(t) < 3 || (t[0] != '`' && t[0] != '~') {
		return "", false
	}
	n := len(t) - len(strings.TrimLeft(t, t[:1]))
	if n < 3 {
		return "", false
	}
	return t[:n], true
}

// Anchors returns the anchors a link may target in the Markdown text md:
// each heading's, made as GitHub makes them (see Slug; a repeated slug
// gets -1, -2, …), and the id or name of each HTML element.
func Anchors(md string) map[string]bool {
	a := map[string]bool{}
	seen := map[string]int{}
	for _, line := range prose(md) {
		for _, m := range htmlAnchor.FindAllStringSubmatch(line, -1) {
			a[m[1]] = true
		}
		t := strings.TrimLeft(line, " ")
		if len(line)-len(t) > 3 || !strings.HasPrefix(t, "#") {
			continue
		}
		level := len(t) - len(strings.TrimLeft(t, "#"))
		if level > 6 || (len(t) > level && t[level] != ' ') {
			continue
		}
		s := Slug(t[level:])
		if n, ok := seen[s]; ok {
			seen[s] = n + 1
			s = fmt.Sprintf("%s-%d", s, n+1)
		} else {
			seen[s] = 0
		}
		a[s] = true
	}
	return a
}

// Slug returns the anchor GitHub gives a heading's text: lower case,
// without Markdown's emphasis and code marks, links reduced to their
// text, every character that is not a letter, a digit, a space, a
// hyphen or an underscore dropped, and each space a hyphen.
func Slug(heading string) string {
	h := strings.TrimSpace(strings.TrimRight(strings.TrimSpace(heading), "#"))
	h = inlineLink.ReplaceAllStringFunc(h, func(s string) string {
		return s[1:strings.LastIndex(s, "](")]
	})
	var b strings.Builder
	for _, r := range strings.ToLower(h) {
		switch {
		case unicode.IsLetter(r), unicode.IsDigit(r), r == '-', r == '_':
			b.WriteRune(r)
		case r == ' ':
			b.WriteByte('-')
		}
	}
	return b.String()
}
