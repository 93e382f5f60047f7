package stacks

import (
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
)

// badDir holds the corpus of broken scenario files: one file per case, each starting with a
// "# want: a; b; c" line listing what the error must mention (file, line, field, allowed
// range). A subfolder is a catalog case: its files are loaded together as a --catalog folder
// next to the built-in catalog, and the wants of all its files must appear in the error.
const badDir = "testdata/bad"

// wantsOf reads the "# want:" line that starts every corpus file and returns the file with
// that line blanked: the newline stays so that line numbers hold, and empty.yaml is really empty.
func wantsOf(t *testing.T, name string, data []byte) ([]string, []byte) {
	t.Helper()
	first, rest, _ := bytes.Cut(data, []byte("\n"))
	list, ok := strings.CutPrefix(string(first), "# want:")
	if !ok {
		t.Fatalf("%s: the first line must be \"# want: ...\", got %q", name, first)
	}
	var wants []string
	for _, w := range strings.Split(list, ";") {
		if w = strings.TrimSpace(w); w != "" {
			wants = append(wants, w)
		}
	}
	return wants, append([]byte("\n"), rest...)
}

func mentionsAll(t *testing.T, err error, wants []string) {
	t.Helper()
	if err == nil {
		t.Fatal("accepted")
	}
	for _, w := range wants {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error does not mention %q:\n%v", w, err)
		}
	}
}

// TestBadScenarioCorpus feeds every corpus file to ParseFile, then drops it into a copy of
// the built-in catalog and loads that folder: both must reject it with every wanted
// substring, quickly and without a blow-up in memory (the alias bombs), and the catalog error
// must name the bad file and no other.
func TestBadScenarioCorpus(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(badDir, "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 25 {
		t.Fatalf("only %d bad scenario files in %s", len(files), badDir)
	}
	builtins, err := fs.Glob(builtin, "*.yaml")
	if err != nil || len(builtins) == 0 {
		t.Fatalf("built-in files: %v %v", builtins, err)
	}
	for _, f := range files {
		name := filepath.Base(f)
		t.Run(strings.TrimSuffix(name, ".yaml"), func(t *testing.T) {
			raw, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			wants, data := wantsOf(t, name, raw)

			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			start := time.Now()
			_, err = ParseFile(name, data)
			took := time.Since(start)
			runtime.ReadMemStats(&after)
			mentionsAll(t, err, wants)
			if took > 2*time.Second {
				t.Errorf("took %s to reject", took)
			}
			if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 64<<20 {
				t.Errorf("allocated %d MiB to reject a %d-byte file", alloc>>20, len(data))
			}

			dir := t.TempDir()
			for _, b := range builtins {
				good, _ := fs.ReadFile(builtin, b)
				if err := os.WriteFile(filepath.Join(dir, b), good, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
				t.Fatal(err)
			}
			_, err = LoadDir(dir)
			mentionsAll(t, err, append(wants, name))
			if err != nil {
				for _, b := range builtins {
					if strings.Contains(err.Error(), b) {
						t.Errorf("the catalog error blames the good file %s:\n%v", b, err)
					}
				}
			}
		})
	}
}

// TestBadCatalogFolders loads each corpus subfolder as a user catalog merged with the
// built-in one, as `igwlab suite --catalog <folder>` does.
func TestBadCatalogFolders(t *testing.T) {
	entries, err := os.ReadDir(badDir)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		n++
		dir := filepath.Join(badDir, e.Name())
		t.Run(e.Name(), func(t *testing.T) {
			files, _ := filepath.Glob(filepath.Join(dir, "*.yaml"))
			if len(files) < 2 {
				t.Fatalf("a catalog case holds at least two files, %s has %d", dir, len(files))
			}
			var wants []string
			for _, f := range files {
				raw, err := os.ReadFile(f)
				if err != nil {
					t.Fatal(err)
				}
				w, _ := wantsOf(t, f, raw)
				wants = append(wants, w...)
			}
			user, err := LoadDir(dir)
			if err == nil {
				cat, berr := Builtin()
				if berr != nil {
					t.Fatal(berr)
				}
				_, err = cat.Merge(user)
			}
			mentionsAll(t, err, wants)
		})
	}
	if n == 0 {
		t.Fatalf("no catalog folders in %s", badDir)
	}
}
