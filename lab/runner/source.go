package runner

import (
	"bytes"
	"fmt"
	"go/ast"
	"go/format"
	"go/parser"
	"go/token"
	"path/filepath"
	"slices"
	"strings"
)

// Source is the parsed source of one case's package.
type Source struct {
	fset  *token.FileSet
	decls map[string]ast.Decl // top-level funcs, vars, consts and types by name
	files map[string][]byte   // file name -> content
}

// ParseDir parses the non-test Go files of dir.
func ParseDir(dir string) (*Source, error) {
	fset := token.NewFileSet()
	matches, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		return nil, fmt.Errorf("list %s: %w", dir, err)
	}
	s := &Source{fset: fset, decls: map[string]ast.Decl{}, files: map[string][]byte{}}
	for _, name := range matches {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, parser.ParseComments)
		if err != nil {
			return nil, fmt.Errorf("parse %s: %w", name, err)
		}
		for _, d := range f.Decls {
			switch d := d.(type) {
			case *ast.FuncDecl:
				if d.Recv == nil {
					s.decls[d.Name.Name] = d
				}
			case *ast.GenDecl:
				for _, spec := range d.Specs {
					switch sp := spec.(type) {
					case *ast.ValueSpec:
						for _, n := range sp.Names {
							s.decls[n.Name] = d
						}
					case *ast.TypeSpec:
						s.decls[sp.Name.Name] = d
					}
				}
			}
		}
	}
	return s, nil
}

// Func returns the source of the top-level function name, preceded by the
// unexported package-level declarations it uses (and those they use), in
// source order, so that a step's text holds everything it changed. The
// doc comment of name is left out: it is quoted beside the diff.
func (s *Source) Func(name string) (string, error) {
	fd, ok := s.decls[name].(*ast.FuncDecl)
	if !ok {
		return "", fmt.Errorf("no function %s", name)
	}
	seen := map[ast.Decl]bool{fd: true}
	var deps []ast.Decl
	var visit func(n ast.Node)
	visit = func(n ast.Node) {
		ast.Inspect(n, func(n ast.Node) bool {
			id, ok := n.(*ast.Ident)
			if !ok || ast.IsExported(id.Name) {
				return true
			}
			d, ok := s.decls[id.Name]
			if !ok || seen[d] {
				return true
			}
			seen[d] = true
			deps = append(deps, d)
			visit(d)
			return true
		})
	}
	visit(fd.Body)
	slices.SortFunc(deps, func(a, b ast.Decl) int { return int(a.Pos() - b.Pos()) })
	var b bytes.Buffer
	for _, d := range deps {
		if err := format.Node(&b, s.fset, d); err != nil {
			return "", fmt.Errorf("print %s's dependencies: %w", name, err)
		}
		b.WriteString("\n\n")
	}
	body := *fd
	body.Doc = nil
	if err := format.Node(&b, s.fset, &body); err != nil {
		return "", fmt.Errorf("print %s: %w", name, err)
	}
	b.WriteString("\n")
	return b.String(), nil
}

// Doc returns the doc comment of the top-level declaration name, as text.
func (s *Source) Doc(name string) string {
	switch d := s.decls[name].(type) {
	case *ast.FuncDecl:
		return d.Doc.Text()
	case *ast.GenDecl:
		return d.Doc.Text()
	}
	return ""
}

// Lines returns the file and the first and last lines of function name.
func (s *Source) Lines(name string) (file string, first, last int, ok bool) {
	fd, ok := s.decls[name].(*ast.FuncDecl)
	if !ok {
		return "", 0, 0, false
	}
	p, e := s.fset.Position(fd.Pos()), s.fset.Position(fd.End())
	return p.Filename, p.Line, e.Line, true
}

// Diff returns a line diff of a and b, every line of both prefixed with
// "  " (in both), "- " (only in a) or "+ " (only in b), in the order of a
// longest common subsequence.
func Diff(a, b string) string {
	x, y := strings.Split(strings.TrimSuffix(a, "\n"), "\n"), strings.Split(strings.TrimSuffix(b, "\n"), "\n")
	// lcs[i][j] is the length of the longest common subsequence of x[i:] and y[j:].
	lcs := make([][]int, len(x)+1)
	for i := range lcs {
		lcs[i] = make([]int, len(y)+1)
	}
	for i := len(x) - 1; i >= 0; i-- {
		for j := len(y) - 1; j >= 0; j-- {
			if x[i] == y[j] {
				lcs[i][j] = lcs[i+1][j+1] + 1
			} else {
				lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
			}
		}
	}
	var out strings.Builder
	i, j := 0, 0
	for i < len(x) || j < len(y) {
		switch {
		case i < len(x) && j < len(y) && x[i] == y[j]:
			out.WriteString("  " + x[i] + "\n")
			i, j = i+1, j+1
		case i < len(x) && (j == len(y) || lcs[i+1][j] >= lcs[i][j+1]):
			out.WriteString("- " + x[i] + "\n")
			i++
		default:
			out.WriteString("+ " + y[j] + "\n")
			j++
		}
	}
	return out.String()
}
