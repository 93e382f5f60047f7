package stacks

import (
	"strings"
	"testing"
)

// TestProductionCatalog loads the production-shaped scenarios: valid, each runnable on the
// simulated target only, and none of them in the built-in catalog a default run takes.
func TestProductionCatalog(t *testing.T) {
	prod, err := Production()
	if err != nil {
		t.Fatal(err)
	}
	if len(prod.All()) < 4 {
		t.Fatalf("production catalog: %v", prod.Names())
	}
	cat, err := Builtin()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cat.Merge(prod); err != nil {
		t.Fatalf("the production catalog does not merge with the built-in one: %v", err)
	}
	for _, s := range prod.All() {
		if !strings.HasPrefix(s.File, "stacks/production/") {
			t.Errorf("%s: file %q", s.Name, s.File)
		}
		if !s.RunsOn("sim") || s.RunsOn("local") || s.RunsOn("k3d") {
			t.Errorf("%s: requires.targets %v, want the simulated target only", s.Name, s.Requires.Targets)
		}
	}
}
