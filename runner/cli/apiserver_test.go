package cli

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"github.com/igwlab/igwlab/infra"
	"github.com/igwlab/igwlab/runner/gateway/kubetest"
	"github.com/igwlab/igwlab/runner/pulumistack"
)

var (
	efGVR   = schema.GroupVersionResource{Group: "networking.istio.io", Version: "v1alpha3", Resource: "envoyfilters"}
	nsGVR   = schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}
	wpGVR   = schema.GroupVersionResource{Group: "gateway.networking.k8s.io", Version: "v1", Resource: "gateways"}
	objects = []struct {
		gvr      schema.GroupVersionResource
		ns, name string
	}{
		{efGVR, "istio-ingress", "igwlab-scenario"},
		{schema.GroupVersionResource{Group: "networking.istio.io", Version: "v1", Resource: "gateways"}, "istio-ingress", "igw-test-gateway"},
		{schema.GroupVersionResource{Group: "networking.istio.io", Version: "v1", Resource: "virtualservices"}, "istio-ingress", "httpbin"},
		{schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}, "igw-test", "httpbin"},
		{schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}, "loadgen", "h2dial"},
		{schema.GroupVersionResource{Version: "v1", Resource: "services"}, "igw-test", "grpcbin"},
		{schema.GroupVersionResource{Group: "monitoring.coreos.com", Version: "v1", Resource: "podmonitors"}, "monitoring", "igw-envoy"},
		{schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}, "monitoring", "igw-thread-concentration-dashboard"},
	}
)

// apiServerTools returns the kube-apiserver and Pulumi tool folders, or skips.
func apiServerTools(t *testing.T) (kubeBin, pulumiBin string) {
	kubeBin, pulumiBin = os.Getenv("IGWLAB_KUBE_BIN"), os.Getenv("IGWLAB_PULUMI_BIN")
	if kubeBin == "" || pulumiBin == "" {
		t.Skip("set IGWLAB_KUBE_BIN and IGWLAB_PULUMI_BIN (make test-apiserver does)")
	}
	return kubeBin, pulumiBin
}

// apiServerStack opens an inline stack on a local file backend, configured for an existing
// cluster without nodes (workloads not awaited, no after-update checks) on scenario
// 02-trigger, plus conf; it returns
// the stack and its workspace folder (for igwlab commands' --inline-dir).
func apiServerStack(t *testing.T, pulumiBin, name string, conf map[string]string) (pulumistack.Stack, string) {
	t.Helper()
	tmp := t.TempDir()
	for _, d := range []string{"home", "state"} {
		_ = os.MkdirAll(filepath.Join(tmp, d), 0o755)
	}
	t.Setenv("PATH", pulumiBin+string(os.PathListSeparator)+os.Getenv("PATH"))
	t.Setenv("PULUMI_HOME", filepath.Join(tmp, "home"))
	t.Setenv("PULUMI_BACKEND_URL", "file://"+filepath.Join(tmp, "state"))
	t.Setenv("PULUMI_CONFIG_PASSPHRASE", "")
	t.Setenv("PULUMI_DISABLE_AUTOMATIC_PLUGIN_ACQUISITION", "true")
	t.Setenv("KUBECONFIG", "")
	ctx := context.Background()
	inline := filepath.Join(tmp, "workspace")
	st, err := pulumistack.Open(ctx, pulumistack.Options{Name: name, Inline: true, InlineDir: inline})
	if err != nil {
		t.Fatal(err)
	}
	// No pod ever runs without nodes, so the program's after-update checks are off unless conf
	// turns them on (TestAPIServerTierHooks, with emulated pods standing in).
	all := map[string]string{"cluster": "existing", "buildImages": "false", "skipAwait": "true", "scenario": "02-trigger",
		"verify": "false"}
	for k, v := range conf {
		all[k] = v
	}
	for k, v := range all {
		if err := st.SetConfig(ctx, "igwlab:"+k, v, false); err != nil {
			t.Fatal(err)
		}
	}
	return st, inline
}

