package doctor

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/igwlab/igwlab/infra"
)

// ClusterFacts is what the doctor reads of a cluster of the user's before the lab goes there.
type ClusterFacts struct {
	// Server and UID name the cluster (the kube-system namespace's UID); Version is the API
	// server's ("v1.33.5-gke.1200000") and Minor its Kubernetes minor.
	Server, UID, Version string
	Minor                int
	Nodes                []NodeFacts
	// ClusterAdmin is whether the user may do anything anywhere; Missing lists what the lab's
	// install needs that the user may not do ("create customresourcedefinitions.apiextensions.k8s.io").
	ClusterAdmin bool
	Missing      []string
	// GatewayCRD is the Gateway API's gateways CRD (nil: not installed).
	GatewayCRD *ObjectFacts
	// Istiods are istiod Deployments already running (namespace/name), and LabInstalled whether
	// the lab's own gateway namespace is there (a lab installed before: its istiod is its own).
	Istiods      []string
	LabInstalled bool
	// PromOperators are prometheus-operators other than the lab's (namespace/name).
	PromOperators []string
	// ForeignNamespaces are namespaces the lab creates that exist and are not the lab's.
	ForeignNamespaces []string
}

// NodeFacts is one node: its architecture (kubernetes.io/arch), provider ID and allocatable
// CPU, and whether the scheduler may use it.
type NodeFacts struct {
	Name, Arch, ProviderID string
	CPUMilli               int64
	Schedulable            bool
}

// ObjectFacts are an object's labels and annotations.
type ObjectFacts struct {
	Labels, Annotations map[string]string
}

// providerPlatforms are the platforms a node's providerID names (cloud-provider prefixes).
var providerPlatforms = map[string]string{"gce://": infra.PlatformGKE, "aws://": infra.PlatformEKS, "azure://": infra.PlatformAKS}

// clusterChecks: the cluster reached and named, its Kubernetes against the Istio release, its
// nodes' CPU and architecture against the lab, the platform the nodes show against
// igwlab:platform, the permissions the install needs, and what is there already that the lab
// would fight with: managed Gateway API CRDs, an Istio, a prometheus-operator, namespaces.
func clusterChecks(ctx context.Context, o Options, f ClusterFacts, err error) Report {
	cfg, stack := o.Stack.Config, o.Stack.Name
	set := func(key, value string) string {
		return fmt.Sprintf("pulumi config set igwlab:%s %s -s %s", key, value, stack)
	}
	if err != nil {
		return Report{{"cluster", Fail, "not reachable: " + oneLine(err, ""),
			"check igwlab:kubeconfig and igwlab:kubeContext (or --kubeconfig/--context): kubectl --context <context> get ns kube-system"}}
	}
	r := Report{{"cluster", OK, fmt.Sprintf("%s (kube-system %s), Kubernetes %s", f.Server, f.UID, f.Version), ""}}
	if istio, lerr := infra.LookupIstio(cfg.IstioVersion); lerr == nil && f.Minor > 0 {
		switch ok, why := istio.SupportsK8s(f.Minor); {
		case ok:
			r = append(r, Check{"kubernetes", OK, fmt.Sprintf("1.%d, which Istio %s supports (1.%d-1.%d)", f.Minor, istio.Minor, istio.K8sMin, istio.K8sMax), ""})
		case f.Minor < istio.K8sMin:
			r = append(r, Check{"kubernetes", Fail, why + ": its charts and istiod refuse or misbehave below that", "upgrade the cluster, or pick an older Istio: " + set("istioVersion", "<1.x.y>")})
		default:
			r = append(r, Check{"kubernetes", Warn, why + ": newer than its tested range", "pick a newer Istio where there is one: " + set("istioVersion", "<1.x.y>")})
		}
	}
	var alloc []int64
	var sum int64
	for _, n := range f.Nodes {
		if n.Schedulable {
			alloc, sum = append(alloc, n.CPUMilli), sum+n.CPUMilli
		}
	}
	if len(alloc) == 0 {
		r = append(r, Check{"cpu", Warn, "no schedulable node's allocatable CPU could be read", "kubectl get nodes -o wide"})
	} else {
		r = append(r, cpuCheck(cfg, stack, len(alloc), alloc, fmt.Sprintf("%d schedulable nodes offer %.1f", len(alloc), float64(sum)/1000),
			"add nodes of at least %d CPUs, or ask for less: "+set("gatewayReplicas", "3")))
	}
	r = append(r, platformCheck(cfg, f, set), permissionCheck(f))
	if p := cfg.EffectivePlatform(); p == infra.PlatformGKE || p == infra.PlatformEKS {
		fix := "GKE private clusters: gcloud compute firewall-rules update <the master-to-node rule> --allow tcp:10250,tcp:443,tcp:15017 (keep the ports it already allows)"
		if p == infra.PlatformEKS {
			fix = "EKS node groups with their own security group: allow TCP 15017 from the cluster security group to the nodes"
		}
		r = append(r, Check{"webhook", Warn, "the API server must reach istiod's webhook on the nodes' port 15017, which " + strings.ToUpper(p) +
			" blocks by default on private clusters and some node groups: injection then fails and the gateway's install times out after 600 s (not visible from the API)", fix})
	}
	r = append(r, gatewayCRDCheck(cfg, f, set), istioCheck(f))
	if cfg.Monitoring {
		if len(f.PromOperators) > 0 {
			r = append(r, Check{"monitoring", Fail, "a prometheus-operator already runs (" + strings.Join(f.PromOperators, ", ") + "): the lab's kube-prometheus-stack would install its CRDs over that operator's and the two would fight over them",
				set("monitoring", "false") + " (the suite reads the gateways through the API server; only the dashboard needs the lab's Prometheus)"})
		} else {
			r = append(r, Check{"monitoring", OK, "no other prometheus-operator: the lab installs kube-prometheus-stack, its Prometheus selecting only the lab's PodMonitors", ""})
		}
	}
	if len(f.ForeignNamespaces) > 0 {
		r = append(r, Check{"namespaces", Fail, "namespaces the lab creates exist and are not the lab's: " + strings.Join(f.ForeignNamespaces, ", ") + " (pulumi up would fail to create them, and must not take them over)",
			"use a cluster where they are free"})
	}
	if img := cfg.Images.H2dialPushed; img != "" {
		r = append(r, imageArchCheck(ctx, o, img, f.Nodes))
	}
	return r
}

