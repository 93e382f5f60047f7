package istioproof

import (
	"fmt"
	"strings"
	"testing"

	listener "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	discovery "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"google.golang.org/protobuf/proto"
	"istio.io/istio/pilot/pkg/model"
	"istio.io/istio/pilot/pkg/simulation"
	v3 "istio.io/istio/pilot/pkg/xds/v3"
	"istio.io/istio/pilot/test/xds"
	"istio.io/istio/pilot/test/xdstest"
)

// pushed runs istiod's discovery server in-process on the lab's routing objects plus extra
// objects (a scenario's EnvoyFilter), connects as a gateway pod with the chart's labels, and
// returns the listeners istiod pushes over ADS, after checking them with Envoy's validation.
func pushed(t *testing.T, extra ...map[string]any) ([]*listener.Listener, *xds.FakeDiscoveryServer) {
	t.Helper()
	in, _, _ := loadLab(t)
	var objs []map[string]any
	for _, o := range in.Objects {
		if o["kind"] != "RequestAuthentication" { // scenario 11's, passed in extra
			objs = append(objs, o)
		}
	}
	configs, kube := IstioConfigs(append(objs, extra...))
	if errs, _ := Validate(configs); len(errs) > 0 {
		t.Fatalf("Istio's validation rejects the lab's config:\n%s", strings.Join(errs, "\n"))
	}
	s := xds.NewFakeDiscoveryServer(t, xds.FakeOptions{ConfigString: configs, KubernetesObjectString: kube})
	ns, labels := gatewayPodLabels(t)
	id, meta := GatewayNode(ns, labels)
	resp := s.ConnectADS().WithType(v3.ListenerType).WithID(id).WithMetadata(meta).
		RequestResponseAck(t, &discovery.DiscoveryRequest{})
	var ls []*listener.Listener
	for _, r := range resp.GetResources() {
		l := &listener.Listener{}
		if err := r.UnmarshalTo(l); err != nil {
			t.Fatal(err)
		}
		ls = append(ls, l)
	}
	xdstest.ValidateListeners(t, ls)
	if FindListener(ls, GatewayListener) == nil {
		t.Fatalf("istiod pushes no %s to the gateway (listeners %v)", GatewayListener, xdstest.ExtractListenerNames(ls))
	}
	return ls, s
}

// view is the gateway listener as Envoy JSON: the listener's own fields and its HCM's.
type view struct {
	listener, hcm map[string]any
}

func viewOf(t *testing.T, ls []*listener.Listener) view {
	t.Helper()
	l := FindListener(ls, GatewayListener)
	h, err := HCM(l)
	if err != nil {
		t.Fatal(err)
	}
	var v view
	if v.listener, err = ListenerJSON(l); err != nil {
		t.Fatal(err)
	}
	if v.hcm, err = JSON(h); err != nil {
		t.Fatal(err)
	}
	return v
}

func (v view) of(p Patch) (map[string]any, string) {
	if p.ApplyTo == "LISTENER" {
		return v.listener, "listener"
	}
	return v.hcm, "hcm"
}

// istiosOwn is the gateway listener istiod pushes with no EnvoyFilter at all.
func istiosOwn(t *testing.T) ([]*listener.Listener, view) {
	t.Helper()
	ls, _ := pushed(t)
	return ls, viewOf(t, ls)
}

// checkApplied asserts that every field an EnvoyFilter's patches set is in the listener istiod
// pushes, with the patch's value, and that the filter changed the listener: a patch that
// matches nothing leaves Istio's own listener, and fails here.
func checkApplied(t *testing.T, ef map[string]any, ls []*listener.Listener, own []*listener.Listener, ownView view) {
	t.Helper()
	patches, err := Patches(ef)
	if err != nil {
		t.Fatal(err)
	}
	got := viewOf(t, ls)
	for _, p := range patches {
		where, name := got.of(p)
		for _, m := range Missing(p.Value, where, "") {
			t.Errorf("%s%s (the patch did not reach the listener istiod pushes)", name, m)
		}
		base, _ := ownView.of(p)
		for _, leaf := range Leaves(p.Value, "") {
			if strings.HasPrefix(leaf, "access_log") {
				continue
			}
			want, _ := At(p.Value, leaf)
			if was, ok := At(base, leaf); ok && fmt.Sprint(was) == fmt.Sprint(want) {
				t.Logf("note: %s.%s = %v is what Istio pushes anyway", name, leaf, compact(want))
			}
		}
	}
	if len(patches) > 0 && proto.Equal(FindListener(ls, GatewayListener), FindListener(own, GatewayListener)) {
		t.Errorf("the EnvoyFilter left the gateway listener as Istio renders it without one")
	}
}

