package testplan

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"sort"
	"strings"
)

// E2ETests names the top-level tests in dir's _test.go files that ask testing.Short(): the
// ones that skip themselves, or their end-to-end part, under -short. `make test` runs with
// -short; `make test-e2e` runs exactly these, in full.
func E2ETests(dir string) ([]string, error) {
	tests, err := Tests(dir)
	var names []string
	for _, t := range tests {
		if t.AsksShort {
			names = append(names, t.Name)
		}
	}
	return names, err
}

// Test is one top-level test function.
type Test struct {
	Name      string
	AsksShort bool // it calls testing.Short(): make test-e2e runs it in full
}

// Tests lists the top-level tests in dir's _test.go files, by name.
func Tests(dir string) ([]Test, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*_test.go"))
	if err != nil {
		return nil, err
	}
	fset := token.NewFileSet()
	var tests []Test
	for _, file := range files {
		f, err := parser.ParseFile(fset, file, nil, parser.SkipObjectResolution)
		if err != nil {
			return nil, err
		}
		for _, decl := range f.Decls {
			fn, ok := decl.(*ast.FuncDecl)
			if !ok || fn.Recv != nil || fn.Body == nil || !strings.HasPrefix(fn.Name.Name, "Test") || fn.Name.Name == "TestMain" {
				continue
			}
			tests = append(tests, Test{Name: fn.Name.Name, AsksShort: asksShort(fn.Body)})
		}
	}
	sort.Slice(tests, func(i, j int) bool { return tests[i].Name < tests[j].Name })
	return tests, nil
}

// asksShort reports whether body calls testing.Short anywhere, closures included.
func asksShort(body ast.Node) bool {
	found := false
	ast.Inspect(body, func(n ast.Node) bool {
		call, ok := n.(*ast.CallExpr)
		if !ok {
			return !found
		}
		if sel, ok := call.Fun.(*ast.SelectorExpr); ok && sel.Sel.Name == "Short" {
			if id, ok := sel.X.(*ast.Ident); ok && id.Name == "testing" {
				found = true
			}
		}
		return !found
	})
	return found
}

// RunPattern is a go test -run pattern matching exactly the named top-level tests.
func RunPattern(names []string) string {
	return "^(" + strings.Join(names, "|") + ")$"
}