// platformCheck: the nodes' provider (their providerID) against igwlab:platform, which picks
// istio-cni's CNI paths: a wrong one leaves istio-cni waiting for a config that never appears.
func platformCheck(cfg infra.Config, f ClusterFacts, set func(key, value string) string) Check {
	seen := map[string]bool{}
	for _, n := range f.Nodes {
		for prefix, p := range providerPlatforms {
			if strings.HasPrefix(n.ProviderID, prefix) {
				seen[p] = true
			}
		}
	}
	p := cfg.EffectivePlatform()
	for _, want := range []string{infra.PlatformGKE, infra.PlatformEKS, infra.PlatformAKS} {
		if seen[want] && p != want {
			return Check{"platform", Fail, fmt.Sprintf("the nodes are %s's (their providerID) and igwlab:platform is %s: istio-cni would look for the CNI's files where %[1]s does not keep them, and ztunnel and the gateway would never install",
				strings.ToUpper(want), p), set("platform", want)}
		}
	}
	return Check{"platform", OK, p + " (istio-cni's CNI paths from Istio's profile)", ""}
}

// permissionCheck: what the install does across the cluster (CRDs, webhooks, cluster roles,
// namespaces, istio-cni's DaemonSet) and what the runner does (port-forwards, exec, the
// kubelets' cAdvisor through the node proxy).
func permissionCheck(f ClusterFacts) Check {
	switch {
	case f.ClusterAdmin:
		return Check{"permissions", OK, "cluster-admin", ""}
	case len(f.Missing) == 0:
		return Check{"permissions", OK, "every permission the install and the runner use (not cluster-admin)", ""}
	}
	return Check{"permissions", Fail, "the lab installs cluster-wide and you may not: " + strings.Join(f.Missing, ", "),
		"use a context with cluster-admin (kubectl auth can-i '*' '*' --all-namespaces)"}
}

// managedBy names the add-on that manages a Gateway API CRD ("" for none): GKE marks its
// CRDs as an add-on component, AKS as managed by aks, and addon managers with their mode label.
func managedBy(o *ObjectFacts) string {
	switch {
	case o.Annotations["components.gke.io/component-name"] != "":
		return "GKE (components.gke.io/component-name " + o.Annotations["components.gke.io/component-name"] + ")"
	case o.Labels["app.kubernetes.io/managed-by"] == "aks" || o.Annotations["app.kubernetes.io/managed-by"] == "aks":
		return "AKS (app.kubernetes.io/managed-by aks)"
	case o.Labels["addonmanager.kubernetes.io/mode"] != "":
		return "the cluster's addon manager (addonmanager.kubernetes.io/mode " + o.Labels["addonmanager.kubernetes.io/mode"] + ")"
	}
	return ""
}

