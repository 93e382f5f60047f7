package cli

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/cobra/doc"

	"github.com/igwlab/igwlab/internal/testutil"
)

// The command reference, docs/cli/*.md and docs/man/*.1, is generated from the command tree as
// kubectl's and kind's are (spf13/cobra/doc). These tests regenerate it and compare it with
// what is committed, byte for byte: a flag added, renamed or reworded without
// `go test ./runner/cli -run TestCLIReference -update` fails them.

// manDate is the date the man pages carry. cobra would stamp the day they were generated, which
// would make every regeneration differ; a fixed date keeps them reproducible.
var manDate = time.Date(2026, time.December, 1, 0, 0, 0, 0, time.UTC)

// referenceTree is the command tree as the reference documents it: the whole of igwlab-lab,
// without cobra's generated-on footer and without the shell-completion commands' pages, whose
// text is cobra's own.
func referenceTree() *cobra.Command {
	root := Tree(io.Discard, io.Discard)
	root.DisableAutoGenTag = true
	root.InitDefaultHelpCmd()
	root.InitDefaultCompletionCmd()
	for _, c := range root.Commands() {
		if c.Name() == "completion" {
			for _, sub := range c.Commands() {
				sub.Hidden = true
			}
		}
	}
	return root
}

// generateReference writes the Markdown pages into md and the man pages into man.
func generateReference(t *testing.T, md, man string) {
	t.Helper()
	root := referenceTree()
	if err := doc.GenMarkdownTree(root, md); err != nil {
		t.Fatal(err)
	}
	header := &doc.GenManHeader{Title: "IGWLAB", Section: "1", Source: "igwlab", Manual: "igwlab manual", Date: &manDate}
	if err := doc.GenManTree(referenceTree(), header, man); err != nil {
		t.Fatal(err)
	}
}

func TestCLIReference(t *testing.T) {
	root := repoRoot(t)
	want := map[string]string{"cli": filepath.Join(root, "docs", "cli"), "man": filepath.Join(root, "docs", "man")}
	if testutil.Updating() {
		for _, dir := range want {
			if err := os.RemoveAll(dir); err != nil {
				t.Fatal(err)
			}
			if err := os.MkdirAll(dir, 0o755); err != nil {
				t.Fatal(err)
			}
		}
		generateReference(t, want["cli"], want["man"])
		return
	}
	got := map[string]string{"cli": t.TempDir(), "man": t.TempDir()}
	generateReference(t, got["cli"], got["man"])
	for kind, dir := range got {
		fresh, committed := listDir(t, dir), listDir(t, want[kind])
		if !slices.Equal(fresh, committed) {
			t.Errorf("docs/%s holds %v; the command tree makes %v (regenerate: go test ./runner/cli -run TestCLIReference -update)", kind, committed, fresh)
			continue
		}
		for _, name := range fresh {
			a, _ := os.ReadFile(filepath.Join(dir, name))
			b, _ := os.ReadFile(filepath.Join(want[kind], name))
			if !bytes.Equal(a, b) {
				t.Errorf("docs/%s/%s is stale: the command tree says otherwise (regenerate: go test ./runner/cli -run TestCLIReference -update)\n%s", kind, name, firstDiff(string(b), string(a)))
			}
		}
	}
}

func listDir(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatalf("%v (generate the reference: go test ./runner/cli -run TestCLIReference -update)", err)
	}
	var out []string
	for _, e := range entries {
		out = append(out, e.Name())
	}
	return out
}

// firstDiff shows the first line where two texts differ.
func firstDiff(committed, fresh string) string {
	a, b := strings.Split(committed, "\n"), strings.Split(fresh, "\n")
	for i := 0; i < max(len(a), len(b)); i++ {
		var x, y string
		if i < len(a) {
			x = a[i]
		}
		if i < len(b) {
			y = b[i]
		}
		if x != y {
			return "line " + strconv.Itoa(i+1) + ":\n  committed: " + x + "\n  generated: " + y
		}
	}
	return ""
}
