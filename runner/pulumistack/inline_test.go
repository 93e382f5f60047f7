package pulumistack

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// An inline stack takes the repository's Pulumi.yaml (the lab's defaults) and
// Pulumi.<stack>.yaml, keeps the config the runner wrote into its own copy, and takes the file
// again once the user edits it.
func TestInlineStackStartsFromTheStackFile(t *testing.T) {
	repo, ws := t.TempDir(), filepath.Join(t.TempDir(), "ws")
	file := filepath.Join(repo, "Pulumi.lab.yaml")
	write := func(path, text string, at time.Time) {
		t.Helper()
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(path, at, at); err != nil {
			t.Fatal(err)
		}
	}
	read := func(path string) string {
		t.Helper()
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	t0 := time.Now().Add(-time.Hour)
	// No project file, no stack file and no folder: the Automation API's own workspace.
	if dir, err := inlineWorkspace(Options{Name: "other", Inline: true, WorkDir: repo}); err != nil || dir != "" {
		t.Fatalf("workspace %q, %v; want none", dir, err)
	}
	project := filepath.Join(repo, "Pulumi.yaml")
	write(project, "name: igwlab\nruntime: go\nconfig:\n  igwlab:scenario: 02-trigger\n", t0)
	write(file, "config:\n  igwlab:monitoring: \"false\"\n", t0)
	o := Options{Name: "lab", Inline: true, WorkDir: repo, InlineDir: ws}
	dir, err := inlineWorkspace(o)
	if err != nil || dir != ws {
		t.Fatalf("workspace %q, %v; want %s", dir, err, ws)
	}
	copied := filepath.Join(ws, "Pulumi.lab.yaml")
	if got := read(copied); got != read(file) {
		t.Fatalf("the workspace's config is %q, want the stack file's", got)
	}
	if got := read(filepath.Join(ws, "Pulumi.yaml")); got != read(project) {
		t.Fatalf("the workspace's project is %q, want the repository's (its config holds the lab's defaults)", got)
	}
	// The runner sets the scenario in the workspace's copy; reopening keeps it.
	write(copied, read(copied)+"  igwlab:scenario: 04-mrpc\n", t0.Add(time.Minute))
	if _, err := inlineWorkspace(o); err != nil {
		t.Fatal(err)
	}
	if got := read(copied); got != "config:\n  igwlab:monitoring: \"false\"\n  igwlab:scenario: 04-mrpc\n" {
		t.Fatalf("reopening lost the runner's config: %q", got)
	}
	// The user edits the stack file: the next open takes it.
	write(file, "config:\n  igwlab:monitoring: \"true\"\n", t0.Add(2*time.Minute))
	if _, err := inlineWorkspace(o); err != nil {
		t.Fatal(err)
	}
	if got := read(copied); got != read(file) {
		t.Fatalf("after an edit the workspace's config is %q, want the stack file's", got)
	}
	// A stack with no file of its own still gets the project's defaults.
	dir, err = inlineWorkspace(Options{Name: "other", Inline: true, WorkDir: repo})
	if err != nil || dir == "" {
		t.Fatalf("workspace %q, %v; want one holding the project", dir, err)
	}
	if got := read(filepath.Join(dir, "Pulumi.yaml")); got != read(project) {
		t.Fatalf("a stack without a file of its own runs without the project's defaults: %q", got)
	}
}
