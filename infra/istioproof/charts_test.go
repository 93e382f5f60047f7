package istioproof

import (
	"fmt"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"helm.sh/helm/v4/pkg/chart/v2/loader"
	"istio.io/istio/pkg/config/mesh"
)

// chartProblems is everything wrong with a release's values: what Helm itself refuses (the
// chart's values schema, a template that fails, such as an unknown profile) and what Helm
// would ignore in silence (a value the chart does not have, or of the wrong type).
func chartProblems(r Release) []string {
	c, err := LoadChart(r.Chart, r.Version)
	if err != nil {
		return []string{err.Error()}
	}
	out := UnknownValues(c, Clone(r.Values))
	if _, err := Render(c, r); err != nil {
		out = append(out, err.Error())
	}
	return out
}

// TestChartsTakeTheProgramsValues renders each Istio release the program installs (base,
// istiod, cni, ztunnel, gateway) from Istio's own charts, at the release the lab pins, with the
// values the program passes.
func TestChartsTakeTheProgramsValues(t *testing.T) {
	in, _, rendered := loadLab(t)
	if in.IstioVersion != Pinned {
		t.Errorf("the program pins Istio %s, but this module builds Istio %s's code and charts: bump istio.io/istio in infra/istioproof/go.mod to the %s tag's commit",
			in.IstioVersion, Pinned, in.IstioVersion)
	}
	want := []string{"base", "istiod", "cni", "ztunnel", "gateway"}
	var got []string
	for _, r := range in.Releases {
		got = append(got, r.Chart)
		if r.Version != Pinned {
			t.Errorf("%s: chart version %s, the charts here are %s's", r.Name, r.Version, Pinned)
		}
		for _, p := range chartProblems(r) {
			t.Errorf("%s (chart %s %s): %s", r.Name, r.Chart, r.Version, p)
		}
		t.Logf("%s: chart %s %s (Istio's sources at the %s tag) renders %d objects", r.Name, r.Chart, r.Version, Pinned, len(rendered[r.Chart]))
	}
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("releases in install order %v, want %v", got, want)
	}
	env, _ := At(Find(rendered["istiod"], "Deployment", "istiod"), "spec.template.spec.containers")
	if list, _ := env.([]any); len(list) == 0 || !strings.Contains(compact(list[0].(map[string]any)["env"]), `{"name":"PILOT_ENABLE_AMBIENT","value":"true"}`) {
		t.Errorf("istiod is not in ambient mode (profile ambient): no PILOT_ENABLE_AMBIENT=true in its environment")
	}
	// The CNI paths come from the platform profile: TestCNIPathsPerPlatform.
	if Find(rendered["ztunnel"], "DaemonSet", "ztunnel") == nil {
		t.Error("no ztunnel DaemonSet")
	}
}

