package emulator

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestConformanceTableNamesRealTests keeps docs/envoy-conformance.md honest: every row names
// the source it follows (a file and a function) and at least one test, and every test it
// names exists in the repository, so `make test` runs it.
func TestConformanceTableNamesRealTests(t *testing.T) {
	root := filepath.Join("..", "..")
	doc, err := os.ReadFile(filepath.Join(root, "docs", "envoy-conformance.md"))
	if err != nil {
		t.Fatal(err)
	}
	tests := map[string]bool{}
	decl := regexp.MustCompile(`(?m)^func (Test\w+)\(`)
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == ".git" || d.Name() == "testdata") {
			return filepath.SkipDir
		}
		if !strings.HasSuffix(path, "_test.go") {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, m := range decl.FindAllSubmatch(b, -1) {
			tests[string(m[1])] = true
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	source := regexp.MustCompile("`[\\w./-]+\\.(cc|c|h|go|proto|rst|json)`: `?\\w")
	named := regexp.MustCompile("`(Test\\w+)`")
	// The h2spec table has a row per case and a tier of its own (runner/conformance).
	text := string(doc)
	if i, j := strings.Index(text, "<!-- h2spec table: begin -->"), strings.Index(text, "<!-- h2spec table: end -->"); i >= 0 && j > i {
		text = text[:i] + text[j:]
	}
	rows := 0
	for _, line := range strings.Split(text, "\n") {
		if !strings.HasPrefix(line, "| ") || strings.HasPrefix(line, "| behaviour") {
			continue
		}
		cells := strings.Split(strings.Trim(line, "| "), " | ")
		if len(cells) != 4 {
			t.Errorf("row with %d cells, want 4: %s", len(cells), line)
			continue
		}
		rows++
		behaviour, src, test := cells[0], cells[1], cells[3]
		if !strings.Contains(behaviour, "every call") && !source.MatchString(src) {
			t.Errorf("row %q names no source file and function: %s", behaviour, src)
		}
		ms := named.FindAllStringSubmatch(test, -1)
		if len(ms) == 0 {
			t.Errorf("row %q names no test", behaviour)
		}
		for _, m := range ms {
			if !tests[m[1]] {
				t.Errorf("row %q names %s, which no _test.go file declares", behaviour, m[1])
			}
		}
	}
	if rows < 20 {
		t.Fatalf("the table has %d rows", rows)
	}
}
