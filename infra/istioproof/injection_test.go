package istioproof

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"

	"istio.io/istio/pkg/config/mesh"
	"istio.io/istio/pkg/kube/inject"
)

// injectedGateway runs Istio's sidecar injector, with the injection templates, values and mesh
// config the istiod chart renders, on the gateway chart's Deployment, as istiod's webhook does
// when the pods are created; it returns the injected Deployment and the gateway's release.
func injectedGateway(t *testing.T) (*appsv1.Deployment, Release) {
	t.Helper()
	in, _, rendered := loadLab(t)
	cm := func(name string) map[string]any {
		o := Find(rendered["istiod"], "ConfigMap", name)
		if o == nil {
			t.Fatalf("the istiod chart renders no ConfigMap %s", name)
		}
		return o["data"].(map[string]any)
	}
	inj, meshData := cm("istio-sidecar-injector"), cm("istio")
	cfg, err := inject.UnmarshalConfig([]byte(fmt.Sprint(inj["config"])))
	if err != nil {
		t.Fatal(err)
	}
	values, err := inject.NewValuesConfig(fmt.Sprint(inj["values"]))
	if err != nil {
		t.Fatal(err)
	}
	mc, err := mesh.ApplyMeshConfigDefaults(fmt.Sprint(meshData["mesh"]))
	if err != nil {
		t.Fatal(err)
	}
	r, _ := in.Release("gateway")
	b, _ := json.Marshal(Find(rendered["gateway"], "Deployment", r.Name))
	var d appsv1.Deployment
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatal(err)
	}
	out, err := inject.IntoObject(nil, cfg.Templates, values, "", mc, &d, func(w string) { t.Log("injector:", w) })
	if err != nil {
		t.Fatalf("Istio's injector refuses the gateway Deployment: %v", err)
	}
	injected, ok := out.(*appsv1.Deployment)
	if !ok {
		t.Fatalf("injected %T", out)
	}
	return injected, r
}

// TestInjectedGatewayCarriesProxyConfig: the gateway template is chosen and the istio-proxy
// container's PROXY_CONFIG (what istio-agent starts Envoy with) carries the lab's worker count,
// drain time and stats matcher.
func TestInjectedGatewayCarriesProxyConfig(t *testing.T) {
	injected, r := injectedGateway(t)
	var proxyConfig string
	for _, c := range injected.Spec.Template.Spec.Containers {
		for _, e := range c.Env {
			if c.Name == "istio-proxy" && e.Name == "PROXY_CONFIG" {
				proxyConfig = e.Value
			}
		}
	}
	if proxyConfig == "" {
		t.Fatalf("no istio-proxy container with PROXY_CONFIG after injection: %v", injected.Spec.Template.Spec.Containers)
	}
	pc, err := mesh.MergeProxyConfig(fmt.Sprint(r.Values["podAnnotations"].(map[string]any)["proxy.istio.io/config"]), mesh.DefaultProxyConfig())
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		Concurrency       int
		DrainDuration     string
		ProxyStatsMatcher struct{ InclusionRegexps []string }
	}
	if err := json.Unmarshal([]byte(proxyConfig), &got); err != nil {
		t.Fatalf("PROXY_CONFIG %s: %v", proxyConfig, err)
	}
	if got.Concurrency != int(pc.GetConcurrency().GetValue()) {
		t.Errorf("the injected proxy runs %d workers, the lab asks for %d", got.Concurrency, pc.GetConcurrency().GetValue())
	}
	if want := pc.GetDrainDuration().AsDuration(); got.DrainDuration != want.String() {
		t.Errorf("the injected proxy drains replaced listeners for %q, the lab asks for %s", got.DrainDuration, want)
	}
	if strings.Join(got.ProxyStatsMatcher.InclusionRegexps, " ") != strings.Join(pc.GetProxyStatsMatcher().GetInclusionRegexps(), " ") {
		t.Errorf("the injected proxy's stats matcher %v, the lab's %v", got.ProxyStatsMatcher.InclusionRegexps, pc.GetProxyStatsMatcher().GetInclusionRegexps())
	}
	t.Logf("injected gateway proxy: concurrency %d, drainDuration %s, %d stats inclusions", got.Concurrency, got.DrainDuration,
		len(got.ProxyStatsMatcher.InclusionRegexps))
}
