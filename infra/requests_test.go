package infra

import (
	"reflect"
	"testing"
)

// Requests says what the program asks for: each Deployment's replicas and container requests,
// and the gateway release's values, as the program renders them.
func TestRequestsAreWhatTheProgramAsksFor(t *testing.T) {
	cfg := Defaults
	cfg.GatewayReplicas, cfg.ProxyConcurrency = 4, 2
	m := run(t, func(c *Config) { c.GatewayReplicas, c.ProxyConcurrency = cfg.GatewayReplicas, cfg.ProxyConcurrency })
	groups := map[string]PodGroup{}
	for _, g := range cfg.Requests(K3dNodes) {
		groups[g.What] = g
	}
	for _, name := range []string{"httpbin", "grpcbin", "fortio", "h2dial"} {
		d := m.find("kubernetes:apps/v1:Deployment", name)
		if d == nil {
			t.Fatalf("no Deployment %s", name)
		}
		in := d.Inputs.Mappable()
		spec := in["spec"].(map[string]any)
		ctr := spec["template"].(map[string]any)["spec"].(map[string]any)["containers"].([]any)[0].(map[string]any)
		req := ctr["resources"].(map[string]any)["requests"].(map[string]any)
		got := PodGroup{What: name, Pods: int(spec["replicas"].(float64)),
			Request: Request{mustMilli(req["cpu"].(string)), mustBytes(req["memory"].(string))}}
		if !reflect.DeepEqual(got, groups[name]) {
			t.Errorf("the program asks for %+v, Requests says %+v", got, groups[name])
		}
	}
	rel := m.find("kubernetes:helm.sh/v3:Release", GatewayRelease)
	if rel == nil {
		t.Fatal("no gateway release")
	}
	values := rel.Inputs.Mappable()["values"].(map[string]any)
	req := values["resources"].(map[string]any)["requests"].(map[string]any)
	got := PodGroup{What: "gateway", Pods: int(values["replicaCount"].(float64)),
		Request: Request{mustMilli(req["cpu"].(string)), mustBytes(req["memory"].(string))}}
	if !reflect.DeepEqual(got, groups["gateway"]) {
		t.Errorf("the gateway release asks for %+v, Requests says %+v", got, groups["gateway"])
	}
}

// The lab at its defaults on k3d's three nodes: a Docker VM with 3 CPUs leaves pods Pending
// (each node reports the VM's 3, the gateway pods take 1 each), 4 fit.
func TestLabFitsFourCPUsNotThree(t *testing.T) {
	groups := Defaults.Requests(K3dNodes)
	if tot := Total(groups); tot.CPUMilli < 9000 {
		t.Fatalf("the lab requests %d mCPU; the defaults ask for about 9 CPUs", tot.CPUMilli)
	}
	if p := Unschedulable(groups, Nodes(K3dNodes, 3000)); len(p) == 0 {
		t.Error("3 CPUs per node: everything scheduled, want pods Pending")
	}
	if p := Unschedulable(groups, Nodes(K3dNodes, 4000)); len(p) != 0 {
		t.Errorf("4 CPUs per node: %v Pending", p)
	}
	if p := Unschedulable(groups, Nodes(K3dNodes, 2000)); len(p) < 3 {
		t.Errorf("2 CPUs per node: only %v Pending", p)
	}
}
