package istioproof

import (
	"encoding/json"
	"testing"
)

// TestChartRequestsAreTheCharts: what the program takes Istio's pods to request (and so what
// igwlab doctor holds a Docker VM or a cluster to) is what Istio's charts render at the lab's
// values: istiod's Deployment, the ztunnel and istio-cni DaemonSets, and the proxy resources
// istiod gives the waypoint it deploys (the injector's global.proxy.resources).
func TestChartRequestsAreTheCharts(t *testing.T) {
	in, _, rendered := loadLab(t)
	requests := func(obj map[string]any, what string) Request {
		t.Helper()
		if obj == nil {
			t.Fatalf("%s is not rendered", what)
		}
		containers, _ := At(obj, "spec.template.spec.containers")
		list, _ := containers.([]any)
		if len(list) == 0 {
			t.Fatalf("%s has no containers", what)
		}
		return requestOf(t, what, list[0])
	}
	got := map[string]Request{
		"istiod":    requests(Find(rendered["istiod"], "Deployment", "istiod"), "Deployment istiod"),
		"ztunnel":   requests(Find(rendered["ztunnel"], "DaemonSet", "ztunnel"), "DaemonSet ztunnel"),
		"istio-cni": requests(Find(rendered["cni"], "DaemonSet", "istio-cni-node"), "DaemonSet istio-cni-node"),
	}
	cm := Find(rendered["istiod"], "ConfigMap", "istio-sidecar-injector")
	raw, _ := At(cm, "data.values")
	var values map[string]any
	if s, _ := raw.(string); json.Unmarshal([]byte(s), &values) != nil {
		t.Fatalf("the injector ConfigMap's values are not JSON: %v", raw)
	}
	proxy, _ := At(values, "global.proxy")
	got["waypoint"] = requestOf(t, "the injector's global.proxy", proxy)
	for name, want := range in.ChartRequests {
		if got[name] != want {
			t.Errorf("%s: the charts request %+v, the program counts %+v (infra/requests.go)", name, got[name], want)
		}
	}
	if len(in.ChartRequests) != len(got) {
		t.Errorf("the program counts %v, the charts render %v", in.ChartRequests, got)
	}
}

func requestOf(t *testing.T, what string, v any) Request {
	t.Helper()
	cpu, ok1 := At(v, "resources.requests.cpu")
	mem, ok2 := At(v, "resources.requests.memory")
	if !ok1 || !ok2 {
		t.Fatalf("%s has no resources.requests", what)
	}
	q := parsed(t, what, cpu)
	return Request{CPUMilli: q.MilliValue(), MemBytes: quantity(t, what, mem)}
}
