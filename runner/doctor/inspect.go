package doctor

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	authv1 "k8s.io/api/authorization/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/igwlab/igwlab/infra"
	"github.com/igwlab/igwlab/runner/kube"
)

// needed are what the lab's install and the runner do across the cluster: Istio's and
// kube-prometheus-stack's CRDs, webhooks and cluster roles, the lab's namespaces, istio-cni's
// DaemonSet, and the runner's port-forwards, exec and the kubelets' cAdvisor.
var needed = []authv1.ResourceAttributes{
	{Verb: "create", Group: "apiextensions.k8s.io", Resource: "customresourcedefinitions"},
	{Verb: "create", Group: "admissionregistration.k8s.io", Resource: "mutatingwebhookconfigurations"},
	{Verb: "create", Group: "admissionregistration.k8s.io", Resource: "validatingwebhookconfigurations"},
	{Verb: "create", Group: "rbac.authorization.k8s.io", Resource: "clusterroles"},
	{Verb: "create", Group: "rbac.authorization.k8s.io", Resource: "clusterrolebindings"},
	{Verb: "create", Resource: "namespaces"},
	{Verb: "create", Group: "apps", Resource: "daemonsets"},
	{Verb: "create", Resource: "pods", Subresource: "portforward"},
	{Verb: "create", Resource: "pods", Subresource: "exec"},
	{Verb: "get", Resource: "nodes", Subresource: "proxy"},
}

// promOperatorSelectors find prometheus-operator Deployments: kube-prometheus-stack's and a
// plain install's labels.
var promOperatorSelectors = []string{"app.kubernetes.io/name=prometheus-operator", "app.kubernetes.io/name=kube-prometheus-stack-prometheus-operator",
	"app=kube-prometheus-stack-operator"}

// Inspect reads a cluster's facts through its API server. What it may not read it leaves out
// rather than fail, except the cluster itself.
func Inspect(ctx context.Context, k *kube.Client) (ClusterFacts, error) {
	var f ClusterFacts
	var err error
	if f.Server, f.UID, err = k.Identity(ctx); err != nil {
		return f, err
	}
	if v, err := k.CS.Discovery().ServerVersion(); err == nil {
		f.Version = v.GitVersion
		f.Minor, _ = strconv.Atoi(strings.TrimRight(v.Minor, "+"))
	}
	if nodes, err := k.CS.CoreV1().Nodes().List(ctx, metav1.ListOptions{}); err == nil {
		for _, n := range nodes.Items {
			f.Nodes = append(f.Nodes, NodeFacts{Name: n.Name, Arch: n.Labels["kubernetes.io/arch"], ProviderID: n.Spec.ProviderID,
				CPUMilli: n.Status.Allocatable.Cpu().MilliValue(), Schedulable: kube.Schedulable(n)})
		}
	}
	can := func(a authv1.ResourceAttributes) bool {
		rev, err := k.CS.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx,
			&authv1.SelfSubjectAccessReview{Spec: authv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &a}}, metav1.CreateOptions{})
		return err == nil && rev.Status.Allowed
	}
	f.ClusterAdmin = can(authv1.ResourceAttributes{Verb: "*", Group: "*", Resource: "*"})
	if !f.ClusterAdmin {
		for _, a := range needed {
			if !can(a) {
				what := a.Resource
				if a.Subresource != "" {
					what += "/" + a.Subresource
				}
				if a.Group != "" {
					what += "." + a.Group
				}
				f.Missing = append(f.Missing, a.Verb+" "+what)
			}
		}
	}
	if f.GatewayCRD, err = crd(ctx, k, "gateways.gateway.networking.k8s.io"); err != nil {
		return f, err
	}
	if d, err := k.CS.AppsV1().Deployments("").List(ctx, metav1.ListOptions{LabelSelector: "app=istiod"}); err == nil {
		for _, x := range d.Items {
			f.Istiods = append(f.Istiods, x.Namespace+"/"+x.Name)
		}
	}
	for _, ns := range []string{infra.GatewayNamespace, infra.BackendNamespace, infra.LoadgenNamespace, infra.MonitorNamespace} {
		n, err := k.CS.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
		switch {
		case err != nil:
		case n.Labels[infra.LabPartOf] == infra.LabName:
			if ns == infra.GatewayNamespace {
				f.LabInstalled = true
			}
		default:
			f.ForeignNamespaces = append(f.ForeignNamespaces, ns)
		}
	}
	for _, sel := range promOperatorSelectors {
		d, err := k.CS.AppsV1().Deployments("").List(ctx, metav1.ListOptions{LabelSelector: sel})
		if err != nil {
			continue
		}
		for _, x := range d.Items {
			// The lab's own: kube-prometheus-stack's release kube-prom-stack in its namespace.
			ours := x.Namespace == infra.MonitorNamespace && (x.Labels["release"] == "kube-prom-stack" || x.Labels["app.kubernetes.io/instance"] == "kube-prom-stack")
			if id := x.Namespace + "/" + x.Name; !ours && !slices.Contains(f.PromOperators, id) {
				f.PromOperators = append(f.PromOperators, id)
			}
		}
	}
	return f, nil
}

// crd reads a CustomResourceDefinition's labels and annotations (nil when it does not exist)
// through the API server's REST path, as kubectl get crd does.
func crd(ctx context.Context, k *kube.Client, name string) (*ObjectFacts, error) {
	raw, err := k.CS.Discovery().RESTClient().Get().AbsPath("/apis/apiextensions.k8s.io/v1/customresourcedefinitions/" + name).DoRaw(ctx)
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading CRD %s: %w", name, err)
	}
	var obj struct {
		Metadata ObjectFacts `json:"metadata"`
	}
	if err := json.Unmarshal(raw, &obj); err != nil {
		return nil, fmt.Errorf("CRD %s: %w", name, err)
	}
	return &obj.Metadata, nil
}

// imagePlatforms lists an image's platforms ("linux/amd64") as its registry holds them: an
// index's manifests (attestations, unknown/unknown, left out), or a single manifest's config.
func imagePlatforms(ctx context.Context, t Tools, image string) ([]string, error) {
	if _, err := t.LookPath("docker"); err != nil {
		return nil, errors.New("docker not found on PATH")
	}
	out, err := t.Output(ctx, "docker", "buildx", "imagetools", "inspect", image, "--format", "{{json .Manifest}}")
	if err != nil {
		return nil, err
	}
	var index struct {
		Manifests []struct {
			Platform struct{ OS, Architecture, Variant string } `json:"platform"`
		} `json:"manifests"`
	}
	if err := json.Unmarshal([]byte(out), &index); err != nil {
		return nil, fmt.Errorf("docker buildx imagetools inspect: %w", err)
	}
	var ps []string
	for _, m := range index.Manifests {
		if p := m.Platform.OS + "/" + m.Platform.Architecture; m.Platform.OS != "unknown" && !slices.Contains(ps, p) {
			ps = append(ps, p)
		}
	}
	if len(index.Manifests) == 0 {
		cfgOut, err := t.Output(ctx, "docker", "buildx", "imagetools", "inspect", image, "--format", "{{json .Image}}")
		if err != nil {
			return nil, err
		}
		var img struct{ OS, Architecture string }
		if err := json.Unmarshal([]byte(cfgOut), &img); err != nil || img.Architecture == "" {
			return nil, fmt.Errorf("no platform in %q", oneLine(err, cfgOut))
		}
		ps = append(ps, img.OS+"/"+img.Architecture)
	}
	slices.Sort(ps)
	return ps, nil
}
