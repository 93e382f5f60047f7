package istioproof

import (
	"bytes"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"helm.sh/helm/v4/pkg/action"
	"helm.sh/helm/v4/pkg/kube"
	release "helm.sh/helm/v4/pkg/release/v1"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// TestChartsInstallOnAPIServer installs the lab's Istio releases with Helm's SDK, in the
// program's order and with its values, on a real kube-apiserver and etcd on loopback (no
// nodes: objects are admitted and stored, pods never run), then creates the lab's Gateway,
// VirtualServices, Services, RequestAuthentication and every scenario's EnvoyFilter against the
// CRDs the base chart installed. IGWLAB_KUBE_BIN names kube-apiserver's folder
// (make test-istio builds it with hack/kube-tools.sh); etcd comes from PATH.
func TestChartsInstallOnAPIServer(t *testing.T) {
	kubeBin := os.Getenv("IGWLAB_KUBE_BIN")
	if kubeBin == "" {
		t.Skip("set IGWLAB_KUBE_BIN to kube-apiserver's folder (make test-istio does)")
	}
	etcd, err := exec.LookPath("etcd")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("no etcd on PATH under CI (apt-get install etcd-server)")
		}
		t.Skip("etcd not installed (apt-get install etcd-server)")
	}
	in, efs, _ := loadLab(t)
	t.Setenv("TEST_ASSET_KUBE_APISERVER", filepath.Join(kubeBin, "kube-apiserver"))
	t.Setenv("TEST_ASSET_ETCD", etcd)
	t.Setenv("KUBEBUILDER_CONTROLPLANE_START_TIMEOUT", "90s")
	env := &envtest.Environment{}
	if _, err := env.Start(); err != nil {
		t.Fatalf("starting kube-apiserver and etcd: %v", err)
	}
	t.Cleanup(func() { _ = env.Stop() })
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(kubeconfig, env.KubeConfig, 0o600); err != nil {
		t.Fatal(err)
	}

	helm := func(ns string) *action.Configuration {
		flags := genericclioptions.NewConfigFlags(false)
		flags.KubeConfig, flags.Namespace = &kubeconfig, &ns
		cfg := action.NewConfiguration()
		cfg.SetLogger(slog.NewTextHandler(tlog{t}, &slog.HandlerOptions{Level: slog.LevelWarn}))
		if err := cfg.Init(flags, ns, "secret"); err != nil {
			t.Fatal(err)
		}
		return cfg
	}
	for _, r := range in.Releases {
		c, err := LoadChart(r.Chart, r.Version)
		if err != nil {
			t.Fatal(err)
		}
		inst := action.NewInstall(helm(r.Namespace))
		inst.ReleaseName, inst.Namespace, inst.CreateNamespace = r.Name, r.Namespace, true
		// Waiting only for hooks (Helm 4's default, as Helm 3 without --wait): not for pods, as
		// there are no nodes.
		inst.WaitStrategy, inst.Timeout = kube.HookOnlyStrategy, 2*time.Minute
		out, err := inst.Run(c, Clone(r.Values))
		if err != nil {
			t.Fatalf("helm install %s %s into the API server: %v", r.Name, r.Chart, err)
		}
		rel, ok := out.(*release.Release)
		if !ok {
			t.Fatalf("helm install %s: a %T, not a v1 release", r.Name, out)
		}
		t.Logf("helm install %s (chart %s %s): %s", r.Name, r.Chart, r.Version, rel.Info.Status)
	}

	// The lab's own objects, and every scenario's filter side by side, against the CRDs the
	// base chart installed, through the same client Helm applies with. The backends' namespace
	// comes first (the program creates it before them).
	cfg := helm("istio-ingress")
	create := func(what string, objs ...map[string]any) int {
		t.Helper()
		list, err := cfg.KubeClient.Build(bytes.NewBufferString(YAML(objs...)), true)
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		res, err := cfg.KubeClient.Create(list)
		if err != nil {
			t.Fatalf("the API server refuses %s: %v", what, err)
		}
		return len(res.Created)
	}
	create("namespace igw-test", map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": "igw-test"}})
	objs := append([]map[string]any{}, in.Objects...)
	for _, name := range Names(efs) {
		ef := Clone(efs[name])
		ef["metadata"].(map[string]any)["name"] = "igwlab-scenario-" + name
		objs = append(objs, ef)
	}
	every := Clone(in.EveryKnobEnvoyFilter)
	every["metadata"].(map[string]any)["name"] = "igwlab-every-knob"
	objs = append(objs, every)
	n := create("the lab's objects", objs...)
	t.Logf("created %d objects of the lab (%d EnvoyFilters)", n, len(efs)+1)
	if n != len(objs) {
		t.Errorf("created %d objects, want %d", n, len(objs))
	}
}

// tlog writes Helm's log lines to the test's log.
type tlog struct{ t *testing.T }

func (w tlog) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}
