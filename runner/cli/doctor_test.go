package cli

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/igwlab/igwlab/infra"
	"github.com/igwlab/igwlab/internal/stackfile"
	"github.com/igwlab/igwlab/runner/pulumistack"
)

// bareMachine is this machine as a first-time user's without the real lab's tools: a PATH
// holding nothing, a home of its own (where Pulumi would keep a login and its state).
func bareMachine(t *testing.T) (home string) {
	t.Helper()
	home = t.TempDir()
	t.Setenv("PATH", t.TempDir())
	t.Setenv("HOME", home)
	t.Setenv("PULUMI_HOME", filepath.Join(home, ".pulumi"))
	t.Setenv("KUBECONFIG", "")
	return home
}

// TestDoctorOnABareMachine: with no Docker, no Pulumi CLI (and so no login) and no cluster, the
// doctor still reports: each missing thing with its fix, exit 1. It opens no stack: no
// Pulumi.<stack>.yaml is written, nothing appears under the Pulumi home.
func TestDoctorOnABareMachine(t *testing.T) {
	home := bareMachine(t)
	root, err := infra.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	file := stackfile.Path(root, "doctor-probe")
	opened := 0
	prev := pulumistack.Opener
	pulumistack.Opener = func(ctx context.Context, o pulumistack.Options) (pulumistack.Stack, error) {
		opened++
		return prev(ctx, o)
	}
	t.Cleanup(func() { pulumistack.Opener = prev })
	var out, errb bytes.Buffer
	code := Main(context.Background(), []string{"doctor", "--stack", "doctor-probe"}, &out, &errb)
	if code != 1 {
		t.Fatalf("exit %d, want 1\nstdout:\n%s\nstderr:\n%s", code, out.String(), errb.String())
	}
	report := strings.Join(strings.Fields(out.String()), " ")
	for _, want := range []string{
		"ok config stack doctor-probe: Pulumi.yaml's defaults only (no Pulumi.doctor-probe.yaml yet: pulumi stack init doctor-probe makes the stack)",
		"FAIL docker not found on PATH fix: install Docker",
		"FAIL k3d not found on PATH fix: install k3d 5.8.0 or later",
		"FAIL pulumi not found on PATH fix: install the Pulumi CLI",
		"warn kubectl not found on PATH",
	} {
		if !strings.Contains(report, want) {
			t.Errorf("the report lacks %q:\n%s", want, out.String())
		}
	}
	if opened != 0 {
		t.Errorf("the doctor opened the stack %d times (that creates it)", opened)
	}
	if _, err := os.Stat(file); err == nil {
		os.Remove(file)
		t.Errorf("the doctor wrote %s", file)
	}
	if entries, _ := os.ReadDir(home); len(entries) > 0 {
		t.Errorf("the doctor left %v in the home", entries)
	}
}

// TestDoctorChecksTheClusterItIsGiven: --kubeconfig and --context are the cluster the doctor
// checks (as igwlab:cluster existing), not the stack's k3d: here a context whose API server is
// a closed port, reported as unreachable with that server named.
func TestDoctorChecksTheClusterItIsGiven(t *testing.T) {
	bareMachine(t)
	kc := filepath.Join(t.TempDir(), "kubeconfig")
	const text = `apiVersion: v1
kind: Config
clusters:
- name: probe
  cluster: {server: "https://127.0.0.1:1"}
contexts:
- name: probe-ctx
  context: {cluster: probe, user: probe}
users:
- name: probe
  user: {token: x}
current-context: probe-ctx
`
	if err := os.WriteFile(kc, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	var out, errb bytes.Buffer
	code := Main(context.Background(), []string{"doctor", "--stack", "doctor-probe", "--kubeconfig", kc, "--context", "probe-ctx"}, &out, &errb)
	report := strings.Join(strings.Fields(out.String()), " ")
	if code != 1 {
		t.Fatalf("exit %d, want 1:\n%s%s", code, out.String(), errb.String())
	}
	for _, want := range []string{"checked as igwlab:cluster existing on --kubeconfig/--context", "required with igwlab:cluster existing",
		"FAIL cluster not reachable", "127.0.0.1:1"} {
		if !strings.Contains(report, want) {
			t.Errorf("the report lacks %q:\n%s", want, out.String())
		}
	}
	checked := map[string]bool{}
	for _, l := range strings.Split(out.String(), "\n") {
		if f := strings.Fields(l); len(f) > 1 && f[0] != "fix:" {
			checked[f[1]] = true
		}
	}
	if checked["docker"] || checked["k3d"] || checked["port"] {
		t.Errorf("the doctor checked the stack's k3d lab instead of the cluster it was given:\n%s", out.String())
	}
}