// TestGatewayChartGivesTheLabItsGateway checks the rendered gateway against what the lab needs:
// the replicas, the pod labels every selector of the lab uses, the proxy config (worker count
// and stats matcher) as Istio parses it, the CPU that makes the worker count real, no
// autoscaler, and a Service whose target port is the port every EnvoyFilter matches.
func TestGatewayChartGivesTheLabItsGateway(t *testing.T) {
	in, efs, rendered := loadLab(t)
	r, _ := in.Release("gateway")
	objs := rendered["gateway"]
	d := Find(objs, "Deployment", r.Name)
	if d == nil {
		t.Fatalf("no Deployment %s", r.Name)
	}
	if got, _ := At(d, "spec.replicas"); compact(got) != compact(r.Values["replicaCount"]) {
		t.Errorf("replicas %v, the program asks for %v", got, r.Values["replicaCount"])
	}
	if Find(objs, "HorizontalPodAutoscaler", r.Name) != nil {
		t.Error("the chart renders an autoscaler, which would resize the pool under the lab")
	}
	_, labels := gatewayPodLabels(t)
	selectors := map[string]any{}
	for name, ef := range efs {
		selectors["EnvoyFilter "+name], _ = At(ef, "spec.workloadSelector.labels")
	}
	gw, _ := in.Object("Gateway", "igw-test-gateway")
	selectors["Gateway igw-test-gateway"], _ = At(gw, "spec.selector")
	ra, _ := in.Object("RequestAuthentication", "igwlab-jwt")
	selectors["RequestAuthentication igwlab-jwt"], _ = At(ra, "spec.selector.matchLabels")
	for who, sel := range selectors {
		m, _ := sel.(map[string]any)
		if len(m) == 0 {
			t.Errorf("%s selects no labels", who)
		}
		for k, v := range m {
			if labels[k] != v {
				t.Errorf("%s selects %s=%v, the gateway pods carry %s=%q", who, k, v, k, labels[k])
			}
		}
	}

	ann, _ := At(d, "spec.template.metadata.annotations")
	annotations := ann.(map[string]any)
	wantPC := r.Values["podAnnotations"].(map[string]any)["proxy.istio.io/config"]
	if annotations["proxy.istio.io/config"] != wantPC {
		t.Errorf("pod annotation proxy.istio.io/config %q, want %q", annotations["proxy.istio.io/config"], wantPC)
	}
	// The chart's own annotations must survive the lab's: they make the pod a gateway.
	if annotations["inject.istio.io/templates"] != "gateway" || annotations["sidecar.istio.io/inject"] != "true" {
		t.Errorf("the gateway injection annotations are gone: %v", annotations)
	}
	pc, err := mesh.MergeProxyConfig(fmt.Sprint(annotations["proxy.istio.io/config"]), mesh.DefaultProxyConfig())
	if err != nil {
		t.Fatalf("Istio does not parse the proxy config annotation: %v", err)
	}
	workers := pc.GetConcurrency().GetValue()
	if workers < 1 {
		t.Errorf("proxy config sets no worker count: %v", pc.GetConcurrency())
	}
	incl := pc.GetProxyStatsMatcher().GetInclusionRegexps()
	for _, stat := range []string{"listener.0.0.0.0_80.worker_0.downstream_cx_active", "http.outbound_0.0.0.0_80.downstream_rq_total",
		"cluster.outbound|8080||httpbin.igw-test.svc.cluster.local.upstream_cx_active", "server.concurrency"} {
		if !anyMatch(incl, stat) {
			t.Errorf("proxyStatsMatcher %v keeps no %s", incl, stat)
		}
	}
	ctr, _ := At(d, "spec.template.spec.containers")
	proxy := ctr.([]any)[0].(map[string]any)
	// Compared as Kubernetes quantities: Istio 1.31's gateway chart writes each resource as
	// `{{ $name }}: {{ $value }}` (its gateway.resources helper), so the program's "1" renders
	// as the number 1, the same quantity to the API server.
	for _, kind := range []string{"requests", "limits"} {
		cpu, _ := At(proxy, "resources."+kind+".cpu")
		if q := parsed(t, "CPU "+kind, quantityText(cpu)); q.MilliValue() != int64(workers)*1000 {
			t.Errorf("CPU %s %v for %d workers: each worker needs a CPU", kind, cpu, workers)
		}
		want, _ := At(r.Values, "resources."+kind)
		got, _ := At(proxy, "resources."+kind)
		if !sameQuantities(t, got, want) {
			t.Errorf("resources.%s %s, the program asks for %s", kind, compact(got), compact(want))
		}
	}

	svc := Find(objs, "Service", r.Name)
	if svc == nil {
		t.Fatalf("no Service %s", r.Name)
	}
	servers, _ := At(gw, "spec.servers")
	gwPort, _ := At(servers.([]any)[0], "port.number")
	target := targetPort(svc, gwPort)
	if target == "" {
		t.Fatalf("the gateway Service has no port %v (the Gateway server's)", gwPort)
	}
	for _, name := range Names(efs) {
		spec, _ := efs[name]["spec"].(map[string]any)
		patches, _ := spec["configPatches"].([]any)
		for i, p := range patches {
			port, _ := At(p, "match.listener.portNumber")
			if compact(port) != target {
				t.Errorf("%s configPatches[%d] matches port %v, the gateway Service sends port %v to %s", name, i, port, gwPort, target)
			}
		}
	}
	if compact(gwPort) != fmt.Sprint(GatewayPort) || target != fmt.Sprint(GatewayPort) {
		t.Errorf("Gateway port %v -> target %s: the listener istiod binds is %d", gwPort, target, GatewayPort)
	}
}

// quantityText is a rendered quantity as Kubernetes reads it: a YAML number or a string.
func quantityText(v any) string {
	if f, ok := v.(float64); ok {
		return strconv.FormatFloat(f, 'f', -1, 64)
	}
	return fmt.Sprint(v)
}

