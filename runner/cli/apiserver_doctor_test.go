package cli

import (
	"context"
	"os"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	authnv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	"github.com/igwlab/igwlab/runner/doctor"
	"github.com/igwlab/igwlab/runner/gateway/kubetest"
	"github.com/igwlab/igwlab/runner/kube"
)

// TestAPIServerTierDoctor reads a real kube-apiserver the way the doctor reads a platform
// engineer's cluster before the lab goes there: a GKE-managed Gateway API CRD, an istiod of the
// cluster's own, a namespace the lab would create already taken, a GKE arm64 node; then the same
// as a user who is not cluster-admin, whose missing permissions are named.
func TestAPIServerTierDoctor(t *testing.T) {
	kubeBin := os.Getenv("IGWLAB_KUBE_BIN")
	if kubeBin == "" {
		t.Skip("set IGWLAB_KUBE_BIN (make test-apiserver does)")
	}
	cp := kubetest.Start(t, kubeBin)
	ctx := context.Background()
	admin, err := kube.NewClient(cp.Kubeconfig, "")
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	cs := admin.CS

	crd := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
		"metadata": map[string]any{"name": "gateways.gateway.networking.k8s.io",
			"annotations": map[string]any{"components.gke.io/component-name": "gateway-api-crds", "gateway.networking.k8s.io/bundle-version": "v1.2.1",
				"api-approved.kubernetes.io": "https://github.com/kubernetes-sigs/gateway-api/pull/2466"},
			"labels": map[string]any{"addonmanager.kubernetes.io/mode": "NewerRevision"}},
		"spec": map[string]any{"group": "gateway.networking.k8s.io", "scope": "Namespaced",
			"names": map[string]any{"plural": "gateways", "singular": "gateway", "kind": "Gateway"},
			"versions": []any{map[string]any{"name": "v1", "served": true, "storage": true,
				"schema": map[string]any{"openAPIV3Schema": map[string]any{"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}}},
	}}
	dyn, err := dynamic.NewForConfig(cp.Rest)
	if err != nil {
		t.Fatal(err)
	}
	gvr := schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
	if _, err := dyn.Resource(gvr).Create(ctx, crd, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, ns := range []string{"istio-system", "monitoring"} {
		if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	one := int32(1)
	labels := map[string]string{"app": "istiod"}
	if _, err := cs.AppsV1().Deployments("istio-system").Create(ctx, &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "istiod-1-29", Labels: labels},
		Spec: appsv1.DeploymentSpec{Replicas: &one, Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "discovery", Image: "istio/pilot:1.29.9"}}}}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	node, err := cs.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "gke-pool-1", Labels: map[string]string{"kubernetes.io/arch": "arm64"}},
		Spec: corev1.NodeSpec{ProviderID: "gce://proj/europe-west1-b/gke-pool-1"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	node.Status.Allocatable = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("3920m")}
	if _, err := cs.CoreV1().Nodes().UpdateStatus(ctx, node, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}

	f, err := doctor.Inspect(ctx, admin)
	if err != nil {
		t.Fatal(err)
	}
	if !f.ClusterAdmin || len(f.Missing) > 0 || f.Minor < 30 || f.UID == "" {
		t.Errorf("admin: cluster-admin %v, missing %v, minor %d, uid %q", f.ClusterAdmin, f.Missing, f.Minor, f.UID)
	}
	if f.GatewayCRD == nil || f.GatewayCRD.Annotations["components.gke.io/component-name"] != "gateway-api-crds" {
		t.Errorf("the Gateway API CRD read as %+v", f.GatewayCRD)
	}
	if !slices.Equal(f.Istiods, []string{"istio-system/istiod-1-29"}) || f.LabInstalled || !slices.Equal(f.ForeignNamespaces, []string{"monitoring"}) {
		t.Errorf("istiods %v (lab installed %v), foreign namespaces %v", f.Istiods, f.LabInstalled, f.ForeignNamespaces)
	}
	if len(f.Nodes) != 1 || f.Nodes[0].Arch != "arm64" || f.Nodes[0].CPUMilli != 3920 || !strings.HasPrefix(f.Nodes[0].ProviderID, "gce://") {
		t.Errorf("nodes %+v", f.Nodes)
	}

	// A user who may read the cluster but install nothing: a service account with a role to
	// read namespaces, nodes and Deployments.
	const sa, ns = "reader", "default"
	if _, err := cs.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: sa}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.RbacV1().ClusterRoles().Create(ctx, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: sa},
		Rules: []rbacv1.PolicyRule{{Verbs: []string{"get", "list"}, APIGroups: []string{"", "apps", "apiextensions.k8s.io"},
			Resources: []string{"namespaces", "nodes", "deployments", "customresourcedefinitions"}}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: sa},
		RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: sa},
		Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Name: sa, Namespace: ns}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	tok, err := cs.CoreV1().ServiceAccounts(ns).CreateToken(ctx, sa, &authnv1.TokenRequest{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	rc := rest.AnonymousClientConfig(cp.Rest)
	rc.BearerToken = tok.Status.Token
	reader, err := kube.NewClientFromConfig(rc)
	if err != nil {
		t.Fatal(err)
	}
	defer reader.Close()
	rf, err := doctor.Inspect(ctx, reader)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"create customresourcedefinitions.apiextensions.k8s.io", "create mutatingwebhookconfigurations.admissionregistration.k8s.io", "get nodes/proxy", "create pods/portforward"} {
		if !slices.Contains(rf.Missing, want) {
			t.Errorf("the reader's missing permissions %v lack %q", rf.Missing, want)
		}
	}
	if rf.ClusterAdmin || rf.GatewayCRD == nil || len(rf.Istiods) != 1 {
		t.Errorf("reader: cluster-admin %v, CRD %v, istiods %v", rf.ClusterAdmin, rf.GatewayCRD, rf.Istiods)
	}
}
