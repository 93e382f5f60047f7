package app

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestNormalizeKeepsSingleDashFlags: the README's -q and -json, and any long flag written with
// one dash, become GNU-style; values that only look like flags and everything after -- stay.
func TestNormalizeKeepsSingleDashFlags(t *testing.T) {
	root := (&Env{}).Root()
	got := Normalize(root, []string{"suite", "-json", "-q=false", "-pods", "3", "--duration", "-5s", "-h", "--", "-json"})
	want := []string{"suite", "--json", "--q=false", "--pods", "3", "--duration", "-5s", "-h", "--", "-json"}
	if !slices.Equal(got, want) {
		t.Fatalf("Normalize:\n got %q\nwant %q", got, want)
	}
}

// fakeLab puts an igwlab-lab on PATH that prints its command line and exits with code.
func fakeLab(t *testing.T, code string) {
	t.Helper()
	dir := t.TempDir()
	script := "#!/bin/sh\necho \"igwlab-lab $*\"\nexit " + code + "\n"
	if err := os.WriteFile(filepath.Join(dir, LabBinary), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", dir)
}

// TestHandsRealLabCommandLinesOn: a binary without the real lab runs igwlab-lab with the
// whole command line for the lab's commands and for a --target it does not hold, and exits
// with igwlab-lab's code; local command lines stay here.
func TestHandsRealLabCommandLinesOn(t *testing.T) {
	fakeLab(t, "3")
	for _, args := range [][]string{
		{"up", "--scenario", "04-mrpc", "-set", "hcm.drain_timeout=1s"},
		{"kubeconfig", "--out", "x"},
		{"suite", "--target", "k3d", "-q"},
		{"scenarios", "--target", "existing"},
		{"diagnose", "--context", "k3d-igwlab", "--duration", "5s"},
		{"diagnose", "--selector", "istio=ingressgateway,app=edge", "--json"},
	} {
		var out, errb bytes.Buffer
		err := Run(context.Background(), args, &out, &errb, nil)
		var exit ExitError
		if !errors.As(err, &exit) || exit.Code != 3 || Main(context.Background(), args, &out, &errb, nil) != 3 {
			t.Errorf("%q: %v, want igwlab-lab's exit code 3", args, err)
		}
		if want := "igwlab-lab " + strings.Join(args, " ") + "\n"; !strings.HasPrefix(out.String(), want) {
			t.Errorf("%q: igwlab-lab got %q, want %q", args, out.String(), want)
		}
	}
	var out, errb bytes.Buffer
	if code := Main(context.Background(), []string{"knobs"}, &out, &errb, nil); code != 0 || strings.Contains(out.String(), "igwlab-lab") {
		t.Errorf("knobs: exit %d, %q", code, out.String())
	}
}

func TestSaysHowToBuildTheLabBinary(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	var out, errb bytes.Buffer
	if code := Main(context.Background(), []string{"preview"}, &out, &errb, nil); code != 1 ||
		!strings.Contains(errb.String(), "igwlab preview drives the real lab") || !strings.Contains(errb.String(), "make build") {
		t.Errorf("exit %d, %q", code, errb.String())
	}
}

// TestLocalLabLinksNoPulumiOrKubernetes: the igwlab command builds without the Pulumi and
// Kubernetes SDKs, without Grafana's SDK (only the lab's program renders the dashboard) and
// without gonum's numeric packages (the chance bands draw their own binomials: 25 packages
// fewer), which is what keeps a first make run short.
func TestLocalLabLinksNoPulumiOrKubernetes(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "../../cmd/igwlab").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	for _, p := range strings.Fields(string(out)) {
		if strings.Contains(p, "pulumi") || strings.HasPrefix(p, "k8s.io/") || strings.HasPrefix(p, "sigs.k8s.io/") ||
			strings.HasPrefix(p, "github.com/grafana/") || strings.HasPrefix(p, "gonum.org/v1/gonum/") {
			t.Errorf("igwlab links %s", p)
		}
	}
}
