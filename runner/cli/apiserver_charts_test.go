package cli

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"github.com/igwlab/igwlab/infra"
	"github.com/igwlab/igwlab/runner/gateway/kubetest"
)

// upstreamDir lays out igwlab:upstreamDir from the Go module cache: Istio's charts at the
// release infra/istioproof builds (its istiocharts command), and the Gateway API's standard
// CRDs at the lab's version. kube-prometheus-stack is not in any Go module, so a lab on this
// folder runs without monitoring.
func upstreamDir(t *testing.T) string {
	t.Helper()
	root, err := infra.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	cmd := exec.Command("go", "run", "./cmd/istiocharts", "-out", dir)
	cmd.Dir = filepath.Join(root, "infra", "istioproof")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("istiocharts: %v\n%s", err, out)
	}
	rel, err := infra.LookupIstio(infra.DefaultIstio)
	if err != nil {
		t.Fatal(err)
	}
	crds, _ := filepath.Glob(filepath.Join(kubetest.ModuleDir(t, "sigs.k8s.io/gateway-api@"+rel.GatewayAPI),
		"config", "crd", "standard", "*.yaml"))
	if len(crds) == 0 {
		t.Fatal("no Gateway API CRDs in the module cache")
	}
	var all []byte
	for _, f := range crds {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		all = append(append(all, "---\n"...), b...)
	}
	if err := os.WriteFile(filepath.Join(dir, infra.GatewayAPIFile), all, 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestAPIServerTierWithIstioCharts runs the lab's stack with its Helm releases (Istio's
// charts from the module cache, through igwlab:upstreamDir) on a real kube-apiserver: the
// provider installs base, istiod, cni, ztunnel and the gateway with Helm, and the lab's objects
// land on the CRDs the base chart brought. Then a scenario switch previews as an update of the
// EnvoyFilter alone: no Helm release is upgraded or replaced, and applying it changes no
// release either; then a scenario's pool events go through the same stack
// (poolEventsThroughTheStack). Monitoring is off: kube-prometheus-stack cannot be fetched here.
func TestAPIServerTierWithIstioCharts(t *testing.T) {
	kubeBin, pulumiBin := apiServerTools(t)
	up := upstreamDir(t)
	cp := kubetest.Start(t, kubeBin, "deployment", "replicaset")
	const name = "igwlab-apiserver-charts-test"
	ctx := context.Background()
	st, inline := apiServerStack(t, pulumiBin, name, map[string]string{"kubeconfig": cp.Kubeconfig,
		"installUpstream": "true", "upstreamDir": up, "monitoring": "false"})
	if _, err := st.Up(ctx, nil); err != nil {
		t.Fatalf("up: %v\n%s", err, cp.Log("kube-apiserver"))
	}
	dyn, err := dynamic.NewForConfig(cp.Rest)
	if err != nil {
		t.Fatal(err)
	}
	deploy := schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}
	gw, err := dyn.Resource(deploy).Namespace(infra.GatewayNamespace).Get(ctx, infra.GatewayRelease, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("the gateway chart's Deployment: %v", err)
	}
	if r, _, _ := unstructured.NestedInt64(gw.Object, "spec", "replicas"); r != int64(infra.Defaults.GatewayReplicas) {
		t.Errorf("gateway replicas %d, want %d", r, infra.Defaults.GatewayReplicas)
	}
	if _, err := dyn.Resource(deploy).Namespace(infra.IstioNamespace).Get(ctx, "istiod", metav1.GetOptions{}); err != nil {
		t.Errorf("istiod: %v", err)
	}
	if _, err := dyn.Resource(efGVR).Namespace(infra.GatewayNamespace).Get(ctx, "igwlab-scenario", metav1.GetOptions{}); err != nil {
		t.Errorf("EnvoyFilter: %v", err)
	}

	p, err := st.Preview(ctx, map[string]string{"igwlab:scenario": "04-mrpc"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("preview after switching to 04-mrpc: %v\n%s", p.Changes, p.Diff)
	// Every preview reads the kube-system namespace (the cluster's identity, stack output
	// clusterUid) and the stack's own outputs (the cluster guard's StackReference), and changes
	// nothing with them.
	for op, n := range p.Changes {
		if op != "same" && !(op == "update" && n == 1) && !(op == "read" && n == 2) {
			t.Errorf("switching the scenario would %s %d resources, want an update of the EnvoyFilter alone", op, n)
		}
	}
	if !strings.Contains(p.Diff, "EnvoyFilter") || !strings.Contains(p.Diff, "max_requests_per_connection") {
		t.Errorf("the preview does not update the EnvoyFilter's knob")
	}
	if strings.Contains(p.Diff, "helm.sh/v3:Release") {
		t.Errorf("the preview touches a Helm release")
	}
	// Applying the switch through the igwlab command changes the filter and nothing else.
	var out, errb strings.Builder
	if err := Run(ctx, []string{"up", "--scenario", "04-mrpc", "--stack", name, "--inline", "--inline-dir", inline}, &out, &errb); err != nil {
		t.Fatalf("igwlab up --scenario 04-mrpc: %v\n%s", err, errb.String())
	}
	if p, err = st.Preview(ctx, nil, nil); err != nil {
		t.Fatal(err)
	}
	if p.Changes["same"] == 0 || len(p.Changes) != 1 && !(len(p.Changes) == 2 && p.Changes["read"] == 2) {
		t.Errorf("after the switch, a preview still has changes: %v\n%s", p.Changes, p.Diff)
	}
	poolEventsThroughTheStack(t, st, dyn)
}