// TestAPIServerTier applies the lab's stack to a real kube-apiserver (with etcd and the
// controller manager, started on loopback; no nodes) through the Automation API and the
// igwlab commands: every object the program makes without Helm or k3d is accepted, the suite
// refuses a second API server the stack's kubeconfig comes to name, a preview names the knob it
// would change, a scenario switch updates the EnvoyFilter in place, the
// waypoint comes and goes with its scenario, and destroy leaves nothing behind.
func TestAPIServerTier(t *testing.T) {
	kubeBin, pulumiBin := apiServerTools(t)
	began := time.Now()
	step := func(what string) { t.Logf("%s: at %.1fs", what, time.Since(began).Seconds()) }
	cp := kubetest.Start(t, kubeBin)
	step("control plane up")
	cp.ApplyCRDs(t,
		filepath.Join(kubetest.ModuleDir(t, "istio.io/api@v1.27.3"), "kubernetes", "customresourcedefinitions.gen.yaml"),
		filepath.Join(kubetest.ModuleDir(t, "sigs.k8s.io/gateway-api@v1.3.0"), "config", "crd", "standard", "gateway.networking.k8s.io_gateways.yaml"),
		filepath.Join(kubetest.ModuleDir(t, "github.com/prometheus-operator/prometheus-operator@v0.85.0"),
			"example", "prometheus-operator-crd", "monitoring.coreos.com_podmonitors.yaml"))
	const name = "igwlab-apiserver-test"
	ctx := context.Background()
	// The stack reads its cluster from a kubeconfig file of its own, which checkTwoClusters
	// points at a second API server for a while.
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	copyFile(t, cp.Kubeconfig, kubeconfig)
	st, inline := apiServerStack(t, pulumiBin, name, map[string]string{"kubeconfig": kubeconfig,
		"installUpstream": "false", "monitoring": "true"})
	step("CRDs applied, stack configured")
	if _, err := st.Up(ctx, nil); err != nil {
		t.Fatalf("up: %v\n%s", err, cp.Log("kube-apiserver"))
	}
	step("first up")
	dyn, err := dynamic.NewForConfig(cp.Rest)
	if err != nil {
		t.Fatal(err)
	}
	get := func(gvr schema.GroupVersionResource, ns, n string) (*unstructured.Unstructured, error) {
		return dyn.Resource(gvr).Namespace(ns).Get(ctx, n, metav1.GetOptions{})
	}
	for _, o := range objects {
		if _, err := get(o.gvr, o.ns, o.name); err != nil {
			t.Errorf("%s %s/%s not in the API server: %v", o.gvr.Resource, o.ns, o.name, err)
		}
	}
	before, err := get(efGVR, "istio-ingress", "igwlab-scenario")
	if err != nil {
		t.Fatal(err)
	}
	// The stack records the cluster it applied to, by the kube-system namespace's UID, which
	// the runner checks against the cluster it measures (one cluster, never two).
	ks, err := get(schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}, "", "kube-system")
	if err != nil {
		t.Fatal(err)
	}
	if outs, err := st.Outputs(ctx); err != nil || outs[infra.ClusterUIDOutput] != string(ks.GetUID()) {
		t.Errorf("stack output %s = %v (%v), want kube-system's UID %s", infra.ClusterUIDOutput, outs[infra.ClusterUIDOutput], err, ks.GetUID())
	}

	// A subtest, so that the second API server stops as soon as the check is done.
	t.Run("one cluster, never two", func(t *testing.T) { checkTwoClusters(t, kubeBin, cp, kubeconfig, name, inline) })
	step("second API server refused")

	cmd := func(args ...string) string {
		t.Helper()
		var out, errb bytes.Buffer
		if err := Run(ctx, append(args, "--stack", name, "--inline", "--inline-dir", inline), &out, &errb); err != nil {
			t.Fatalf("igwlab %s: %v\n%s", strings.Join(args, " "), err, errb.String())
		}
		return out.String()
	}
	diff := cmd("preview", "--scenario", "04-mrpc")
	step("preview")
	if !strings.Contains(diff, "max_requests_per_connection") {
		t.Errorf("igwlab preview --scenario 04-mrpc does not name the knob:\n%s", diff)
	}
	if v, _, _ := st.GetConfig(ctx, "igwlab:scenario"); v != "02-trigger" {
		t.Errorf("preview left the stack on %q", v)
	}
	cmd("up", "--scenario", "04-mrpc")
	step("up 04-mrpc")
	after, err := get(efGVR, "istio-ingress", "igwlab-scenario")
	if err != nil {
		t.Fatal(err)
	}
	if after.GetUID() != before.GetUID() || after.GetResourceVersion() == before.GetResourceVersion() {
		t.Errorf("the EnvoyFilter was not updated in place (uid %s -> %s, version %s -> %s)",
			before.GetUID(), after.GetUID(), before.GetResourceVersion(), after.GetResourceVersion())
	}
	patches, _, _ := unstructured.NestedSlice(after.Object, "spec", "configPatches")
	mrpc, _, _ := unstructured.NestedFieldNoCopy(patches[0].(map[string]any), "patch", "value", "typed_config",
		"common_http_protocol_options", "max_requests_per_connection")
	if mrpc == nil || mrpc.(int64) != 10000 {
		t.Errorf("max_requests_per_connection read back as %v", mrpc)
	}

	cmd("up", "--scenario", "07-waypoint-trigger")
	step("up 07-waypoint-trigger")
	if _, err := get(wpGVR, "igw-test", "igw-test-waypoint"); err != nil {
		t.Errorf("waypoint Gateway: %v", err)
	}
	svc, _ := get(schema.GroupVersionResource{Version: "v1", Resource: "services"}, "igw-test", "httpbin")
	if svc == nil || svc.GetLabels()["istio.io/use-waypoint"] != "igw-test-waypoint" {
		t.Errorf("httpbin Service labels %v", svc.GetLabels())
	}
	cmd("up", "--scenario", "02-trigger")
	step("up 02-trigger")
	if _, err := get(wpGVR, "igw-test", "igw-test-waypoint"); !apierrors.IsNotFound(err) {
		t.Errorf("the waypoint outlived its scenario: %v", err)
	}

	if err := st.Destroy(ctx, nil); err != nil {
		t.Fatalf("destroy: %v", err)
	}
	step("destroy")
	deadline := time.Now().Add(90 * time.Second)
	for _, ns := range []string{"istio-ingress", "igw-test", "loadgen", "monitoring"} {
		for {
			_, err := dyn.Resource(nsGVR).Get(ctx, ns, metav1.GetOptions{})
			if apierrors.IsNotFound(err) {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("namespace %s still there after destroy", ns)
			}
			time.Sleep(500 * time.Millisecond)
		}
	}
	step("namespaces gone")
	for _, o := range objects {
		if _, err := get(o.gvr, o.ns, o.name); !apierrors.IsNotFound(err) {
			t.Errorf("%s %s/%s left behind: %v", o.gvr.Resource, o.ns, o.name, err)
		}
	}
}
