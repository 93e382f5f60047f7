package cli

import (
	"bytes"
	"encoding/json"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/igwlab/igwlab/runner/analysis"
	"github.com/igwlab/igwlab/runner/suite"
)

// TestNewcomerPath follows a newcomer from the README: its link to the quick start, then every
// command of the quick start's shell blocks and of reading a run's, as written, with bash, one
// after the other in a copy of the repository: `make run` among them (the whole default suite
// on the local target, as a newcomer runs it). The evaluation it prints has the calls the
// README shows, and the local suite's findings are then checked on that run, and the simulated
// target calibrated against it.
func TestNewcomerPath(t *testing.T) {
	if testing.Short() {
		t.Skip("make run: the whole local suite (about 3 minutes)")
	}
	root := repoRoot(t)
	read := func(name string) string {
		b, err := os.ReadFile(filepath.Join(root, name))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	readme, quick, reading := read("README.md"), read("docs/quick-start.md"), read("docs/reading-a-run.md")
	if !strings.Contains(readme, "](docs/quick-start.md)") {
		t.Fatal("README.md does not link the quick start (docs/quick-start.md)")
	}
	if !strings.Contains(quick, "](reading-a-run.md)") {
		t.Fatal("the quick start does not lead on to reading a run (reading-a-run.md)")
	}
	steps := append(shellLines(quick), shellLines(reading)...)
	if !slices.ContainsFunc(shellLines(quick), func(l string) bool { return strings.HasPrefix(l, "make run") }) {
		t.Fatalf("the quick start's commands do not run make run: %q", shellLines(quick))
	}

	dir := copyRepo(t, root)
	var evaluation string
	for _, step := range steps {
		cmd := exec.Command("bash", "-e", "-o", "pipefail", "-c", step)
		cmd.Dir = dir
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		start := time.Now()
		if err := cmd.Run(); err != nil {
			t.Fatalf("%s: %v\nstdout:\n%s\nstderr:\n%s", step, err, stdout.String(), tail(stderr.String(), 40))
		}
		if strings.HasPrefix(step, "make run") {
			evaluation = stdout.String()
		}
		t.Logf("ran %s (%s)", step, time.Since(start).Round(100*time.Millisecond))
	}

	// The evaluation has every call the README's sample shows.
	for _, id := range analysis.CheckIDs() {
		if strings.Contains(readme, "\n"+id+" ") && !strings.Contains(evaluation, "\n"+id+" ") {
			t.Errorf("make run's evaluation has no %s call, which the README shows:\n%s", id, evaluation)
		}
	}
	runs, _ := filepath.Glob(filepath.Join(dir, "results", "*", "summary.json"))
	if len(runs) != 1 {
		t.Fatalf("results/ after make run: %v", runs)
	}
	b, err := os.ReadFile(runs[0])
	if err != nil {
		t.Fatal(err)
	}
	var sum suite.Summary
	if err := json.Unmarshal(b, &sum); err != nil {
		t.Fatal(err)
	}
	checkLocalSuite(t, &sum, filepath.Dir(runs[0]))
	// The simulated target gives the same calls on the same seed (the calibration tier).
	calibrateAgainst(t, "default", readLocalRun(t, filepath.Dir(runs[0]), nil))
}

// shellLines are a page's shell command lines, continuations joined, in order.
func shellLines(text string) []string {
	blocks, _ := split(text)
	var out []string
	for _, b := range blocks {
		if !slices.Contains(shellLangs, b.lang) {
			continue
		}
		for i := 0; i < len(b.lines); i++ {
			line := strings.TrimSpace(b.lines[i])
			for strings.HasSuffix(line, "\\") && i+1 < len(b.lines) {
				i++
				line = strings.TrimSuffix(line, "\\") + " " + strings.TrimSpace(b.lines[i])
			}
			if line != "" && !strings.HasPrefix(line, "#") {
				out = append(out, line)
			}
		}
	}
	return out
}

// copyRepo copies the repository's files (what git tracks, and new files it does not ignore;
// a walk without bin/ and results/ where there is no git) into a fresh folder, as a clone.
func copyRepo(t *testing.T, root string) string {
	t.Helper()
	dst := t.TempDir()
	var files []string
	if out, err := exec.Command("git", "-C", root, "ls-files", "-z", "--cached", "--others", "--exclude-standard").Output(); err == nil {
		for _, f := range strings.Split(string(out), "\x00") {
			if f != "" {
				files = append(files, f)
			}
		}
	} else {
		err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			rel, _ := filepath.Rel(root, p)
			if d.IsDir() && (rel == ".git" || rel == "bin" || rel == "results") {
				return filepath.SkipDir
			}
			if !d.IsDir() {
				files = append(files, rel)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range files {
		src := filepath.Join(root, f)
		info, err := os.Lstat(src)
		if err != nil || !info.Mode().IsRegular() {
			continue // deleted from the tree but not yet from git's index, or a link
		}
		b, err := os.ReadFile(src)
		if err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(dst, f)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, b, info.Mode().Perm()); err != nil {
			t.Fatal(err)
		}
	}
	return dst
}

func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
