package istioproof

import (
	"fmt"
	"strings"
	"testing"

	"helm.sh/helm/v4/pkg/chart/common"
)

// The k3d lab is the inputs' top-level releases; every other platform is a key of Platforms.
const k3d = "k3d"

// labObjects names the lab's own objects (Services, Gateway, VirtualServices, ...) where a
// Helm release's name would stand: the program creates them with its own resources.
const labObjects = "lab objects"

// exposure is one way an object would publish a port beyond the cluster's own network.
type exposure struct {
	platform, release, kind, namespace, name, what string
}

func (e exposure) String() string {
	return fmt.Sprintf("%s: %s: %s %s/%s: %s", e.platform, e.release, e.kind, e.namespace, e.name, e.what)
}

// exposures lists every way objs would publish a port: a Service of type LoadBalancer or
// NodePort, with externalIPs or with a nodePort; a container with a hostPort; and a container
// port of a pod on the host's network, which Kubernetes gives a hostPort equal to the container
// port when it creates the pod (defaulting since Kubernetes 1.28 applies to pods, not to the
// templates a chart renders, so the rendered Deployment or DaemonSet shows none). Istio's
// istio-cni node agent would be one with the cni chart's ambient.shareHostNetworkNamespace
// (manifests/charts/istio-cni/templates/daemonset.yaml then puts it on the host's network, with
// its metrics port 15014); the lab leaves that off.
func exposures(platform, release string, objs []map[string]any) []exposure {
	var out []exposure
	for _, o := range objs {
		kind, _ := o["kind"].(string)
		ns, name := Meta(o, "namespace"), Meta(o, "name")
		add := func(format string, args ...any) {
			out = append(out, exposure{platform: platform, release: release, kind: kind, namespace: ns, name: name, what: fmt.Sprintf(format, args...)})
		}
		if kind == "Service" {
			switch t, _ := At(o, "spec.type"); t {
			case "LoadBalancer", "NodePort":
				add("type %s", t)
			}
			if ips, _ := At(o, "spec.externalIPs"); ips != nil && compact(ips) != "[]" {
				add("externalIPs %s", compact(ips))
			}
			ports, _ := At(o, "spec.ports")
			list, _ := ports.([]any)
			for _, p := range list {
				if np, ok := At(p, "nodePort"); ok && np != nil {
					add("port %s: nodePort %s", compact(must(At(p, "port"))), compact(np))
				}
			}
			if hc, ok := At(o, "spec.healthCheckNodePort"); ok && hc != nil {
				add("healthCheckNodePort %s", compact(hc))
			}
		}
		for _, pod := range podSpecs(o) {
			hostNet, _ := pod["hostNetwork"].(bool)
			for _, field := range []string{"initContainers", "containers", "ephemeralContainers"} {
				list, _ := pod[field].([]any)
				for _, c := range list {
					cname, _ := At(c, "name")
					ports, _ := At(c, "ports")
					pl, _ := ports.([]any)
					for _, p := range pl {
						cp := compact(must(At(p, "containerPort")))
						if hp, ok := At(p, "hostPort"); ok && hp != nil {
							add("container %v: hostPort %s (container port %s)", cname, compact(hp), cp)
						} else if hostNet {
							add("container %v: port %s on the host's network (hostNetwork: true, so the pod gets hostPort %s)", cname, cp, cp)
						}
					}
				}
			}
		}
	}
	return out
}

func must(v any, _ bool) any { return v }

// podSpecs finds the pod specs in an object, wherever its kind keeps them: a Pod's spec, a
// template's (Deployment, DaemonSet, StatefulSet, ReplicaSet, Job), a CronJob's job template's.
// Any map with a list of containers counts, so a kind added later is not missed.
func podSpecs(v any) []map[string]any {
	m, ok := v.(map[string]any)
	if !ok {
		if l, ok := v.([]any); ok {
			var out []map[string]any
			for _, e := range l {
				out = append(out, podSpecs(e)...)
			}
			return out
		}
		return nil
	}
	var out []map[string]any
	if _, ok := m["containers"].([]any); ok {
		out = append(out, m)
	}
	for k, e := range m {
		if k == "containers" || k == "initContainers" || k == "ephemeralContainers" {
			continue
		}
		out = append(out, podSpecs(e)...)
	}
	return out
}