// TestIstioPushesEveryScenario runs, for every scenario of the catalog, Istio's control plane on
// the lab's Gateway, VirtualServices, backend Services and that scenario's EnvoyFilter (and
// scenario 11's RequestAuthentication), for a gateway pod with the labels the gateway chart
// gives it, and checks the listener istiod pushes: every knob the filter sets is there with its
// value, the routes still lead to the backends, and Envoy's validation accepts it.
func TestIstioPushesEveryScenario(t *testing.T) {
	in, efs, _ := loadLab(t)
	own, ownView := istiosOwn(t)
	// The runner reads the gateway's HCM stats by this prefix (Envoy's admin output spells it
	// http.outbound_0.0.0.0_80;.*, Prometheus' http_conn_manager_prefix="outbound_0.0.0.0_80").
	if sp := fmt.Sprint(ownView.hcm["stat_prefix"]); sp != "outbound_0.0.0.0_80;" {
		t.Errorf("the gateway HCM's stat_prefix is %q", sp)
	}
	for _, name := range Names(efs) {
		t.Run(name, func(t *testing.T) {
			ef := efs[name]
			extra := []map[string]any{ef}
			ra, err := in.Object("RequestAuthentication", "igwlab-jwt")
			if err != nil {
				t.Fatal(err)
			}
			if labels, _ := At(ra, "metadata.labels"); labels.(map[string]any)["igwlab.dev/scenario"] == name {
				extra = append(extra, ra)
			}
			ls, s := pushed(t, extra...)
			checkApplied(t, ef, ls, own, ownView)
			checkRoutes(t, s)
			if len(extra) > 1 {
				checkJWT(t, ls, ra)
			}
		})
	}
	t.Run("every knob (igwlab:knobs)", func(t *testing.T) {
		if len(in.KnobOverrides) == 0 {
			t.Fatal("no knob overrides")
		}
		ls, _ := pushed(t, in.EveryKnobEnvoyFilter)
		checkApplied(t, in.EveryKnobEnvoyFilter, ls, own, ownView)
		got := viewOf(t, ls)
		for path, text := range in.KnobOverrides {
			section, field, _ := strings.Cut(path, ".")
			where := got.hcm
			if section == "listener" {
				where = got.listener
			}
			v, ok := At(where, field)
			if !ok {
				t.Errorf("knob %s=%s: absent from the pushed %s", path, text, section)
				continue
			}
			if text != "{}" && compact(v) != text && compact(v) != `"`+text+`"` {
				t.Errorf("knob %s=%s: pushed %s", path, text, compact(v))
			}
		}
	})
}

// checkRoutes sends requests through the pushed config with Istio's traffic simulation: any
// host reaches httpbin, grpcbin's host reaches grpcbin, both on the gateway's port 80 listener.
func checkRoutes(t *testing.T, s *xds.FakeDiscoveryServer) {
	t.Helper()
	ns, labels := gatewayPodLabels(t)
	proxy := &model.Proxy{Type: model.Router, ConfigNamespace: ns, Labels: labels,
		Metadata: &model.NodeMetadata{Namespace: ns, Labels: labels, IstioVersion: Pinned}}
	sim := simulation.NewSimulation(t, s, s.SetupProxy(proxy))
	sim.RunExpectations([]simulation.Expect{
		{Name: "any host to httpbin", Call: simulation.Call{Port: GatewayPort, Protocol: simulation.HTTP, HostHeader: "lab.example"},
			Result: simulation.Result{ListenerMatched: GatewayListener, RouteConfigMatched: "http.80",
				ClusterMatched: "outbound|8080||httpbin.igw-test.svc.cluster.local"}},
		{Name: "grpcbin host to grpcbin", Call: simulation.Call{Port: GatewayPort, Protocol: simulation.HTTP2, HostHeader: "grpcbin.igw-test"},
			Result: simulation.Result{ListenerMatched: GatewayListener, RouteConfigMatched: "http.80",
				ClusterMatched: "outbound|9000||grpcbin.igw-test.svc.cluster.local"}},
	})
}

