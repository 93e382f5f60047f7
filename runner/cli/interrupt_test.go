package cli

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/igwlab/igwlab/runner/suite"
)

// buildIgwlab builds the real command, so that signals reach it the way a terminal sends them.
func buildIgwlab(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "igwlab")
	if out, err := exec.Command("go", "build", "-o", bin, "../cmd/igwlab").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// startUntil starts the command and sends sig once a line of its stderr contains trigger.
// It returns the exit code and everything the command printed on stderr.
func startUntil(t *testing.T, cmd *exec.Cmd, trigger string, sig os.Signal) (int, string) {
	t.Helper()
	pr, pw := io.Pipe()
	cmd.Stderr = pw
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var all strings.Builder
	seen := make(chan struct{})
	go func() {
		sc, sent := bufio.NewScanner(pr), false
		for sc.Scan() {
			all.WriteString(sc.Text() + "\n")
			if !sent && strings.Contains(sc.Text(), trigger) {
				sent = true
				_ = cmd.Process.Signal(sig)
			}
		}
		close(seen)
	}()
	err := cmd.Wait()
	pw.Close()
	<-seen
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode(), all.String()
	}
	if err != nil {
		t.Fatal(err)
	}
	return 0, all.String()
}

// hashes maps every file under dir to its SHA-256, to prove a resumed run leaves finished
// scenarios' files alone.
func hashes(t *testing.T, dir string) map[string][32]byte {
	t.Helper()
	h := map[string][32]byte{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		h[strings.TrimPrefix(p, dir)] = sha256.Sum256(b)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func readSummary(t *testing.T, dir string) *suite.Summary {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "summary.json"))
	if err != nil {
		t.Fatal(err)
	}
	var s suite.Summary
	if err := json.Unmarshal(b, &s); err != nil {
		t.Fatalf("summary.json after the interrupt: %v", err)
	}
	return &s
}

// TestInterruptThenResume stops a suite with SIGINT in its second scenario and SIGTERM in its
// first, then resumes each: nothing finished is lost or rewritten, the summary says what did
// not run, and the resumed run ends complete with the same settings.
func TestInterruptThenResume(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the local suite twice with signals (about 40 s)")
	}
	bin := buildIgwlab(t)
	for _, tc := range []struct {
		sig     syscall.Signal
		trigger string // the progress line that sends the signal
		kept    []string
	}{
		{syscall.SIGINT, "[2/3] 02-trigger", []string{"01-baseline"}},
		{syscall.SIGTERM, "[1/3] 01-baseline", nil},
	} {
		t.Run(tc.sig.String(), func(t *testing.T) {
			out := t.TempDir()
			cmd := exec.Command(bin, "suite", "--only", "01-baseline,02-trigger,03-mcs-cap", "--duration", "2s", "--pods", "3", "--out", out)
			code, stderr := startUntil(t, cmd, tc.trigger, tc.sig)
			if code != 130 {
				t.Fatalf("exit code %d after %s, want 130\n%s", code, tc.sig, stderr)
			}
			runs, _ := filepath.Glob(filepath.Join(out, "*"))
			if len(runs) != 1 {
				t.Fatalf("results folders %v", runs)
			}
			dir := runs[0]
			if !strings.Contains(stderr, "igwlab suite --resume "+dir) {
				t.Errorf("the interrupt message does not say how to resume:\n%s", stderr)
			}
			sum := readSummary(t, dir)
			if !sum.Interrupted || sum.Complete {
				t.Errorf("summary: interrupted %v complete %v", sum.Interrupted, sum.Complete)
			}
			for _, name := range sum.Order {
				st, kept := sum.Scenarios[name].Status, slices.Contains(tc.kept, name)
				if kept != (st == "ok") || (!kept && st != "interrupted" && st != "not-run") {
					t.Errorf("%s: status %q (%s) after the interrupt", name, st, sum.Scenarios[name].Reason)
				}
			}
			before := map[string]map[string][32]byte{}
			for _, name := range tc.kept {
				before[name] = hashes(t, filepath.Join(dir, name))
			}

			var stdout bytes.Buffer
			res := exec.Command(bin, "suite", "--resume", dir, "-json")
			res.Stdout = &stdout
			code, stderr = startUntil(t, res, "\x00never", syscall.SIGINT)
			if code != 0 {
				t.Fatalf("resume exit %d\n%s", code, stderr)
			}
			if !strings.Contains(stderr, "resuming "+dir) {
				t.Errorf("resume does not say what it keeps:\n%s", stderr)
			}
			sum = readSummary(t, dir)
			if !sum.Complete || sum.Interrupted || len(sum.Resumed) != 1 || sum.Pods != 3 {
				t.Errorf("resumed summary: complete %v interrupted %v resumed %v pods %d", sum.Complete, sum.Interrupted, sum.Resumed, sum.Pods)
			}
			for _, name := range sum.Order {
				if r := sum.Scenarios[name]; r.Status != "ok" {
					t.Errorf("%s after resume: %s %s", name, r.Status, r.Reason)
				}
			}
			for name, h := range before {
				after := hashes(t, filepath.Join(dir, name))
				for f, sum := range h {
					if after[f] != sum {
						t.Errorf("%s%s changed on resume", name, f)
					}
				}
			}
			if _, err := os.Stat(filepath.Join(dir, "report.html")); err != nil {
				t.Errorf("no report after resume: %v", err)
			}
		})
	}
}

// TestResumeRefusesOtherSettings: a resumed run takes the recorded settings, so a flag beside
// --resume, a finished run or a folder that is not a run are refused before anything runs.
func TestResumeRefusesOtherSettings(t *testing.T) {
	dir := t.TempDir()
	done := `{"target":"local","pods":6,"concurrency":1,"repeat":1,"complete":true,"command":["suite"],"finished":"2026-01-02T03:04:05Z"}`
	if err := os.WriteFile(filepath.Join(dir, "summary.json"), []byte(done), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"suite", "--resume", dir, "--pods", "3"}, "drop --pods"},
		{[]string{"suite", "--resume", dir}, "nothing to resume"},
		{[]string{"suite", "--resume", t.TempDir()}, "no summary.json here"},
	} {
		var stdout, stderr bytes.Buffer
		if code := Main(t.Context(), tc.args, &stdout, &stderr); code == 0 || !strings.Contains(stderr.String(), tc.want) {
			t.Errorf("%v: exit %d, stderr %q, want %q", tc.args, code, stderr.String(), tc.want)
		}
	}
}