// sameQuantities reports whether two resource lists (cpu, memory, ...) name the same resources
// with equal quantities.
func sameQuantities(t *testing.T, got, want any) bool {
	t.Helper()
	g, _ := got.(map[string]any)
	w, _ := want.(map[string]any)
	if len(g) != len(w) || len(w) == 0 {
		return false
	}
	for name, wv := range w {
		gv, ok := g[name]
		if !ok {
			return false
		}
		gq, wq := parsed(t, "rendered "+name, quantityText(gv)), parsed(t, "asked-for "+name, quantityText(wv))
		if gq.Cmp(wq) != 0 {
			return false
		}
	}
	return true
}

func targetPort(svc map[string]any, port any) string {
	ports, _ := At(svc, "spec.ports")
	list, _ := ports.([]any)
	for _, p := range list {
		pm := p.(map[string]any)
		if compact(pm["port"]) == compact(port) {
			return compact(pm["targetPort"])
		}
	}
	return ""
}

func anyMatch(regexps []string, s string) bool {
	for _, r := range regexps {
		if re, err := regexp.Compile("^(?:" + r + ")$"); err == nil && re.MatchString(s) {
			return true
		}
	}
	return false
}

// TestMisspeltOrMistypedValuesFail breaks the program's values and checks the guard catches
// each: the gateway chart's schema refuses unknown and mistyped values, and for the charts
// without a schema the values are held against the chart's own defaults and templates.
func TestMisspeltOrMistypedValuesFail(t *testing.T) {
	in, _, _ := loadLab(t)
	cases := []struct {
		chart, what string
		edit        func(v map[string]any)
		want        string
	}{
		{"gateway", "replicaCount misspelt", func(v map[string]any) { v["replicaCout"] = v["replicaCount"]; delete(v, "replicaCount") },
			"replicaCout"},
		{"gateway", "replicaCount as text", func(v map[string]any) { v["replicaCount"] = "six" }, "replicaCount"},
		{"gateway", "autoscaling.enabled as text", func(v map[string]any) { v["autoscaling"] = map[string]any{"enabled": "no"} }, "enabled"},
		{"istiod", "profile misspelt", func(v map[string]any) { v["profle"] = v["profile"]; delete(v, "profile") }, "profle"},
		{"istiod", "profile unknown", func(v map[string]any) { v["profile"] = "ambiant" }, "unknown profile"},
		{"cni", "cniConfDir misspelt", func(v map[string]any) { v["cniConfdir"] = v["cniConfDir"]; delete(v, "cniConfDir") }, "cniConfdir"},
		{"cni", "cniBinDir as a list", func(v map[string]any) { v["cniBinDir"] = []any{"/opt/cni/bin"} }, "cniBinDir"},
		{"ztunnel", "unknown value", func(v map[string]any) { v["concurency"] = 2.0 }, "concurency"},
	}
	for _, c := range cases {
		t.Run(c.chart+"/"+c.what, func(t *testing.T) {
			r, err := in.Release(c.chart)
			if err != nil {
				t.Fatal(err)
			}
			r.Values = Clone(r.Values)
			if r.Values == nil {
				r.Values = map[string]any{}
			}
			c.edit(r.Values)
			problems := chartProblems(r)
			if len(problems) == 0 {
				t.Fatalf("%s passes the chart check", compact(r.Values))
			}
			if !strings.Contains(strings.Join(problems, "\n"), c.want) {
				t.Errorf("problems do not name %s:\n%s", c.want, strings.Join(problems, "\n"))
			}
			t.Logf("caught: %s", strings.Join(problems, "; "))
		})
	}
}

// TestExtractedChartsAreTheSame checks what istiocharts writes for igwlab:upstreamDir: each
// chart loads from its folder, as Helm would from `helm pull --untar`, with the release's
// version and the same templates and default values as the embedded chart.
func TestExtractedChartsAreTheSame(t *testing.T) {
	dir := t.TempDir()
	if err := ExtractCharts(dir, Pinned); err != nil {
		t.Fatal(err)
	}
	for _, name := range Names(chartSources) {
		want, err := LoadChart(name, Pinned)
		if err != nil {
			t.Fatal(err)
		}
		got, err := loader.Load(filepath.Join(dir, name))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if got.Name() != name || got.Metadata.Version != Pinned || got.Metadata.AppVersion != Pinned {
			t.Errorf("%s: extracted as %s %s (app %s)", name, got.Name(), got.Metadata.Version, got.Metadata.AppVersion)
		}
		if len(got.Templates) != len(want.Templates) || compact(got.Values) != compact(want.Values) || string(got.Schema) != string(want.Schema) {
			t.Errorf("%s: the extracted chart differs from the embedded one", name)
		}
	}
}
