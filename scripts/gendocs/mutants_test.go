package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// equivalentRow is a row of docs/testing.md's table of equivalent
// mutants, which scripts/mutation.sh reads: "| internal/pkg | file.go:L:C |
// MUTATOR | reason |".
var equivalentRow = regexp.MustCompile(`(?m)^\| (internal/[^|]+?) \| ([^|:]+):(\d+):(\d+) \| ([A-Z_]+) \|`)

// mutatedBy are the bytes a gremlins mutator of each kind can stand on.
var mutatedBy = map[string]string{
	"ARITHMETIC_BASE":       "+-*/%",
	"CONDITIONALS_BOUNDARY": "<>",
	"CONDITIONALS_NEGATION": "=!<>",
	"INCREMENT_DECREMENT":   "+-",
	"INVERT_NEGATIVES":      "-",
}

// TestEquivalentMutantsPointAtTheirCode: every row of the table of
// equivalent mutants names a file that exists, and a line and column
// there where its kind of mutator can stand (an operator it mutates).
// Code moved by a later change leaves a row pointing at another line:
// mutation.sh then fails on the survivor it no longer recognises, and the
// reason explains code that is not there. Such rows were found stale in
// six packages on 2026-11-27; this keeps them where their code is.
func TestEquivalentMutantsPointAtTheirCode(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "testing.md"))
	if err != nil {
		t.Fatal(err)
	}
	rows := equivalentRow.FindAllStringSubmatch(string(doc), -1)
	if len(rows) < 100 {
		t.Fatalf("found %d rows of equivalent mutants in docs/testing.md, want the table (over 100)", len(rows))
	}
	files := map[string][]string{}
	for _, r := range rows {
		pkg, file, mut := r[1], r[2], r[5]
		line, _ := strconv.Atoi(r[3])
		col, _ := strconv.Atoi(r[4])
		where := pkg + "/" + file + ":" + r[3] + ":" + r[4] + " " + mut
		ops, ok := mutatedBy[mut]
		if !ok {
			t.Errorf("%s: unknown mutator", where)
			continue
		}
		src, ok := files[pkg+"/"+file]
		if !ok {
			b, err := os.ReadFile(filepath.Join("..", "..", pkg, file))
			if err != nil {
				t.Errorf("%s: %v", where, err)
				continue
			}
			src = strings.Split(string(b), "\n")
			files[pkg+"/"+file] = src
		}
		if line < 1 || line > len(src) || col < 1 || col > len(src[line-1]) {
			t.Errorf("%s: no such line and column (the file has %d lines)", where, len(src))
			continue
		}
		if c := src[line-1][col-1]; !strings.ContainsRune(ops, rune(c)) {
			t.Errorf("%s: the column holds %q, not an operator the mutator changes (%s); has the code moved?\n\t%s", where, c, ops, strings.TrimSpace(src[line-1]))
		}
	}
}
