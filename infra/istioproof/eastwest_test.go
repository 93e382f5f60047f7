package istioproof

import (
	"fmt"
	"strings"
	"testing"
)

// TestZtunnelChartTakesTheScenarioEnv renders Istio's ztunnel chart with the values the program
// gives it for an east-west scenario (23-zt-4-threads: four threads, the pool at four tunnels a
// connection) and finds them in the ztunnel container's environment under the names ztunnel
// reads (src/config.rs: ZTUNNEL_WORKER_THREADS, POOL_MAX_STREAMS_PER_CONNECTION), with no value
// the chart does not know.
func TestZtunnelChartTakesTheScenarioEnv(t *testing.T) {
	in, _, _ := loadLab(t)
	var zt *Release
	for i, r := range in.EastWest.Releases {
		if r.Chart == "ztunnel" {
			zt = &in.EastWest.Releases[i]
		}
	}
	if zt == nil {
		t.Fatalf("%s: no ztunnel release among %d", in.EastWest.Scenario, len(in.EastWest.Releases))
	}
	c, err := LoadChart(zt.Chart, zt.Version)
	if err != nil {
		t.Fatal(err)
	}
	if unknown := UnknownValues(c, zt.Values); len(unknown) > 0 {
		t.Fatalf("values the ztunnel chart does not know: %v", unknown)
	}
	m, err := Render(c, *zt)
	if err != nil {
		t.Fatal(err)
	}
	objs, err := Objects(m)
	if err != nil {
		t.Fatal(err)
	}
	ds := Find(objs, "DaemonSet", "ztunnel")
	if ds == nil {
		t.Fatal("no ztunnel DaemonSet")
	}
	containers, _ := At(ds, "spec.template.spec.containers")
	list, _ := containers.([]any)
	env := map[string]string{}
	for _, ctr := range list {
		if fmt.Sprint(ctr.(map[string]any)["name"]) != "istio-proxy" {
			continue
		}
		e, _ := ctr.(map[string]any)["env"].([]any)
		for _, kv := range e {
			m := kv.(map[string]any)
			if v, ok := m["value"]; ok {
				env[fmt.Sprint(m["name"])] = fmt.Sprint(v)
			}
		}
	}
	want, _ := zt.Values["env"].(map[string]any)
	if len(want) == 0 {
		t.Fatalf("%s sets no ztunnel env: %v", in.EastWest.Scenario, zt.Values)
	}
	for k, v := range want {
		if env[k] != fmt.Sprint(v) {
			t.Errorf("ztunnel's container: %s=%q, the program set %q", k, env[k], v)
		}
	}
	for _, k := range []string{"ZTUNNEL_WORKER_THREADS", "POOL_MAX_STREAMS_PER_CONNECTION"} {
		if env[k] == "" {
			t.Errorf("ztunnel's container has no %s (env %v)", k, env)
		}
	}
}

// TestWaypointFilterPassesIstioValidation runs Istio's own validation on the waypoint's
// Gateway and the filter that puts an east-west scenario's knobs on it: a filter that names its
// waypoint by targetRefs, in the SIDECAR_INBOUND context Istio patches a waypoint's listeners
// in.
func TestWaypointFilterPassesIstioValidation(t *testing.T) {
	in, _, _ := loadLab(t)
	if len(in.EastWest.WaypointObjects) == 0 {
		t.Fatal("no waypoint objects recorded")
	}
	configs, _ := IstioConfigs(in.EastWest.WaypointObjects)
	if !strings.Contains(configs, "kind: EnvoyFilter") {
		t.Fatalf("the waypoint's filter is not among Istio's configs:\n%s", configs)
	}
	if errs, _ := Validate(configs); len(errs) > 0 {
		t.Fatalf("Istio's validation rejects the waypoint's filter:\n%s", strings.Join(errs, "\n"))
	}
}