func gatewayCRDCheck(cfg infra.Config, f ClusterFacts, set func(key, value string) string) Check {
	want := cfg.GatewayAPIVersion
	if want == "" {
		if r, err := infra.LookupIstio(cfg.IstioVersion); err == nil {
			want = r.GatewayAPI
		}
	}
	if f.GatewayCRD == nil {
		if !cfg.InstallGatewayAPICRDs {
			return Check{"gateway api", Fail, "igwlab:installGatewayApiCrds is false and the cluster has no Gateway API CRDs: istiod's waypoint and Gateway would have no kinds", set("installGatewayApiCrds", "true")}
		}
		return Check{"gateway api", OK, "no CRDs yet: the lab applies " + want, ""}
	}
	have := f.GatewayCRD.Annotations["gateway.networking.k8s.io/bundle-version"]
	if by := managedBy(f.GatewayCRD); by != "" {
		if cfg.InstallGatewayAPICRDs {
			return Check{"gateway api", Fail, fmt.Sprintf("the cluster's Gateway API CRDs (%s) are managed by %s: the lab's %s would be reverted or conflict", orDefault(have, "version unknown"), by, want),
				set("installGatewayApiCrds", "false") + " (the lab then uses the cluster's)"}
		}
		return Check{"gateway api", OK, fmt.Sprintf("the cluster's own (%s, managed by %s), kept", orDefault(have, "version unknown"), by), ""}
	}
	if cfg.InstallGatewayAPICRDs && have != "" && have != want {
		return Check{"gateway api", Warn, fmt.Sprintf("the cluster has Gateway API %s, which the lab's install replaces with %s", have, want),
			set("installGatewayApiCrds", "false") + " keeps yours"}
	}
	return Check{"gateway api", OK, "Gateway API " + orDefault(have, "CRDs") + " present", ""}
}

func istioCheck(f ClusterFacts) Check {
	switch {
	case len(f.Istiods) == 0:
		return Check{"istio", OK, "none yet: the lab installs its own", ""}
	case f.LabInstalled:
		return Check{"istio", OK, "the lab's own (" + strings.Join(f.Istiods, ", ") + ")", ""}
	}
	return Check{"istio", Fail, "Istio already runs (" + strings.Join(f.Istiods, ", ") + "): the lab installs its own (CRDs, webhooks, istio-cni chained into every node's CNI config), and the two would fight over them",
		"use a cluster without Istio (a test cluster, or the k3d lab)"}
}

// imageArchCheck: the pushed image is built for every architecture the nodes run (an arm64
// image on amd64 nodes crashes with "exec format error"), read from the registry.
func imageArchCheck(ctx context.Context, o Options, image string, nodes []NodeFacts) Check {
	var archs []string
	for _, n := range nodes {
		if n.Arch != "" && !slices.Contains(archs, n.Arch) {
			archs = append(archs, n.Arch)
		}
	}
	slices.Sort(archs)
	fix := fmt.Sprintf("make image IMAGE=%s PLATFORMS=%s", image, platformList(archs))
	have, err := imagePlatforms(ctx, o.Tools, image)
	if err != nil {
		return Check{"image", Warn, "could not read " + image + "'s platforms (" + oneLine(err, "") + "); the nodes run " + strings.Join(archs, ", "), "build it for them: " + fix}
	}
	var missing []string
	for _, a := range archs {
		if !slices.Contains(have, "linux/"+a) {
			missing = append(missing, a)
		}
	}
	if len(missing) > 0 {
		return Check{"image", Fail, fmt.Sprintf("%s is built for %s and the nodes run %s: its pods would crash with exec format error", image, strings.Join(have, ", "), strings.Join(missing, ", ")), fix}
	}
	return Check{"image", OK, fmt.Sprintf("%s has %s", image, strings.Join(have, ", ")), ""}
}

func platformList(archs []string) string {
	var out []string
	for _, a := range archs {
		out = append(out, "linux/"+a)
	}
	return strings.Join(out, ",")
}
