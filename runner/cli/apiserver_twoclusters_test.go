package cli

import (
	"bytes"
	"context"
	"os"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"

	"github.com/igwlab/igwlab/runner/gateway/kubetest"
)

// checkTwoClusters is one cluster, never two, against two real kube-apiservers (a subtest of
// TestAPIServerTier, whose stack has applied to first through the kubeconfig file; the second
// API server lives as long as t). That file
// then names a second API server (a cluster re-created, a context switched in place): the
// suite reaches it, sees by the kube-system namespace's UID that the stack applied to another,
// and is refused before anything is applied, naming both; with the file restored, --kubeconfig
// naming the second outright is refused too. Neither cluster changes.
func checkTwoClusters(t *testing.T, kubeBin string, first *kubetest.ControlPlane, kubeconfig, stack, inline string) {
	t.Helper()
	ctx := context.Background()
	second := kubetest.Start(t, kubeBin)
	firstDyn, err := dynamic.NewForConfig(first.Rest)
	if err != nil {
		t.Fatal(err)
	}
	secondDyn, err := dynamic.NewForConfig(second.Rest)
	if err != nil {
		t.Fatal(err)
	}
	ef := func() string {
		u, err := firstDyn.Resource(efGVR).Namespace("istio-ingress").Get(ctx, "igwlab-scenario", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return u.GetResourceVersion()
	}
	uid := func(dyn *dynamic.DynamicClient) string {
		ks, err := dyn.Resource(nsGVR).Get(ctx, "kube-system", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return string(ks.GetUID())
	}
	before := ef()
	suite := func(extra ...string) string {
		t.Helper()
		var out, errb bytes.Buffer
		args := append([]string{"suite", "--target", "existing", "--stack", stack, "--inline", "--inline-dir", inline}, extra...)
		if code := Main(ctx, args, &out, &errb); code == 0 {
			t.Fatalf("igwlab %s: exit 0, want a refusal\n%s", strings.Join(args, " "), errb.String())
		}
		return strings.Join(strings.Fields(errb.String()), " ")
	}

	copyFile(t, second.Kubeconfig, kubeconfig)
	msg := suite()
	copyFile(t, first.Kubeconfig, kubeconfig)
	for _, w := range []string{"kube-system " + uid(secondDyn), "kube-system " + uid(firstDyn), stack,
		"refusing to measure one cluster and switch another"} {
		if !strings.Contains(msg, w) {
			t.Errorf("the refusal %q lacks %q", msg, w)
		}
	}
	msg = suite("--kubeconfig", second.Kubeconfig)
	for _, w := range []string{"--kubeconfig " + second.Kubeconfig, kubeconfig} {
		if !strings.Contains(msg, w) {
			t.Errorf("the refusal %q lacks %q", msg, w)
		}
	}
	if after := ef(); after != before {
		t.Errorf("the first cluster's EnvoyFilter changed (resourceVersion %s -> %s)", before, after)
	}
	for _, ns := range []string{"istio-ingress", "igw-test", "loadgen"} {
		if _, err := secondDyn.Resource(nsGVR).Get(ctx, ns, metav1.GetOptions{}); err == nil {
			t.Errorf("namespace %s was made on the second cluster", ns)
		}
	}
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, b, 0o600); err != nil {
		t.Fatal(err)
	}
}