// platformKubeVersion is the Kubernetes version a platform's charts render against: GKE's and
// EKS's version strings as their clusters report them (Istio's CNI chart finds GKE by its
// "-gke" suffix), the lab's k3s elsewhere.
func platformKubeVersion(platform string) common.KubeVersion {
	switch platform {
	case "gke":
		return MustKubeVersion(GKEKubeVersion)
	case "eks":
		return MustKubeVersion(EKSKubeVersion)
	default:
		return KubeVersion
	}
}

// platformExposures renders every Istio release the program installs on a platform with
// Istio's own charts and lists what they, and the lab's own objects, would publish.
func platformExposures(t *testing.T, in *Inputs, platform string, releases []Release, objects []map[string]any) []exposure {
	t.Helper()
	if len(releases) == 0 {
		t.Errorf("%s: the program installs no Istio release there", platform)
	}
	var out []exposure
	for _, r := range releases {
		c, err := LoadChart(r.Chart, r.Version)
		if err != nil {
			t.Fatalf("%s: %s: %v", platform, r.Name, err)
		}
		m, err := RenderOn(c, r, platformKubeVersion(platform))
		if err != nil {
			t.Fatalf("%s: %v", platform, err)
		}
		objs, err := Objects(m)
		if err != nil {
			t.Fatalf("%s: %s: %v", platform, r.Name, err)
		}
		for _, o := range objs { // a chart may leave the namespace to Helm
			if md, ok := o["metadata"].(map[string]any); ok && md["namespace"] == nil && namespaced[fmt.Sprint(o["kind"])] {
				md["namespace"] = r.Namespace
			}
		}
		out = append(out, exposures(platform, r.Name, objs)...)
	}
	return append(out, exposures(platform, labObjects, objects)...)
}

// namespaced are the kinds exposures looks into, all namespaced.
var namespaced = map[string]bool{"Service": true, "Pod": true, "Deployment": true, "DaemonSet": true,
	"StatefulSet": true, "ReplicaSet": true, "Job": true, "CronJob": true}

// isK3dGateway is the one exposure the lab asks for: the gateway's own Service as a
// LoadBalancer on k3d, whose load balancer k3d publishes on 127.0.0.1 only.
func isK3dGateway(in *Inputs, e exposure) bool {
	gw, err := in.Release("gateway")
	return err == nil && e.platform == k3d && e.release == gw.Name && e.kind == "Service" &&
		e.namespace == gw.Namespace && e.name == gw.Name && e.what == "type LoadBalancer"
}

// TestNothingPublicOffK3d renders, for the k3d lab and every platform the program supports, every
// Istio release it installs there with Istio's own charts and its values, and holds them and the
// lab's own objects to publishing nothing beyond the cluster: no Service of type LoadBalancer or
// NodePort, none with externalIPs or a node port, no container with a host port (a pod on the
// host's network has one per container port). The only exception is the gateway's Service on
// k3d, a LoadBalancer that k3d publishes on 127.0.0.1, and it must be there: exactly one.
func TestNothingPublicOffK3d(t *testing.T) {
	in, _, _ := loadLab(t)
	if len(in.Platforms) == 0 {
		t.Fatalf("%s lists no platforms (go test ./infra -run TestIstioInputs -update)", InputsFile)
	}
	t.Run(k3d, func(t *testing.T) {
		var lbs []exposure
		for _, e := range platformExposures(t, in, k3d, in.Releases, in.Objects) {
			if isK3dGateway(in, e) {
				lbs = append(lbs, e)
				continue
			}
			t.Error(e)
		}
		if len(lbs) != 1 {
			t.Errorf("k3d: %d LoadBalancer Services of the gateway %v, want exactly one: the gateway's (igwlab:gatewayServiceType's default on k3d)", len(lbs), lbs)
		}
		for _, e := range lbs {
			t.Logf("allowed: %s (k3d publishes its load balancer on 127.0.0.1)", e)
		}
	})
	for _, platform := range Names(in.Platforms) {
		t.Run(platform, func(t *testing.T) {
			for _, e := range platformExposures(t, in, platform, in.Platforms[platform], in.Objects) {
				t.Error(e)
			}
		})
	}
}