// checkJWT asserts scenario 11's RequestAuthentication became Envoy's JWT filter on the
// gateway's HCM, ahead of the router, trusting the lab's issuer.
func checkJWT(t *testing.T, ls []*listener.Listener, ra map[string]any) {
	t.Helper()
	v := viewOf(t, ls)
	filters, _ := v.hcm["http_filters"].([]any)
	var names []string
	jwt := -1
	for i, f := range filters {
		n, _ := f.(map[string]any)["name"].(string)
		names = append(names, n)
		if n == "envoy.filters.http.jwt_authn" {
			jwt = i
		}
	}
	if jwt < 0 || names[len(names)-1] != "envoy.filters.http.router" {
		t.Fatalf("http filters %v: want envoy.filters.http.jwt_authn before the router", names)
	}
	rules, _ := At(ra, "spec.jwtRules")
	issuer := rules.([]any)[0].(map[string]any)["issuer"]
	if !strings.Contains(compact(filters[jwt]), fmt.Sprintf(`"issuer":%q`, issuer)) {
		t.Errorf("the JWT filter does not trust issuer %v: %s", issuer, compact(filters[jwt]))
	}
}

// TestFilterThatMatchesNothingFails breaks the program's filters the ways that match nothing
// (the lab's classic silent failure) and checks that istiod then pushes Istio's own listener,
// with none of the knobs: the guard above would fail on each.
func TestFilterThatMatchesNothingFails(t *testing.T) {
	in, efs, _ := loadLab(t)
	own, ownView := istiosOwn(t)
	breaks := []struct {
		name  string
		apply func(ef map[string]any)
	}{
		{"port 8080 (the old istioctl gateway's targetPort)", func(ef map[string]any) { eachMatch(ef, "listener", "portNumber", 8080) }},
		{"selector istio: ingress (a gateway released as istio-ingress)", func(ef map[string]any) {
			ef["spec"].(map[string]any)["workloadSelector"] = map[string]any{"labels": map[string]any{"istio": "ingress"}}
		}},
		{"context SIDECAR_INBOUND", func(ef map[string]any) { eachMatch(ef, "", "context", "SIDECAR_INBOUND") }},
		{"namespace default (neither the gateway's nor the root namespace)", func(ef map[string]any) {
			ef["metadata"].(map[string]any)["namespace"] = "default"
		}},
	}
	for _, src := range []string{"02-trigger", "13-conn-balance", "every knob"} {
		ef := in.EveryKnobEnvoyFilter
		if src != "every knob" {
			ef = efs[src]
		}
		patches, _ := Patches(ef)
		for _, b := range breaks {
			t.Run(src+"/"+b.name, func(t *testing.T) {
				broken := Clone(ef)
				b.apply(broken)
				ls, _ := pushed(t, broken)
				if !proto.Equal(FindListener(ls, GatewayListener), FindListener(own, GatewayListener)) {
					t.Errorf("the broken filter still changed the gateway listener")
				}
				got := viewOf(t, ls)
				for _, p := range patches {
					where, _ := got.of(p)
					base, _ := ownView.of(p)
					if len(Missing(p.Value, where, "")) == 0 && len(Missing(p.Value, base, "")) > 0 {
						t.Errorf("%s patch applied although it matches nothing", p.ApplyTo)
					}
				}
			})
		}
	}
}

// eachMatch sets a field of every patch's match (under sub, when given).
func eachMatch(ef map[string]any, sub, field string, v any) {
	for _, p := range ef["spec"].(map[string]any)["configPatches"].([]any) {
		m := p.(map[string]any)["match"].(map[string]any)
		if sub != "" {
			m = m[sub].(map[string]any)
		}
		m[field] = v
	}
}
