package istioproof

import (
	"fmt"
	"strings"
	"testing"

	listener "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"

	"istio.io/istio/pilot/pkg/features"
	"istio.io/istio/pilot/pkg/model"
	"istio.io/istio/pilot/pkg/networking/core"
	"istio.io/istio/pilot/test/xdstest"
	"istio.io/istio/pkg/test"
)

// waypointListeners runs Istio's listener generation for a pod of the lab's waypoint (a proxy
// of type waypoint carrying its Gateway's name label, as istiod's deployment controller labels
// it) under the Istio configs given, and checks each with Envoy's own validation rules (the
// protos' ValidateAll: xdstest.ValidateListeners reads socket addresses, and main_internal is an
// internal listener with none).
func waypointListeners(t *testing.T, configs string) []*listener.Listener {
	t.Helper()
	test.SetForTest(t, &features.EnableAmbient, true)
	cg := core.NewConfigGenTest(t, core.TestOptions{ConfigString: configs})
	labels := map[string]string{"gateway.networking.k8s.io/gateway-name": waypointGateway}
	p := cg.SetupProxy(&model.Proxy{Type: model.Waypoint, ConfigNamespace: waypointNamespace, Labels: labels,
		Metadata:    &model.NodeMetadata{Namespace: waypointNamespace, Labels: labels, IstioVersion: Pinned, ClusterID: "Kubernetes"},
		IPAddresses: []string{"10.42.0.9"}})
	ls := cg.Listeners(p)
	for _, l := range ls {
		if err := l.ValidateAll(); err != nil {
			t.Errorf("listener %s fails Envoy's validation: %v", l.Name, err)
		}
	}
	return ls
}

// The lab's waypoint (infra.WaypointName in infra.BackendNamespace).
const (
	waypointGateway   = "igw-test-waypoint"
	waypointNamespace = "igw-test"
)

// TestIstioPushesTheWaypointFilter runs Istio's control plane on the filter the program puts on
// the waypoint for an east-west scenario (22-ew-rotation: max_requests_per_connection on the
// waypoint) and finds its knob in every connection manager of main_internal, the listener whose
// connection manager serves the requests inside the tunnels, and in none of them without it:
// the targetRefs reach the waypoint, the SIDECAR_INBOUND context and the listener's name
// match. (The fake control plane has no service in its ambient index, so main_internal holds
// its direct-http chain; a service's chains carry the same connection manager, which the patch
// matches by its filter name.)
func TestIstioPushesTheWaypointFilter(t *testing.T) {
	in, _, _ := loadLab(t)
	var ef []map[string]any
	for _, o := range in.EastWest.WaypointObjects {
		if o["kind"] == "EnvoyFilter" {
			ef = append(ef, o)
		}
	}
	if len(ef) != 1 {
		t.Fatalf("%s: want one waypoint EnvoyFilter, got %d", in.EastWest.WaypointScenario, len(ef))
	}
	patches, err := Patches(ef[0])
	if err != nil {
		t.Fatal(err)
	}
	configs, _ := IstioConfigs(ef)
	if errs, _ := Validate(configs); len(errs) > 0 {
		t.Fatalf("Istio's validation rejects the waypoint's filter:\n%s", strings.Join(errs, "\n"))
	}
	own, with := waypointListeners(t, ""), waypointListeners(t, configs)
	for _, p := range patches {
		if p.ApplyTo != "NETWORK_FILTER" {
			continue
		}
		leaves := Leaves(p.Value, "")
		for name, ls := range map[string][]*listener.Listener{"without the filter": own, "with it": with} {
			l := FindListener(ls, "main_internal")
			if l == nil {
				t.Fatalf("%s: no main_internal listener (%v)", name, xdstest.ExtractListenerNames(ls))
			}
			hcms := 0
			for _, fc := range l.FilterChains {
				for _, f := range fc.Filters {
					if f.Name != "envoy.filters.network.http_connection_manager" {
						continue
					}
					hcms++
					fj, err := JSON(f)
					if err != nil {
						t.Fatal(err)
					}
					j, _ := fj["typed_config"].(map[string]any)
					for _, leaf := range leaves {
						if leaf == "@type" {
							continue
						}
						want, _ := At(p.Value, leaf)
						got, ok := At(j, leaf)
						has := ok && fmt.Sprint(got) == fmt.Sprint(want)
						if has != (name == "with it") {
							t.Errorf("%s: main_internal chain %s: %s = %v (the filter sets %v)", name, fc.Name, leaf, got, want)
						}
					}
				}
			}
			if hcms == 0 {
				t.Fatalf("%s: main_internal has no connection manager", name)
			}
		}
	}
}