// TestExposureGuardCatches breaks the program's output the ways that would publish a port and
// checks TestNothingPublicOffK3d's guard names each: the platform, the release, the kind and the
// name.
func TestExposureGuardCatches(t *testing.T) {
	in, _, _ := loadLab(t)
	service := func(edit func(spec map[string]any)) []map[string]any {
		o, err := in.Object("Service", "httpbin")
		if err != nil {
			t.Fatal(err)
		}
		o = Clone(o)
		edit(o["spec"].(map[string]any))
		return []map[string]any{o}
	}
	pod := func(hostNet bool, port map[string]any) []map[string]any {
		return []map[string]any{{"apiVersion": "apps/v1", "kind": "Deployment",
			"metadata": map[string]any{"name": "intruder", "namespace": "igw-test"},
			"spec": map[string]any{"template": map[string]any{"spec": map[string]any{"hostNetwork": hostNet,
				"containers": []any{map[string]any{"name": "c", "ports": []any{port}}}}}}}}
	}
	gatewayAs := func(platform string, service map[string]any) []Release {
		var out []Release
		for _, r := range in.Platforms[platform] {
			if r.Chart == "gateway" {
				r.Values = Clone(r.Values)
				r.Values["service"] = service
			}
			out = append(out, r)
		}
		return out
	}
	cniOnHostNetwork := func(platform string) []Release {
		var out []Release
		for _, r := range in.Platforms[platform] {
			if r.Chart == "cni" {
				r.Values = Clone(r.Values)
				r.Values["ambient"] = map[string]any{"shareHostNetworkNamespace": true}
			}
			out = append(out, r)
		}
		return out
	}
	gke := in.Platforms["gke"]
	cases := []struct {
		what, platform string
		releases       []Release
		objects        []map[string]any
		want           string
	}{
		{"the gateway as a LoadBalancer on GKE", "gke", gatewayAs("gke", map[string]any{"type": "LoadBalancer"}), nil,
			"gke: istio-ingressgateway: Service istio-ingress/istio-ingressgateway: type LoadBalancer"},
		{"the gateway with externalIPs on EKS", "eks", gatewayAs("eks", map[string]any{"type": "ClusterIP", "externalIPs": []any{"203.0.113.7"}}), nil,
			`eks: istio-ingressgateway: Service istio-ingress/istio-ingressgateway: externalIPs ["203.0.113.7"]`},
		{"a backend as a NodePort", "aks", nil, service(func(s map[string]any) {
			s["type"] = "NodePort"
			s["ports"].([]any)[0].(map[string]any)["nodePort"] = 30080.0
		}), "aks: lab objects: Service igw-test/httpbin: type NodePort"},
		{"a backend's nodePort", "generic", nil, service(func(s map[string]any) {
			s["ports"].([]any)[0].(map[string]any)["nodePort"] = 30080.0
		}), "generic: lab objects: Service igw-test/httpbin: port 8080: nodePort 30080"},
		{"istio-cni on the host's network", "generic", cniOnHostNetwork("generic"), nil,
			"generic: istio-cni: DaemonSet istio-system/istio-cni-node: container install-cni: port 15014 on the host's network"},
		{"a hostPort", "gke", gke, pod(false, map[string]any{"containerPort": 8080.0, "hostPort": 80.0}),
			"gke: lab objects: Deployment igw-test/intruder: container c: hostPort 80"},
		{"a port on the host's network", "gke", gke, pod(true, map[string]any{"containerPort": 15014.0}),
			"gke: lab objects: Deployment igw-test/intruder: container c: port 15014 on the host's network"},
	}
	for _, c := range cases {
		t.Run(c.what, func(t *testing.T) {
			if c.releases == nil {
				c.releases = in.Platforms[c.platform]
			}
			var got []string
			for _, e := range platformExposures(t, in, c.platform, c.releases, c.objects) {
				got = append(got, e.String())
			}
			if !strings.Contains(strings.Join(got, "\n"), c.want) {
				t.Errorf("the guard does not catch %s: got %q, want %q", c.what, got, c.want)
			}
		})
	}
	// The k3d gateway's exception is the gateway's Service on k3d, not any LoadBalancer there.
	for _, e := range []exposure{
		{platform: k3d, release: labObjects, kind: "Service", namespace: "igw-test", name: "httpbin", what: "type LoadBalancer"},
		{platform: "gke", release: "istio-ingressgateway", kind: "Service", namespace: "istio-ingress", name: "istio-ingressgateway", what: "type LoadBalancer"},
		{platform: k3d, release: "istio-ingressgateway", kind: "Service", namespace: "istio-ingress", name: "istio-ingressgateway", what: "type NodePort"},
	} {
		if isK3dGateway(in, e) {
			t.Errorf("%s passes as the k3d gateway's LoadBalancer", e)
		}
	}
}
