package stacks

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"testing"
)

var update = flag.Bool("update", false, "rewrite docs/cases.md from stacks/cases")

// TestCasesPage: docs/cases.md is what the case files say (go test ./stacks -run TestCasesPage
// -update rewrites it).
func TestCasesPage(t *testing.T) {
	cat, err := Cases()
	if err != nil {
		t.Fatal(err)
	}
	got := CasesPage(cat)
	file := filepath.Join("..", "docs", "cases.md")
	if *update {
		if err := os.WriteFile(file, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(file)
	if err != nil {
		t.Fatalf("%v (go test ./stacks -run TestCasesPage -update writes it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("docs/cases.md is not what stacks/cases says: go test ./stacks -run TestCasesPage -update")
	}
	for _, s := range cat.All() {
		if !bytes.Contains(got, []byte("## "+s.Name+": ")) {
			t.Errorf("case %s is missing from the page", s.Name)
		}
	}
}
