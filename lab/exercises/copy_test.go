//go:build !lab_exercise

package exercises

import (
	"bytes"
	"go/ast"
	"go/parser"
	"go/printer"
	"go/token"
	"testing"
)

// funcBody returns the printed body of the function name declared in
// file.
func funcBody(t *testing.T, file, name string) string {
	t.Helper()
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, file, nil, parser.SkipObjectResolution)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range f.Decls {
		if fd, ok := d.(*ast.FuncDecl); ok && fd.Name.Name == name {
			var b bytes.Buffer
			if err := printer.Fprint(&b, fset, fd.Body); err != nil {
				t.Fatal(err)
			}
			return b.String()
		}
	}
	t.Fatalf("%s: no func %s", file, name)
	return ""
}

// TestReaderGreetingIsStep5: exercise 1's handler (reader.go, behind the
// build tag) is greeting's step 5 as it is, the one step with the buffer
// bug and no other that allocates per request. A copy of step 8 failed
// the exercise with the regexp pool's 17 allocations after the buffer was
// fixed as the exercise asks. Not built with the tag: the reader's fix
// changes the copy.
func TestReaderGreetingIsStep5(t *testing.T) {
	if got, want := funcBody(t, "reader.go", "Greeting"), funcBody(t, "../greeting/greeting.go", "Step5"); got != want {
		t.Errorf("reader.go's Greeting is not greeting.Step5:\n%s\nwant\n%s", got, want)
	}
}
