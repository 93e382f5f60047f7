package testplan

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"testing"
)

func TestAffected(t *testing.T) {
	pkgs := []Package{
		{ImportPath: "m/stacks", Dir: "stacks", Internal: map[string]bool{"m/stacks": true}},
		{ImportPath: "m/runner/cli", Dir: "runner/cli", Lab: true, Internal: map[string]bool{"m/runner/cli": true, "m/runner/cli/app": true, "m/stacks": true}},
		{ImportPath: "m/runner/cli/app", Dir: "runner/cli/app", Internal: map[string]bool{"m/runner/cli/app": true, "m/stacks": true}},
		{ImportPath: "m/infra", Dir: "infra", Lab: true, Internal: map[string]bool{"m/infra": true}},
		{ImportPath: "m/h2dial", Dir: "h2dial", Internal: map[string]bool{"m/h2dial": true}},
	}
	for _, c := range []struct {
		name    string
		changed []string
		want    []string
	}{
		{"nothing changed", nil, nil},
		{"a local package no lab package imports", []string{"h2dial/client.go"}, nil},
		{"a package the lab imports", []string{"stacks/catalog.go"}, []string{"m/runner/cli"}},
		{"a nested package is its own, not its parent folder's", []string{"runner/cli/app/app.go"}, []string{"m/runner/cli"}},
		{"a lab package itself, testdata included", []string{"infra/testdata/x.yaml"}, []string{"m/infra"}},
		{"a file outside every package: the docs", []string{"docs/testing.md"}, []string{"m/infra", "m/runner/cli"}},
		{"go.mod", []string{"go.mod"}, []string{"m/infra", "m/runner/cli"}},
		{"a folder whose name starts like a package's", []string{"stacksold/x.go"}, []string{"m/infra", "m/runner/cli"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			var got []string
			for p := range Affected(pkgs, c.changed) {
				got = append(got, p)
			}
			slices.Sort(got)
			if !reflect.DeepEqual(got, c.want) {
				t.Errorf("Affected(%v) = %v, want %v", c.changed, got, c.want)
			}
		})
	}
}

func TestE2ETestsAreThoseThatAskShort(t *testing.T) {
	dir := t.TempDir()
	src := `package p

import "testing"

func TestUnit(t *testing.T) {}

func TestEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("end to end")
	}
}

func TestPartly(t *testing.T) {
	t.Run("sub", func(t *testing.T) {
		if !testing.Short() {
			t.Log("the long part")
		}
	})
}

func BenchmarkAsks(b *testing.B) { _ = testing.Short() }

func helperShort() bool { return testing.Short() }
`
	if err := os.WriteFile(filepath.Join(dir, "p_test.go"), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "p.go"), []byte("package p\n\nimport \"testing\"\n\nfunc TestNotATestFile() { _ = testing.Short() }\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := E2ETests(dir)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"TestEndToEnd", "TestPartly"}; !reflect.DeepEqual(got, want) {
		t.Errorf("E2ETests = %v, want %v", got, want)
	}
	if p := RunPattern(got); p != "^(TestEndToEnd|TestPartly)$" {
		t.Errorf("RunPattern = %q", p)
	}
}

// TestThisModule reads the module as make test does: the command line is the real lab's, the
// emulator the local lab's, and the newcomer's path is an end-to-end test.
func TestThisModule(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	pkgs, err := Load(context.Background(), "go", root)
	if err != nil {
		t.Fatal(err)
	}
	lab := map[string]bool{}
	for _, p := range pkgs {
		lab[p.Dir] = p.Lab
	}
	for dir, want := range map[string]bool{"runner/cli": true, "infra": true, "runner/suite": true, "runner/emulator": false, "runner/cli/app": false, "internal/testplan": false} {
		if got, ok := lab[dir]; !ok || got != want {
			t.Errorf("%s: listed %v, the real lab's %v; want the real lab's %v", dir, ok, got, want)
		}
	}
	e2e, err := E2ETests(filepath.Join(root, "runner", "cli"))
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(e2e, "TestNewcomerPath") || slices.Contains(e2e, "TestCLIReference") {
		t.Errorf("runner/cli's end-to-end tests: %v", e2e)
	}
}

// TestChanged runs real git: a clone's commits since its upstream and its uncommitted and
// untracked files are changes; what its upstream already had is not.
func TestChanged(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	ctx := context.Background()
	up := t.TempDir()
	git := func(dir string, args ...string) {
		t.Helper()
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	write := func(path, text string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	git(up, "init", "-q", "-b", "main")
	write(filepath.Join(up, "a", "a.go"), "package a\n")
	write(filepath.Join(up, "b", "b.go"), "package b\n")
	git(up, "add", ".")
	git(up, "commit", "-q", "-m", "one")

	clone := filepath.Join(t.TempDir(), "clone")
	git(up, "clone", "-q", up, clone)
	if files, _, ok := Changed(ctx, clone); !ok || len(files) != 0 {
		t.Fatalf("a fresh clone: %v %v", files, ok)
	}
	write(filepath.Join(clone, "a", "a.go"), "package a\n\nconst X = 1\n")
	git(clone, "commit", "-q", "-am", "two")
	write(filepath.Join(clone, "b", "b.go"), "package b\n\nconst Y = 2\n")
	write(filepath.Join(clone, "c", "new.go"), "package c\n")
	files, _, ok := Changed(ctx, clone)
	if want := []string{"a/a.go", "b/b.go", "c/new.go"}; !ok || !reflect.DeepEqual(files, want) {
		t.Errorf("Changed = %v (%v), want %v", files, ok, want)
	}
	if _, _, ok := Changed(ctx, t.TempDir()); ok {
		t.Error("outside a work tree Changed must say it cannot tell")
	}
}
